//! A component's `[quantize]` table: the precision it is built at on the HTP, how it is
//! calibrated, and the gates it is proven by against the float golden. Absent (or `precision =
//! "fp16"`), the component builds as before, with the same step keys.
//!
//! ```toml
//! [quantize]
//! precision = "w8a16"          # fp16 | w8a16 | w8a8 | w4a16
//! per_channel = true           # weights per output channel, MatMul (as FullyConnected) included
//! calibration = "trace"        # golden | trace | a folder of .npz files inside the project
//! samples = 16                 # at most this many calibration samples
//! method = "minmax"            # minmax | entropy | percentile (ORT's calibrators)
//! exclude = ["LayerNormalization"]   # operator types or node names kept in float
//! [quantize.gates.w8a16]       # the gate of a precision (defaults: `default_gate`)
//! min_cosine = 0.999
//! max_norm_ratio_error = 0.02
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use super::validate::{at, at_entry, check_cosine, check_relative};
use xtask_base::vocab::Precision;

/// How ranges are calibrated: ORT's calibrators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CalibrationMethod {
    #[default]
    Minmax,
    Entropy,
    Percentile,
}

impl CalibrationMethod {
    pub fn label(self) -> &'static str {
        match self {
            CalibrationMethod::Minmax => "minmax",
            CalibrationMethod::Entropy => "entropy",
            CalibrationMethod::Percentile => "percentile",
        }
    }
}

/// Where the calibration samples come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CalibrationSource {
    /// The component's golden inputs only (one sample).
    Golden,
    /// The golden inputs and every input of this component the chain trace holds (each Euler
    /// step's for `action_step`, the hidden states entering each LLM split).
    Trace,
    /// Every `.npz` in a folder of the project, each one sample keyed by input name.
    Folder(PathBuf),
}

impl CalibrationSource {
    /// `golden`, `trace`, or the folder as written.
    pub fn label(&self) -> String {
        match self {
            CalibrationSource::Golden => "golden".into(),
            CalibrationSource::Trace => "trace".into(),
            CalibrationSource::Folder(p) => p.display().to_string(),
        }
    }
}

impl Serialize for CalibrationSource {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.label())
    }
}

impl<'de> Deserialize<'de> for CalibrationSource {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Ok(match String::deserialize(d)?.as_str() {
            "golden" => CalibrationSource::Golden,
            "trace" => CalibrationSource::Trace,
            folder => CalibrationSource::Folder(PathBuf::from(folder)),
        })
    }
}

/// The gate a quantized component is held to against the float golden.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrecisionGate {
    #[serde(default)]
    pub min_cosine: Option<f64>,
    #[serde(default)]
    pub max_norm_ratio_error: Option<f64>,
    /// Why the gate is looser than the precision's default (required then: a few words, with
    /// what was measured), shown beside the gate in every report and the card.
    #[serde(default)]
    pub reason: Option<String>,
}

/// The `[quantize]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuantizeSection {
    pub precision: Precision,
    #[serde(default = "yes")]
    pub per_channel: bool,
    #[serde(default = "trace")]
    pub calibration: CalibrationSource,
    #[serde(default = "default_samples")]
    pub samples: usize,
    #[serde(default)]
    pub method: CalibrationMethod,
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Per precision (`w8a16`, …), the gate that replaces the default.
    #[serde(default)]
    pub gates: BTreeMap<String, PrecisionGate>,
}

impl QuantizeSection {
    /// `[quantize] precision = p` with every other setting at its default.
    pub fn of(precision: Precision) -> Self {
        QuantizeSection {
            precision,
            per_channel: yes(),
            calibration: trace(),
            samples: DEFAULT_SAMPLES,
            method: CalibrationMethod::default(),
            exclude: Vec::new(),
            gates: BTreeMap::new(),
        }
    }
}

fn yes() -> bool {
    true
}
fn trace() -> CalibrationSource {
    CalibrationSource::Trace
}
/// Enough samples for ranges that are not one input's; the tiny model's chain holds 1 to 2 per
/// component, a real trace or a calibration folder more.
pub const DEFAULT_SAMPLES: usize = 16;
fn default_samples() -> usize {
    DEFAULT_SAMPLES
}
/// More samples than this would hold every sample's activations in the quantizer's memory at
/// real width (a 4,680-token LLM split's activations are ~48 MB each).
pub const MAX_SAMPLES: usize = 256;

/// The gate a precision is proven by when the recipe does not name one: cosine against the
/// float golden and the scale error, per output. Measured (docs/quantization.md): w8a16 lands
/// at 0.99997-0.99999 on tiny's components and 0.99971 on a real-width decoder layer (worst
/// output); w8a8 at 0.956 on that decoder's hidden output (an 8-bit step of ~39 over the
/// masked scores), w4a16 at 0.951. The gates keep a margin under what a healthy quantized
/// graph reaches while failing a broken one (a wrong scale, an inverted mask: cosine < 0.9).
pub fn default_gate(precision: Precision) -> (f64, f64) {
    match precision {
        Precision::Fp16 => (crate::recipe::DEFAULT_MIN_COSINE, 2e-2),
        Precision::W8a16 => (0.999, 2e-2),
        Precision::W8a8 => (0.95, 5e-2),
        Precision::W4a16 => (0.94, 5e-2),
    }
}

impl QuantizeSection {
    /// The (min cosine, max norm-ratio error) the component is held to at `precision`.
    /// The written reason of a gate looser than the precision's default.
    pub fn gate_reason(&self, precision: Precision) -> Option<String> {
        self.gates
            .get(precision.label())
            .and_then(|g| g.reason.clone())
    }

