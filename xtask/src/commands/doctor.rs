//! `cargo xtask doctor`: what this machine can do, with versions reported by the libraries.
//!
//! On a board (Linux aarch64) QNN comes from the user's QAIRT SDK: doctor lists every piece of
//! it as present or MISSING with where it looked. It exits 1 when a backend that is needed is
//! not usable: by default every backend the recipes use (ort, cpu, htp); `--need ort` asks
//! only for the ORT CPU backend (a board without the SDK yet).

use std::path::Path;

use anyhow::Result;
use xtask_base::vocab::{PINNED_ORT_VERSION, PINNED_QNN_VERSION};

use super::{Ctx, Outcome};
use xtask_runtime::runtime::bootstrap::{Platform, ensure_runtime, runtime_dir};
use xtask_runtime::runtime::device::{Finding, QnnSearch, looked_text, what_to_set};
use xtask_runtime::runtime::probe::{HtpKind, probe_backend};
use xtask_runtime::runtime::{Backend, HtpTarget, Runtime};

#[derive(clap::Args)]
pub struct Doctor {
    /// Unpack the embedded runtime again from its sha256-checked wheels (after damage).
    #[arg(long)]
    repair_runtime: bool,
    /// The backends that must be usable for exit 0 (default: all that recipes use).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "ort,cpu,htp")]
    need: Vec<super::BackendKind>,
    /// Check a board over ssh instead (`ssh://user@host[:port][/workdir]`): its arch, QAIRT
    /// SDK version, HTP libraries and free disk (see README "Validate on a board").
    #[arg(long, value_name = "ssh://user@host[:port][/workdir]", value_parser = xtask_chain::device::url::parse_device_arg)]
    device: Option<String>,
    /// With --device: the QAIRT version to expect (default: the tiny model's `[target] qairt`).
    #[arg(long, requires = "device", default_value = "tiny", value_parser = xtask_recipe::recipe::names::parse_model_name)]
    model: String,
    /// Also make (on first use) and check the quantizer's Python environment,
    /// `target/quant-venv`, that `[quantize]` recipes need (about a minute, once).
    #[arg(long)]
    quantizer: bool,
    #[command(flatten)]
    pub json: super::JsonFlag,
}

