//! `cargo xtask doctor`: what this machine can do, with versions reported by the libraries.

use anyhow::Result;

use super::{Ctx, Outcome};
use crate::runtime::bootstrap::{
    PINNED_ORT_VERSION, PINNED_QNN_VERSION, QNN_WHEEL, ensure_runtime,
};
use crate::runtime::probe::probe_backend;
use crate::runtime::{Backend, HtpTarget, Runtime};

#[derive(clap::Args)]
pub struct Doctor {
    /// Unpack the embedded runtime again from its sha256-checked wheels (after damage).
    #[arg(long)]
    repair_runtime: bool,
    /// Check a board over ssh instead (`ssh://user@host[:port][/workdir]`): its arch, QAIRT
    /// SDK version, HTP libraries and free disk (see README "Validate on a board").
    #[arg(long, value_name = "ssh://user@host[:port][/workdir]")]
    device: Option<String>,
    /// With --device: the QAIRT version to expect (default: the tiny model's `[target] qairt`).
    #[arg(long, requires = "device", default_value = "tiny")]
    model: String,
}

impl Doctor {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        if let Some(url) = &self.device {
            let qairt = crate::recipe::load_model(&ctx.root, &self.model)?
                .file
                .target
                .qairt;
            return crate::device::doctor::report(url, &qairt);
        }
        if self.repair_runtime {
            crate::runtime::bootstrap::repair_runtime(&ctx.root)?;
            crate::outln!("runtime unpacked again from the verified wheels");
        }
        let libs = ensure_runtime(&ctx.root)?;
        if let Some(n) = crate::runtime::bootstrap::rehash_runtime(&ctx.root)? {
            crate::outln!("runtime files {n} unpacked files match their recorded sha256");
        }
        let rt = Runtime::load(libs)?;
        crate::outln!(
            "ONNX Runtime  {} ({})",
            rt.ort_version,
            crate::project::rel(&ctx.root, &rt.libs.ort_dylib)
        );
        crate::outln!(
            "QNN plugin    {} ({}, source: {})",
            QNN_WHEEL.requirement,
            crate::project::rel(&ctx.root, &rt.libs.qnn_plugin()),
            rt.libs.source
        );
        crate::outln!(
            "QNN device    {}",
            if rt.has_qnn_device() {
                "registered"
            } else {
                "MISSING"
            }
        );
        let htp = Backend::QnnHtp(HtpTarget::probe());
        let mut qnn_build = None;
        crate::outln!("backends:");
        for backend in [Backend::OrtCpu, Backend::QnnCpu, htp] {
            let probe = probe_backend(&rt, &backend);
            qnn_build = qnn_build.or(probe.qnn_build.clone());
            let name = match &backend {
                Backend::OrtCpu => "ORT CPU EP".to_string(),
                Backend::QnnCpu => "QNN CPU (libQnnCpu.so)".to_string(),
                Backend::QnnHtp(_) => {
                    format!("QNN HTP (libQnnHtp.so, soc 77 / v73) {}", htp_kind())
                }
            };
            let state = if probe.usable { "usable" } else { "NOT usable" };
            crate::outln!("  {name:<52} {state}: {}", probe.detail);
        }
        crate::outln!(
            "QNN build     {}",
            qnn_build.as_deref().unwrap_or("(not reported)")
        );
        crate::outln!("QAIRT SDK     {}", sdk_status());
        check_pins(&rt.ort_version, qnn_build.as_deref());
        Ok(Outcome::Success)
    }
}

pub fn htp_kind() -> &'static str {
    if crate::runtime::probe::htp_is_emulated() {
        "emulated on x86_64"
    } else {
        "on device"
    }
}

fn sdk_status() -> String {
    if std::env::var_os("QAIRT_SDK_ROOT").is_none() && std::env::var_os("QNN_SDK_ROOT").is_none() {
        return "not installed (QAIRT_SDK_ROOT / QNN_SDK_ROOT unset); the embedded toolchain is used".into();
    }
    match crate::toolchain::sdk::Sdk::detect() {
        Ok(sdk) => {
            let tools = [
                "qairt-converter",
                "qnn-net-run",
                "qnn-context-binary-generator",
                "qnn-context-binary-utility",
                "qnn-profile-viewer",
            ];
            let missing: Vec<&str> = tools
                .iter()
                .copied()
                .filter(|t| sdk.tool(t).is_err())
                .collect();
            let tools_state = if missing.is_empty() {
                "all tools found".to_string()
            } else {
                format!("missing: {}", missing.join(", "))
            };
            format!(
                "{} at {} ({tools_state}; `--toolchain sdk`)",
                sdk.version,
                sdk.root.display()
            )
        }
        Err(e) => format!("set but unusable: {e:#}"),
    }
}

fn check_pins(ort: &str, qnn: Option<&str>) {
    if ort != PINNED_ORT_VERSION {
        crate::outln!("note: ONNX Runtime {ort} differs from the pinned {PINNED_ORT_VERSION}");
    }
    if !qnn.is_some_and(|q| q.trim_start_matches('v').starts_with(PINNED_QNN_VERSION)) {
        crate::outln!("note: QNN build {qnn:?} differs from the pinned {PINNED_QNN_VERSION}");
    }
}
