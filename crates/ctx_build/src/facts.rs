//! What a build step actually did, typed: the facts its record carries and the only source of
//! what the card, `bundle.json`, `verify` and the dry run say about a build. Nothing here is
//! ever filled from the current recipe: a record written by another schema, or missing a
//! field, is refused (rebuild), because the recipe may have changed since the step ran.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use xtask_base::vocab::ToolchainKind;
use xtask_parity::parity::component::ComponentResult;
use xtask_parity::rewritten::RewriteCheck;
use xtask_recipe::htp_target::HtpTarget;

/// The schema of `ctx/<model>/<component>.record.json`; a record of any other version is
/// refused as a whole (its steps are dirty; `package` and the card ask for a rebuild).
/// v2: typed facts per step (v1 held a hand-written JSON copy of recipe fields).
pub const RECORD_SCHEMA: u32 = 2;

/// Which tools ran a step: the kind, and for the SDK its version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolchainUsed {
    pub kind: ToolchainKind,
    /// The QAIRT SDK's version (None for the embedded runtime).
    pub sdk_version: Option<String>,
}

impl ToolchainUsed {
    pub fn embedded() -> Self {
        ToolchainUsed {
            kind: ToolchainKind::Embedded,
            sdk_version: None,
        }
    }

    pub fn sdk(version: &str) -> Self {
        ToolchainUsed {
            kind: ToolchainKind::Sdk,
            sdk_version: Some(version.to_string()),
        }
    }

    /// `embedded` or `qairt-sdk <version>`: how key parts and reports spell it.
    pub fn label(&self) -> String {
        match (self.kind, &self.sdk_version) {
            (ToolchainKind::Sdk, Some(v)) => format!("qairt-sdk {v}"),
            (ToolchainKind::Sdk, None) => "qairt-sdk".into(),
            (ToolchainKind::Embedded, _) => ToolchainKind::Embedded.label().into(),
        }
    }
}

/// The tool versions a step ran with (all of them enter its key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolVersions {
    pub onnxruntime: String,
    pub qnn: String,
    pub toolchain: ToolchainUsed,
    /// This tool's own version (`xtask` crate): how a step is run is part of what it made.
    pub xtask: String,
    /// The sha256 over the runtime libraries the steps load (ONNX Runtime, the QNN EP plugin,
    /// the `libQnn*.so` backends), by content: a rebuilt plugin of the same version is another
    /// toolchain. Empty in records made before it was recorded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub libraries: String,
}

/// A file and its sha256 (paths project-relative).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileHash {
    pub path: String,
    pub sha256: String,
}

/// ONNX → DLC. The DLC is a candidate until the CPU-parity step promotes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConvertFacts {
    pub versions: ToolVersions,
    /// The ONNX QNN converted: the recipe's, or its rewritten copy.
    pub qnn_onnx: FileHash,
    /// The recipe's ONNX and external data (key part → sha256).
    pub inputs: BTreeMap<String, String>,
    pub float_bitwidth: u8,
    pub preserve_io_datatype: bool,
    /// How far the DLC was checked (`Toolchain::dlc_validation`).
    pub dlc_validation: String,
    pub rewrites: Option<RewriteCheck>,
    /// The DLC this step made, not yet proven (`<component>.candidate.dlc`).
    pub candidate_dlc: FileHash,
    /// A quantized component's precision (its DLC holds the QDQ graph's quantized tensors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<xtask_base::vocab::Precision>,
}

/// The CPU backend against the golden, and the DLC it measured, promoted to current on a pass.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuParityFacts {
    pub versions: ToolVersions,
    pub golden: FileHash,
    /// The DLC these figures belong to: the component's current DLC (`<component>.dlc`).
    pub current_dlc: FileHash,
    /// The figures, per output (cosine, errors, verdict).
    pub result: ComponentResult,
}

/// The HTP context binary: what was compiled, for which device, with which options.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextFacts {
    pub versions: ToolVersions,
    pub soc_id: u32,
    pub htp_arch: u32,
    /// The target as rendered once for this build (its graph options: O-level, fp16, VTCM).
    pub target: HtpTarget,
    /// What the toolchain rendered for this step (EP options, config files, command lines).
    pub rendered: BTreeMap<String, String>,
    /// The ONNX (embedded) or DLC (SDK) the binary was compiled from.
    pub compiled_from: FileHash,
    pub graph_name: String,
    /// Whether the binary's graph carries the recipe's name, and if not why.
    pub graph_name_note: Option<String>,
    /// The QNN build the binary names (`ep_sdk_version` of its wrapper).
    pub ep_sdk_version: Option<String>,
    pub binary: FileHash,
    pub wrapper: FileHash,
}

/// Where a quantized component's calibration samples came from, and their content hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibrationFacts {
    /// `golden`, `trace` or the folder.
    pub source: String,
    /// One line per sample used, in order.
    pub origins: Vec<String>,
    /// sha256 over every sample's tensors (`quantize::calibration::hash_samples`).
    pub sha256: String,
}