impl Doctor {
    /// Doctor as a list of steps: the runtime (repaired and re-hashed when asked), the
    /// libraries it loaded, each backend probed, the versions against the recipes, then the
    /// verdict (exit 1 when a needed backend is unusable or a recipe wants another QAIRT).
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        if let Some(url) = &self.device {
            let model = xtask_recipe::recipe::load_model(&ctx.root, &self.model)?;
            let soc = xtask_recipe::htp_target::target_soc(&model, None)?;
            return xtask_chain::device::doctor::report(url, &model.file.target.qairt, soc);
        }
        let platform = Platform::host();
        let rt = self.load_runtime(&ctx.root)?;
        print_libraries(&ctx.root, platform, &rt);
        let probed = probe_backends(&rt);
        let qnn_build = probed.qnn_build.clone();
        print_versions(&rt, platform, qnn_build.as_deref());
        if self.quantizer {
            let env = xtask_runtime::quantize::env::ensure(&ctx.root)?;
            xtask_base::outln!(
                "quantizer:   {} checked against its pins: {}",
                xtask_base::project::rel(&ctx.root, &env.dir),
                env.packages
                    .iter()
                    .map(|(n, v)| format!("{n} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let qairt = qairt_vs_recipes(&ctx.root, qnn_build.as_deref(), sdk_version().as_deref());
        for line in &qairt {
            xtask_base::outln!("{line}");
        }
        if rt.qnn_unavailable().is_some() {
            xtask_base::outln!("to use QNN:   {}", what_to_set(&xtask_base::soc::board()));
        }
        check_pins(
            &rt.ort_version,
            qnn_build.as_deref(),
            rt.qnn_unavailable().is_none(),
        );
        let needed: Vec<&'static str> = self
            .need
            .iter()
            .map(|b| b.label())
            .filter(|b| probed.unusable.contains(b))
            .collect();
        let mismatched = qairt.iter().any(|l| l.ends_with("MISMATCH"));
        xtask_base::ui::json::offer(&DoctorReport {
            backends: probed.backends,
            needed_but_unusable: needed.clone(),
            platform: platform.name(),
            qairt_vs_recipes: qairt,
            qnn_build,
            versions: xtask_runtime::report::ToolVersions::of(&rt),
        });
        Ok(conclude(&needed, mismatched))
    }

    /// The embedded runtime: unpacked again from its wheels with `--repair-runtime`, fetched
    /// when missing, its files re-hashed, loaded.
    fn load_runtime(&self, root: &Path) -> Result<Runtime> {
        if self.repair_runtime {
            xtask_runtime::runtime::bootstrap::repair_runtime(root)?;
            xtask_base::outln!("runtime unpacked again from the verified wheels");
        }
        let libs = ensure_runtime(root)?;
        if let Some(n) = xtask_runtime::runtime::bootstrap::rehash_runtime(root)? {
            xtask_base::outln!("runtime files {n} unpacked files match their recorded sha256");
        }
        Runtime::load(libs)
    }
}

/// What `--json` reports: the fields of the lines above (serialised through `ui::json`, whose
/// document orders the keys).
#[derive(serde::Serialize)]
struct DoctorReport {
    backends: Vec<BackendState>,
    needed_but_unusable: Vec<&'static str>,
    platform: &'static str,
    qairt_vs_recipes: Vec<String>,
    qnn_build: Option<String>,
    versions: xtask_runtime::report::ToolVersions,
}

/// One backend as probed: usable or not, and what the probe said.
#[derive(serde::Serialize)]
struct BackendState {
    backend: &'static str,
    usable: bool,
    detail: String,
}

/// What probing the backends found: each backend's state, which are unusable, and the QNN
/// build version the first QNN probe logged.
struct Probed {
    backends: Vec<BackendState>,
    unusable: Vec<&'static str>,
    qnn_build: Option<String>,
}

/// The platform, ONNX Runtime, the QNN plugin and (on a board) every piece of the QNN stack,
/// whether QNN loaded and registered its device: where each library came from.
fn print_libraries(root: &Path, platform: Platform, rt: &Runtime) {
    let rel = |p: &Path| xtask_base::project::rel(root, p);
    xtask_base::outln!(
        "platform      {} (runtime folder {})",
        platform.name(),
        rel(&runtime_dir(root, platform))
    );
    xtask_base::outln!(
        "ONNX Runtime  {} ({})",
        rt.ort_version,
        rel(&rt.libs.ort_dylib)
    );
    match (platform.qnn_wheel(), rt.libs.qnn_plugin()) {
        (Some(wheel), Some(plugin)) => xtask_base::outln!(
            "QNN plugin    {} ({}, source: {})",
            wheel.requirement,
            rel(plugin),
            rt.libs.source
        ),
        (_, Some(plugin)) => {
            xtask_base::outln!("QNN plugin    {} (source: {})", rel(plugin), rt.libs.source)
        }
        (_, None) => xtask_base::outln!("QNN plugin    MISSING"),
    }
    if platform.qnn_wheel().is_none() {
        let search = QnnSearch::from_env(Some(&rt.libs.ort_dylib));
        print_inventory(&search.inventory(platform));
    }
    match rt.qnn_unavailable() {
        // on a board the list above already says what is missing and where it looked
        Some(_) if platform.qnn_wheel().is_none() && rt.libs.qnn_plugin().is_none() => {
            xtask_base::outln!("QNN           MISSING (see the list above)")
        }
        Some(why) => xtask_base::outln!("QNN           MISSING: {why}"),
        None => {}
    }
    xtask_base::outln!(
        "QNN device    {}",
        if rt.has_qnn_device() {
            "registered"
        } else {
            "MISSING"
        }
    );
}

/// Each backend run on the one-node probe model (QNN ones only when QNN loaded), a line each.
fn probe_backends(rt: &Runtime) -> Probed {
    let htp = Backend::QnnHtp(HtpTarget::probe());
    let mut probed = Probed {
        backends: Vec::new(),
        unusable: Vec::new(),
        qnn_build: None,
    };
    xtask_base::outln!("backends:");
    for backend in [Backend::OrtCpu, Backend::QnnCpu, htp] {
        let name = match &backend {
            Backend::OrtCpu => "ORT CPU EP".to_string(),
            Backend::QnnCpu => "QNN CPU (libQnnCpu.so)".to_string(),
            Backend::QnnHtp(_) => {
                format!("QNN HTP (libQnnHtp.so, soc 77 / v73) {}", htp_kind())
            }
        };
        if backend != Backend::OrtCpu && rt.qnn_unavailable().is_some() {
            xtask_base::outln!("  {name:<52} MISSING: QNN is not available (see above)");
            probed.backends.push(BackendState {
                backend: backend.label(),
                usable: false,
                detail: "QNN is not available".into(),
            });
            probed.unusable.push(backend.label());
            continue;
        }
        let probe = probe_backend(rt, &backend);
        if !probe.usable {
            probed.unusable.push(backend.label());
        }
        probed.qnn_build = probed.qnn_build.or(probe.qnn_build.clone());
        let state = if probe.usable { "usable" } else { "NOT usable" };
        xtask_base::outln!("  {name:<52} {state}: {}", probe.detail);
        probed.backends.push(BackendState {
            backend: backend.label(),
            usable: probe.usable,
            detail: probe.detail,
        });
    }
    probed
}

/// The QNN build, what the HTP's latency figures would be, and the QAIRT SDK.
fn print_versions(rt: &Runtime, platform: Platform, qnn_build: Option<&str>) {
    xtask_base::outln!("QNN build     {}", qnn_build.unwrap_or("(not reported)"));
    let htp_label = HtpKind::of(rt).latency_label();
    match rt.qnn_unavailable() {
        None => xtask_base::outln!("HTP latency   {htp_label}"),
        Some(_) => {
            xtask_base::outln!("HTP latency   none here (QNN missing); with QNN: {htp_label}")
        }
    }
    xtask_base::outln!("QAIRT SDK     {}", sdk_status(platform));
}

/// The closing line and the exit code: a needed backend that is unusable, or a recipe that
/// wants another QAIRT, fails the doctor.
fn conclude(needed: &[&str], mismatched: bool) -> Outcome {
    if mismatched {
        xtask_base::outln!(
            "doctor: a recipe's [target] qairt is not the QNN version here (MISMATCH above): its binaries would be built and judged with another QAIRT"
        );
    }
    if needed.is_empty() {
        return if mismatched {
            Outcome::GateFailed
        } else {
            Outcome::Success
        };
    }
    xtask_base::outln!(
        "doctor: backend(s) {} needed but not usable (see above); `--need ort` checks the ORT CPU backend alone",
        needed.join(", ")
    );
    Outcome::GateFailed
}

pub fn htp_kind() -> &'static str {
    if xtask_runtime::runtime::probe::htp_is_emulated() {
        "emulated on x86_64"
    } else {
        "on device"
    }
}

/// One line per piece of the on-device QNN stack: present (where) or MISSING (where looked).
fn print_inventory(findings: &[Finding]) {
    xtask_base::outln!("QNN on this board (no wheel carries it for linux aarch64):");
    for line in inventory_lines(findings) {
        xtask_base::outln!("  {line}");
    }
}

pub fn inventory_lines(findings: &[Finding]) -> Vec<String> {
    findings
        .iter()
        .map(|f| match &f.found {
            Some(p) => format!("present  {:<32} {}", f.what, p.display()),
            None => format!(
                "MISSING  {:<32} looked in: {}",
                f.what,
                looked_text(&f.looked)
            ),
        })
        .collect()
}

/// The QNN version here against each recipe's `[target] qairt`.
pub fn qairt_vs_recipes(root: &Path, qnn_build: Option<&str>, sdk: Option<&str>) -> Vec<String> {
    let here = qnn_build
        .map(|b| (b.trim_start_matches('v').to_string(), "QNN build"))
        .or_else(|| sdk.map(|s| (s.to_string(), "QAIRT SDK")));
    xtask_recipe::recipe::known_models(root)
        .into_iter()
        .filter_map(|m| {
            let path = root.join("recipes").join(&m).join("model.toml");
            let text = std::fs::read_to_string(path).ok()?;
            let value: toml::Value = toml::from_str(&text).ok()?;
            let want = value.get("target")?.get("qairt")?.as_str()?.to_string();
            Some(match &here {
                Some((v, what)) if v == &want || v.starts_with(&format!("{want}.")) => {
                    format!("qairt         {m}: wants {want}, {what} {v} matches")
                }
                Some((v, what)) => {
                    format!("qairt         {m}: wants {want}, {what} is {v}: MISMATCH")
                }
                None => format!("qairt         {m}: wants {want}, no QNN here to compare: MISSING"),
            })
        })
        .collect()
}

fn sdk_version() -> Option<String> {
    xtask_ctx_build::toolchain::sdk::Sdk::detect()
        .ok()
        .map(|s| s.version)
}

fn sdk_status(platform: Platform) -> String {
    if std::env::var_os("QAIRT_SDK_ROOT").is_none() && std::env::var_os("QNN_SDK_ROOT").is_none() {
        return if platform.qnn_wheel().is_some() {
            "not installed (QAIRT_SDK_ROOT / QNN_SDK_ROOT unset); the embedded toolchain is used"
                .into()
        } else {
            "not set (QNN_SDK_ROOT / QAIRT_SDK_ROOT unset)".into()
        };
    }
    match xtask_ctx_build::toolchain::sdk::Sdk::detect() {
        Ok(sdk) if platform.qnn_wheel().is_none() => {
            format!("{} at {}", sdk.version, sdk.root.display())
        }
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
                match sdk.check_converter() {
                    Ok(()) => "all tools found; qairt-converter --help runs in the SDK environment set from QAIRT_SDK_ROOT".to_string(),
                    Err(e) => format!("all tools found, but {e:#}"),
                }
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

fn check_pins(ort: &str, qnn: Option<&str>, qnn_loaded: bool) {
    if ort != PINNED_ORT_VERSION {
        xtask_base::outln!("note: ONNX Runtime {ort} differs from the pinned {PINNED_ORT_VERSION}");
    }
    if qnn_loaded && !qnn.is_some_and(|q| q.trim_start_matches('v').starts_with(PINNED_QNN_VERSION))
    {
        xtask_base::outln!("note: QNN build {qnn:?} differs from the pinned {PINNED_QNN_VERSION}");
    }
}

#[cfg(test)]
#[path = "doctor_tests.rs"]
mod tests;
