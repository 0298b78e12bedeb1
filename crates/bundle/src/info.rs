//! `reports/bundle.json`: what a bundle holds and how its binaries were built, the one source
//! of the model card. Every build fact in it comes from the packaged binaries' build records
//! (`ctx/<model>/<component>.record.json`), never from the recipe (it may have changed since,
//! and `[target] qairt` is a wish, not what compiled anything) nor from the runtime `package`
//! ran with (it did not compile the binaries).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use xtask_base::record::Versioned;
use xtask_base::vocab::ToolchainKind;
use xtask_ctx_build::facts::ToolVersions;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BundleInfo {
    /// `BundleInfo::SCHEMA` (`record::Versioned`).
    #[serde(default)]
    pub schema_version: u32,
    pub model: String,
    pub description: String,
    pub soc_id: u32,
    pub soc_chips: Vec<String>,
    pub htp_arch: u32,
    /// What compiled the packaged binaries, as their context records state it.
    pub built_by: BuiltBy,
    pub toolchain: String,
    pub commit: String,
    pub allow_stale: bool,
    /// Components whose artifacts were stale when packaged (only with --allow-stale).
    pub stale: Vec<String>,
    /// Inputs fetched without a manifest (`fetch --unverified`) this bundle was made from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unverified_inputs: Option<String>,
    /// Components HTP parity never measured on the packaged binary, with why (only with
    /// `package --allow-unmeasured`; the card and `verify` say so).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub htp_unmeasured: Vec<String>,
    /// Why the chain never ran on the HTP with the packaged binaries (only with
    /// `package --allow-unmeasured`; the card's verdict is then UNMEASURED, said at its top).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_unmeasured: Option<String>,
    pub components: Vec<BundleComponent>,
    /// Every other file of the bundle (all but this one, the card, which `verify` renders
    /// again from the reports, and the manifest, its sums and the signature), with its size,
    /// sha256 and role: what the manifest lists must be exactly this, so a file changed and
    /// re-hashed into the manifest is caught here (`bundle::bound`).
    pub files: Vec<super::manifest::ManifestEntry>,
}

/// v3: `files`, every file of the bundle bound to this record (the external data, the trace,
/// the reports: a manifest re-hashed after an edit no longer agrees with it). v2 added the
/// chain's verdict (`chain_unmeasured`), a quantized context's calibration source, method,
/// exclusions and gate, and each waiver's lowered gate; v2, v1 and schema 0 bound only some of
/// their files: they are refused and the bundle packaged again.
impl Versioned for BundleInfo {
    const KIND: &'static str = "bundle description";
    const SCHEMA: u32 = 3;
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BundleComponent {
    pub name: String,
    pub description: String,
    pub inputs: Vec<(String, Vec<usize>, String)>,
    pub outputs: Vec<(String, Vec<usize>, String)>,
    /// CPU-backend cosine per output, from the build's cpu-parity step.
    pub cpu_cosine: Vec<(String, f64)>,
    pub graph_name: String,
    pub ep_sdk_version: Option<String>,
    pub bin_file: String,
    pub bin_bytes: u64,
    /// What was compiled, from the build record's typed facts (never from the recipe).
    pub optimization_level: u8,
    pub fp16: bool,
    /// 0 = the backend's default.
    pub vtcm_mb: u32,
    /// Whose tools built the binary, from its build record.
    pub toolchain: xtask_ctx_build::facts::ToolchainUsed,
    /// The DLC's float bitwidth, from the convert record.
    pub float_bitwidth: u8,
    /// How far the DLC was checked, from the convert record.
    pub dlc_validation: String,
    /// The graph rewrites QNN's copy of the ONNX got, from the convert record.
    pub rewrites: Option<xtask_parity::rewritten::RewriteCheck>,
    /// The schema of the build record these facts were read from.
    pub record_schema: u32,
    /// The tool versions that built the binary (its context record).
    pub built_with: ToolVersions,
    pub recipe_sha256: String,
    pub onnx_sha256: String,
    pub golden_sha256: String,
    /// Every output whose gate a written override lowered.
    pub waivers: Vec<Waiver>,
    /// A quantized context: its precision and calibration set, from its quantize record
    /// (absent: float; its figures are then against the golden as always).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantized: Option<QuantizedFacts>,
}

/// An output whose gate an override lowered, on the backend it applies to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Waiver {
    pub output: String,
    /// The recipe's `[parity] min_cosine` and the override's.
    pub from: f64,
    pub to: f64,
    pub reason: String,
}