/// Float ONNX -> QDQ ONNX with calibrated ranges, and the AIMET encodings of its tensors.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuantizeFacts {
    pub versions: ToolVersions,
    pub precision: xtask_base::vocab::Precision,
    pub per_channel: bool,
    pub method: xtask_recipe::recipe::quantize::CalibrationMethod,
    /// Operator types and node names kept in float.
    pub exclude: Vec<String>,
    /// The float ONNX that was quantized: the recipe's, or its rewritten copy.
    pub float_onnx: FileHash,
    pub rewrites: Option<RewriteCheck>,
    pub calibration: CalibrationFacts,
    /// The Python packages and versions the quantizer ran with (`target/quant-venv`).
    pub environment: BTreeMap<String, String>,
    /// sha256 of `crates/runtime/scripts/quantize/quantize.py`.
    pub script_sha256: String,
    /// Q/DQ nodes in the QDQ graph and the encodings written.
    pub quantize_nodes: usize,
    pub dequantize_nodes: usize,
    pub qdq: FileHash,
    pub encodings: FileHash,
}

/// The facts of one step, tagged by its kind.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum StepFacts {
    Quantize(Box<QuantizeFacts>),
    Convert(ConvertFacts),
    CpuParity(CpuParityFacts),
    Context(Box<ContextFacts>),
}

impl StepFacts {
    pub fn versions(&self) -> &ToolVersions {
        match self {
            StepFacts::Quantize(f) => &f.versions,
            StepFacts::Convert(f) => &f.versions,
            StepFacts::CpuParity(f) => &f.versions,
            StepFacts::Context(f) => &f.versions,
        }
    }

    /// A one-line summary for reports and the dry run (what was compiled, the figures).
    pub fn summary(&self) -> String {
        match self {
            StepFacts::Quantize(f) => format!(
                "{} ({}, {}) from {} calibration sample(s), set {}",
                f.precision,
                if f.per_channel {
                    "per-channel"
                } else {
                    "per-tensor"
                },
                f.method.label(),
                f.calibration.origins.len(),
                &f.calibration.sha256[..12.min(f.calibration.sha256.len())]
            ),
            StepFacts::Convert(f) => match f.precision {
                Some(p) => format!(
                    "{p} DLC from {} ({})",
                    f.qnn_onnx.path,
                    f.versions.toolchain.label()
                ),
                None => format!(
                    "float{} DLC from {} ({})",
                    f.float_bitwidth,
                    f.qnn_onnx.path,
                    f.versions.toolchain.label()
                ),
            },
            StepFacts::CpuParity(f) => {
                let figures = f
                    .result
                    .outputs
                    .iter()
                    .map(|o| format!("{} cosine {}", o.name, o.metrics.shown_cosine()))
                    .collect::<Vec<_>>()
                    .join(", ");
                match (&f.result.stage, f.result.precision) {
                    (Some(stage), Some(p)) => {
                        format!("{stage}, {p} vs the float golden: {figures}")
                    }
                    (Some(stage), None) => format!("{stage}: {figures}"),
                    _ => figures,
                }
            }
            StepFacts::Context(f) => {
                let g = f.target.graph.as_ref();
                format!(
                    "soc {} v{}, O{}, {}, VTCM {}, {}",
                    f.soc_id,
                    f.htp_arch,
                    g.map_or(0, |g| g.optimization_level),
                    if g.is_some_and(|g| g.fp16) {
                        "fp16"
                    } else {
                        "fp32"
                    },
                    g.map_or("default".into(), |g| match g.vtcm_mb {
                        0 => "default".to_string(),
                        mb => format!("{mb} MB"),
                    }),
                    f.versions.toolchain.label()
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toolchain_labels_are_those_the_keys_used() {
        assert_eq!(ToolchainUsed::embedded().label(), "embedded");
        assert_eq!(ToolchainUsed::sdk("2.47.0").label(), "qairt-sdk 2.47.0");
        let json = serde_json::to_value(ToolchainUsed::sdk("2.47.0")).unwrap();
        assert_eq!(json["kind"], "sdk");
    }

    #[test]
    fn facts_missing_a_field_are_refused_not_filled() {
        let json = serde_json::json!({
            "step": "convert",
            "versions": {"onnxruntime": "1", "qnn": "2",
                         "toolchain": {"kind": "embedded", "sdk_version": null}, "xtask": "0"},
            "qnn_onnx": {"path": "a.onnx", "sha256": "00"},
            "inputs": {},
            "preserve_io_datatype": true,
            "dlc_validation": "x",
            "rewrites": null,
            "candidate_dlc": {"path": "a.dlc", "sha256": "11"}
        });
        let err = serde_json::from_value::<StepFacts>(json).unwrap_err();
        assert!(err.to_string().contains("float_bitwidth"), "{err}");
    }
}
