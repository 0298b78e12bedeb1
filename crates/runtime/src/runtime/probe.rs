//! A one-node probe model (Relu, [1,8]) run on each backend: proves a backend is usable here
//! and makes QNN report its build version.

use std::collections::BTreeMap;

use anyhow::{Result, bail};

use super::{Backend, Runtime};
use xtask_onnx::tensor::Tensor;

const PROBE_ONNX: &[u8] = include_bytes!("probe_relu.onnx");

#[derive(Debug, Clone, serde::Serialize)]
pub struct ProbeResult {
    pub backend: xtask_base::vocab::BackendKind,
    pub usable: bool,
    pub detail: String,
    /// The QNN build version the backend logged (`v2.47.0.…`), for QNN backends.
    pub qnn_build: Option<String>,
}

impl Runtime {
    /// The QNN build version seen in any QNN session's log so far, probing a QNN CPU session
    /// when none was opened yet. It lives with the probe (not with `Runtime` in `session`) so
    /// that sessions never depend on the probe that opens them.
    pub fn qnn_build_version(&self) -> Option<String> {
        self.logged_qnn_build()
            .or_else(|| probe_backend(self, &Backend::QnnCpu).qnn_build)
    }
}

pub fn probe_backend(rt: &Runtime, backend: &Backend) -> ProbeResult {
    match run_probe(rt, backend) {
        Ok((detail, qnn_build)) => ProbeResult {
            backend: backend.kind(),
            usable: true,
            detail,
            qnn_build,
        },
        Err(e) => ProbeResult {
            backend: backend.kind(),
            usable: false,
            detail: format!("{e:#}"),
            qnn_build: None,
        },
    }
}

fn run_probe(rt: &Runtime, backend: &Backend) -> Result<(String, Option<String>)> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("probe.onnx");
    std::fs::write(&path, PROBE_ONNX)?;
    let mut session = rt.open(&path, backend)?;
    let x: Vec<f32> = (0..8).map(|i| i as f32 - 4.0).collect();
    let input = ndarray::ArrayD::from_shape_vec(vec![1, 8], x.clone())?;
    let out = session.run(&BTreeMap::from([("x".to_string(), Tensor::F32(input))]))?;
    let Some(Tensor::F32(y)) = out.get("y") else {
        bail!("probe produced no f32 output `y`")
    };
    let expected: Vec<f32> = x.iter().map(|v| v.max(0.0)).collect();
    let max_err = y
        .iter()
        .zip(&expected)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    if max_err > 1e-2 {
        bail!("probe Relu is wrong on this backend (max abs err {max_err})");
    }
    let qnn_build = super::version::qnn_build_version_from_log(&session.log);
    let placed: Vec<String> = session
        .placement
        .nodes_per_ep
        .iter()
        .map(|(ep, n)| format!("{n} node(s) on {ep}"))
        .collect();
    Ok((placed.join(", "), qnn_build))
}

/// On x86_64 the HTP library is Qualcomm's emulator; on aarch64 it drives the real NPU.
pub fn htp_is_emulated() -> bool {
    super::platform::Platform::host().htp_is_emulated()
}

/// What the HTP of a run was, for the labels of its latency figures: an emulator's figures are
/// never called device figures, nor the reverse, and a guess says it is one.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HtpKind {
    pub emulated: bool,
    /// `detected (…)` or `inferred from the host architecture`.
    pub basis: String,
    /// The SoC, when the backend or the board names it.
    pub soc: Option<String>,
}

pub const INFERRED: &str = "inferred from the host architecture";

impl HtpKind {
    /// Decides from the host platform, whether the QNN EP reports an NPU device, and the SoC
    /// name the board gives (`/sys/devices/soc0`).
    pub fn classify(
        platform: super::platform::Platform,
        npu_reported: Option<String>,
        soc: Option<String>,
    ) -> HtpKind {
        if platform.htp_is_emulated() {
            return HtpKind {
                emulated: true,
                basis: format!(
                    "{INFERRED} ({}: libQnnHtp.so is the emulator)",
                    platform.name()
                ),
                soc: None,
            };
        }
        HtpKind {
            emulated: false,
            basis: match npu_reported {
                Some(vendor) => format!("detected: the QNN EP reports an NPU ({vendor})"),
                None => INFERRED.to_string(),
            },
            soc,
        }
    }

    /// The HTP of this run: the loaded runtime's QNN devices and the board's SoC files.
    pub fn of(rt: &Runtime) -> HtpKind {
        HtpKind::classify(super::platform::Platform::host(), qnn_npu(rt), board_soc())
    }

    /// The label of the latency figures: `emulator figures …` or `device figures …`.
    pub fn latency_label(&self) -> String {
        if self.emulated {
            return format!(
                "emulator figures, not device latency (HTP emulated; {})",
                self.basis
            );
        }
        let soc = self
            .soc
            .as_deref()
            .map_or("SoC not reported".to_string(), |s| format!("SoC {s}"));
        format!("device figures (HTP on the NPU, {soc}; {})", self.basis)
    }
}

/// The vendor of a QNN EP device whose hardware type is NPU (a real HTP), if any: on x86_64
/// the QNN devices report CPU.
fn qnn_npu(rt: &Runtime) -> Option<String> {
    rt.env
        .devices()
        .filter(|d| d.ep().is_ok_and(|ep| ep == super::backend::QNN_EP))
        .map(|d| d.hardware_device())
        .find(|h| h.ty() == ort::memory::DeviceType::NPU)
        .map(|h| h.vendor().unwrap_or("vendor not reported").to_string())
}

/// The SoC as the board's kernel names it (Qualcomm boards: `/sys/devices/soc0/machine`).
fn board_soc() -> Option<String> {
    let read = |f: &str| {
        std::fs::read_to_string(format!("/sys/devices/soc0/{f}"))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let machine = read("machine")?;
    Some(match read("soc_id") {
        Some(id) => format!("{machine} (soc_id {id}, /sys/devices/soc0)"),
        None => format!("{machine} (/sys/devices/soc0)"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::platform::Platform;

    #[test]
    fn emulator_figures_are_never_device_figures_and_the_reverse() {
        let emu = HtpKind::classify(Platform::LinuxX86_64, None, Some("QCS9075".into()));
        assert!(emu.emulated);
        let l = emu.latency_label();
        assert!(l.starts_with("emulator figures, not device latency"), "{l}");
        assert!(!l.contains("device figures"), "{l}");
        assert!(l.contains(INFERRED), "{l}");

        let dev = HtpKind::classify(
            Platform::LinuxAarch64,
            Some("Qualcomm".into()),
            Some("QCS9075 (soc_id 677, /sys/devices/soc0)".into()),
        );
        let l = dev.latency_label();
        assert!(!dev.emulated);
        assert!(l.starts_with("device figures"), "{l}");
        assert!(l.contains("SoC QCS9075"), "{l}");
        assert!(l.contains("detected") && !l.contains(INFERRED), "{l}");
        assert!(!l.contains("emulat"), "{l}");

        let guessed = HtpKind::classify(Platform::LinuxAarch64, None, None);
        let l = guessed.latency_label();
        assert!(l.starts_with("device figures"), "{l}");
        assert!(
            l.contains("SoC not reported") && l.contains(INFERRED),
            "{l}"
        );
    }
}