/// What a quantized context was quantized with, as its quantize record states it, and the gate
/// it is judged by (the one `parity`, `run`, `package` and `verify` use).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuantizedFacts {
    pub precision: xtask_base::vocab::Precision,
    pub per_channel: bool,
    /// `golden`, `trace` or the folder the samples came from.
    pub calibration_source: String,
    /// `minmax`, `entropy` or `percentile`.
    pub method: String,
    /// Operator types and node names kept in float.
    pub exclude: Vec<String>,
    /// sha256 over the calibration samples' tensors, and how many there were.
    pub calibration_sha256: String,
    pub calibration_samples: usize,
    /// The CPU stage its `cpu_cosine` comes from (QNN's CPU backend cannot run QDQ).
    pub cpu_stage: String,
    /// The gate against the float golden on the HTP: minimum cosine, scale bound and where
    /// it comes from (`[quantize.gates.<precision>]` or the precision's default).
    pub gate_min_cosine: f64,
    pub gate_max_norm_ratio_error: f64,
    pub gate_source: String,
}

/// What compiled the packaged binaries, each fact as their context records state it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuiltBy {
    /// The QAIRT version of the QNN build that compiled them (`2.47.0` of `v2.47.0.250908…`).
    pub qairt: Recorded,
    /// That QNN build as it reported itself (`reported_qnn`).
    pub qnn_build: Recorded,
    pub onnxruntime: Recorded,
    /// This tool's identity when it built them (`identity::xtask_id()` of that build).
    pub xtask: Recorded,
}

impl BuiltBy {
    /// The facts of the components' context records: (component, the versions it records).
    pub fn of<'a>(built: &[(&'a str, &'a ToolVersions)]) -> Self {
        let each = |f: &dyn Fn(&ToolVersions) -> String| {
            Recorded::of(built.iter().map(|(c, v)| (*c, f(v))))
        };
        BuiltBy {
            qairt: each(&|v| qairt_of(reported_qnn(v))),
            qnn_build: each(&|v| reported_qnn(v).to_string()),
            onnxruntime: each(&|v| v.onnxruntime.clone()),
            xtask: each(&|v| v.xtask.clone()),
        }
    }

    /// `of` the bundle's components (their `built_with`, copied from their context records).
    pub fn of_components(components: &[BundleComponent]) -> Self {
        let built: Vec<(&str, &ToolVersions)> = components
            .iter()
            .map(|c| (c.name.as_str(), &c.built_with))
            .collect();
        Self::of(&built)
    }
}

/// The QNN build that compiled a binary, as the tools that compiled it reported it: the QAIRT
/// SDK's version for an SDK build, else the QNN build the embedded runtime reported
/// (`v2.47.0.250908…`).
pub fn reported_qnn(v: &ToolVersions) -> &str {
    match (v.toolchain.kind, &v.toolchain.sdk_version) {
        (ToolchainKind::Sdk, Some(sdk)) => sdk,
        _ => &v.qnn,
    }
}

/// The QAIRT release of a QNN build: `2.47.0` of `v2.47.0.250908…` (a build that does not
/// read as a version is shown as it is).
pub fn qairt_of(build: &str) -> String {
    match xtask_runtime::runtime::version::parse_qnn_version(build) {
        Some((major, minor, patch)) => format!("{major}.{minor}.{patch}"),
        None => build.to_string(),
    }
}

/// One build fact as the packaged components' records state it: the same for all of them, or
/// differing (each value with the components that record it), so the card says they differ
/// rather than picking one. In JSON: the value, or an object from value to components.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Recorded {
    Same(String),
    Differ(BTreeMap<String, Vec<String>>),
}

impl Recorded {
    /// From (component, value) pairs; no pair at all is `Differ` of nothing (no record).
    pub fn of<'a>(facts: impl IntoIterator<Item = (&'a str, String)>) -> Self {
        let mut by: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (component, value) in facts {
            by.entry(value).or_default().push(component.to_string());
        }
        match by.len() {
            1 => Recorded::Same(by.into_keys().next().unwrap_or_default()),
            _ => Recorded::Differ(by),
        }
    }

    /// The fact with each value passed through `show` (the card sets build strings as code).
    pub fn shown(&self, show: impl Fn(&str) -> String) -> String {
        match self {
            Recorded::Same(v) => show(v),
            Recorded::Differ(by) if by.is_empty() => "unknown (no build record)".into(),
            Recorded::Differ(by) => {
                let each: Vec<String> = by
                    .iter()
                    .map(|(v, comps)| format!("{} ({})", show(v), comps.join(", ")))
                    .collect();
                format!("differs between components: {}", each.join("; "))
            }
        }
    }
}

impl fmt::Display for Recorded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown(str::to_string))
    }
}

/// Reads a bundle's `reports/bundle.json` (through the hardened reader), refusing another
/// schema with the file and the `package` command that writes it again.
pub fn read_info(dir: &Path) -> Result<BundleInfo> {
    const REL: &str = "reports/bundle.json";
    let model = super::manifest::read_manifest(dir).map_or_else(|_| "MODEL".into(), |m| m.model);
    let rebuild = format!(
        "cargo xtask package --model {model} --out {}",
        dir.display()
    );
    let bytes = super::reader::read_small(dir, REL)?;
    xtask_base::record::from_slice(&bytes, &dir.join(REL).display().to_string(), &rebuild)
}

#[cfg(test)]
#[path = "info_tests.rs"]
pub(crate) mod tests;