    pub fn gate(&self, precision: Precision) -> (f64, f64) {
        let (cos, ratio) = default_gate(precision);
        match self.gates.get(precision.label()) {
            Some(g) => (
                g.min_cosine.unwrap_or(cos),
                g.max_norm_ratio_error.unwrap_or(ratio),
            ),
            None => (cos, ratio),
        }
    }

    /// A quantized precision (fp16 builds exactly as without the table).
    pub fn quantized(&self) -> Option<Precision> {
        self.precision.is_quantized().then_some(self.precision)
    }
}

/// Checks every value of `[quantize]`, naming file, line and key.
pub fn check_quantize(root: &Path, path: &Path, text: &str, q: &QuantizeSection) -> Result<()> {
    let where_ = |key: &str| at(path, text, "quantize", key, 0);
    if q.samples == 0 || q.samples > MAX_SAMPLES {
        bail!(
            "{} = {} is out of range: at least 1 and at most {MAX_SAMPLES} calibration samples",
            where_("samples"),
            q.samples
        );
    }
    if let CalibrationSource::Folder(dir) = &q.calibration {
        super::paths::require_inside(root, dir, &where_("calibration"))?;
        if dir.as_os_str().is_empty() {
            bail!(
                "{}: an empty path; write \"golden\", \"trace\" or a folder of .npz files",
                where_("calibration")
            );
        }
    }
    // Whether a name is an operator type or node of the graph is checked by the quantize step,
    // which reads the graph; here only malformed names are refused.
    for (i, name) in q.exclude.iter().enumerate() {
        if name.trim().is_empty() || name.starts_with('-') {
            bail!(
                "{}: exclude[{i}] = {name:?} is not an operator type or node name",
                where_("exclude")
            );
        }
    }
    for (name, gate) in &q.gates {
        let table = format!("quantize.gates.{name}");
        if let Err(e) = name.parse::<Precision>() {
            bail!("{}: {e}", at_entry(path, text, "quantize.gates", name));
        }
        if let Some(c) = gate.min_cosine {
            check_cosine(&at(path, text, &table, "min_cosine", 0), c)?;
        }
        if let Some(r) = gate.max_norm_ratio_error {
            check_relative(&at(path, text, &table, "max_norm_ratio_error", 0), r)?;
        }
        // A gate looser than the precision's default is a decision someone must state.
        if let Ok(p) = name.parse::<Precision>() {
            let (cos, ratio) = default_gate(p);
            let looser = gate.min_cosine.is_some_and(|c| c < cos)
                || gate.max_norm_ratio_error.is_some_and(|r| r > ratio);
            let stated = gate
                .reason
                .as_deref()
                .is_some_and(super::validate::is_a_reason);
            if looser && !stated {
                bail!(
                    "{}: [{table}] is looser than the {p} default (cosine ≥ {cos}, scale ≤ {ratio}): write `reason = \"…\"`, a few words saying why, with what was measured (got {:?})",
                    at_entry(path, text, "quantize.gates", name),
                    gate.reason.as_deref().unwrap_or("")
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<QuantizeSection> {
        #[derive(Deserialize)]
        struct F {
            quantize: QuantizeSection,
        }
        Ok(crate::recipe::parse_toml::<F>(Path::new("c.toml"), text)?.quantize)
    }

    #[test]
    fn a_precision_outside_the_four_is_refused_naming_them_and_the_line() {
        let err = parse("[quantize]\nprecision = \"w4a3\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("c.toml:2:"), "{err}");
        assert!(
            err.contains("\"w4a3\" is not a precision: one of fp16, w8a16, w8a8, w4a16"),
            "{err}"
        );
    }

    #[test]
    fn defaults_and_gates_per_precision() {
        let q =
            parse("[quantize]\nprecision = \"w8a16\"\n[quantize.gates.w4a16]\nmin_cosine = 0.9\n")
                .unwrap();
        assert!(q.per_channel && q.samples == DEFAULT_SAMPLES);
        assert_eq!(q.calibration, CalibrationSource::Trace);
        assert_eq!(q.method, CalibrationMethod::Minmax);
        assert_eq!(q.gate(Precision::W8a16), default_gate(Precision::W8a16));
        assert_eq!(q.gate(Precision::W4a16), (0.9, 5e-2));
        let root = tempfile::tempdir().unwrap();
        let text = "[quantize]\nprecision = \"w8a16\"\n[quantize.gates.w9a9]\nmin_cosine = 0.9\n";
        let q = parse(text).unwrap();
        let err = check_quantize(root.path(), Path::new("c.toml"), text, &q)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("c.toml:3: quantize.gates.w9a9") && err.contains("w8a16"),
            "{err}"
        );
    }

    #[test]
    fn values_out_of_range_name_file_line_and_key() {
        let root = tempfile::tempdir().unwrap();
        for (text, want) in [
            (
                "[quantize]\nprecision = \"w8a8\"\nsamples = 0\n",
                "c.toml:3: quantize.samples = 0",
            ),
            (
                "[quantize]\nprecision = \"w8a8\"\n[quantize.gates.w8a8]\nmin_cosine = 1.5\n",
                "c.toml:4: quantize.gates.w8a8.min_cosine = 1.5",
            ),
            (
                "[quantize]\nprecision = \"w8a8\"\ncalibration = \"../outside\"\n",
                "c.toml:3: quantize.calibration",
            ),
            (
                "[quantize]\nprecision = \"w8a8\"\nexclude = [\"--all\"]\n",
                "c.toml:3: quantize.exclude",
            ),
        ] {
            let q = parse(text).unwrap();
            let err = check_quantize(root.path(), Path::new("c.toml"), text, &q)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(want), "{err}");
        }
        let err = parse("[quantize]\nprecision = \"w8a8\"\nmethod = \"kl\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("c.toml:3:") && err.contains("minmax"),
            "{err}"
        );
    }
}
