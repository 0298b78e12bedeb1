//! The shared words of the tool, spelled once: which backend runs a graph, which tools run a
//! build step, and how a command ended. Every layer (CLI, build, conformance, device, reports)
//! uses these types; none of them lives in `commands/`, so no domain module imports the CLI.
//!
//! Each word's spelling lives in one table (`BackendKind::ALL` with `label`, `ToolchainKind`'s
//! `label`); `Display`, `FromStr`, serde and clap all go through it, so a report written by one
//! part of the tool is read back by another under the same name.

use std::fmt;
use std::str::FromStr;

/// How a command ended when it did not fail with an error: exit 0, or exit 1 for a failed
/// gate or build step (errors are exit 2, see `bad_input`).
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Success,
    GateFailed,
}

/// The one verdict of a check (an output, a component, a chain boundary, the chain, a
/// bundle). Every report and the model card render it through `word`, so what says PASS in
/// one place says PASS everywhere; JSON writes it in lower case (`"pass"`, as reports always
/// have).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    /// There was nothing to compare against: reported with the reason, never counted as a
    /// pass.
    Ungated,
    /// The check never ran on what it is about (a bundle whose chain never ran on the HTP).
    Unmeasured,
}

impl Verdict {
    /// How every report and the card spell it.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Ungated => "UNGATED",
            Verdict::Unmeasured => "UNMEASURED",
        }
    }

    pub fn of(pass: bool) -> Self {
        if pass { Verdict::Pass } else { Verdict::Fail }
    }

    pub fn passed(self) -> bool {
        self == Verdict::Pass
    }

    /// The verdict of a whole made of parts: any FAIL fails it; else any part not measured or
    /// not gated leaves the whole so (the weaker of the two); else PASS.
    pub fn all(parts: impl IntoIterator<Item = Verdict>) -> Verdict {
        let mut whole = Verdict::Pass;
        for v in parts {
            whole = match (whole, v) {
                (Verdict::Fail, _) | (_, Verdict::Fail) => Verdict::Fail,
                (Verdict::Unmeasured, _) | (_, Verdict::Unmeasured) => Verdict::Unmeasured,
                (Verdict::Ungated, _) | (_, Verdict::Ungated) => Verdict::Ungated,
                _ => Verdict::Pass,
            };
        }
        whole
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// The backend a command runs on, as flags, reports and messages name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, clap::ValueEnum)]
pub enum BackendKind {
    /// ONNX Runtime's CPU execution provider on the ONNX graphs.
    Ort,
    /// The QNN CPU backend on the ONNX graphs.
    Cpu,
    /// The built HTP context binaries (emulated on x86_64, the NPU on a device).
    Htp,
}

impl BackendKind {
    /// Every backend, in the order reports list them (reference first).
    pub const ALL: [BackendKind; 3] = [BackendKind::Ort, BackendKind::Cpu, BackendKind::Htp];

    /// The backend's name as flags, reports and messages spell it: `ort`, `cpu` or `htp`.
    pub fn label(self) -> &'static str {
        match self {
            BackendKind::Ort => "ort",
            BackendKind::Cpu => "cpu",
            BackendKind::Htp => "htp",
        }
    }

    /// The backend a report or record names, if it is one of ours.
    pub fn from_label(label: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|b| b.label() == label)
    }

    /// `ort, cpu, htp`: what an error lists as the allowed names.
    pub fn allowed() -> String {
        Self::ALL.map(|b| b.label()).join(", ")
    }

    /// A QNN backend (the ones the build proves): CPU or HTP, not ORT's reference.
    pub fn is_qnn(self) -> bool {
        self != BackendKind::Ort
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// A name that is none of the words a `FromStr` of this module knows: says which are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownWord {
    pub what: &'static str,
    pub found: String,
    pub allowed: String,
}

impl fmt::Display for UnknownWord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a {}: one of {}",
            self.found, self.what, self.allowed
        )
    }
}

impl std::error::Error for UnknownWord {}

impl FromStr for BackendKind {
    type Err = UnknownWord;

    fn from_str(s: &str) -> Result<Self, UnknownWord> {
        Self::from_label(s).ok_or_else(|| UnknownWord {
            what: "backend",
            found: s.to_string(),
            allowed: Self::allowed(),
        })
    }
}

impl serde::Serialize for BackendKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.label())
    }
}

impl<'de> serde::Deserialize<'de> for BackendKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A QNN backend: what `bisect` compares against ORT's CPU EP (`--help` offers only these).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum QnnBackendKind {
    /// The QNN CPU backend on the ONNX graphs.
    Cpu,
    /// The built HTP context binaries.
    Htp,
}

impl From<QnnBackendKind> for BackendKind {
    fn from(b: QnnBackendKind) -> Self {
        match b {
            QnnBackendKind::Cpu => BackendKind::Cpu,
            QnnBackendKind::Htp => BackendKind::Htp,
        }
    }
}

/// Which tools run a step: the embedded QNN 2.47 runtime, or the QAIRT SDK's tools.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ToolchainKind {
    #[default]
    Embedded,
    Sdk,
}

impl ToolchainKind {
    /// The toolchain's name as flags and records spell it.
    pub fn label(self) -> &'static str {
        match self {
            ToolchainKind::Embedded => "embedded",
            ToolchainKind::Sdk => "sdk",
        }
    }
}

impl fmt::Display for ToolchainKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

impl FromStr for ToolchainKind {
    type Err = UnknownWord;

    fn from_str(s: &str) -> Result<Self, UnknownWord> {
        [ToolchainKind::Embedded, ToolchainKind::Sdk]
            .into_iter()
            .find(|t| t.label() == s)
            .ok_or_else(|| UnknownWord {
                what: "toolchain",
                found: s.to_string(),
                allowed: "embedded, sdk".into(),
            })
    }
}

/// How a component's weights and activations are held on the HTP: float (fp16, the card's
/// bundle) or quantized by calibration (`[quantize] precision`). `wNaM`: N-bit weights, M-bit
/// activations (`notes/quantization.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, clap::ValueEnum)]
pub enum Precision {
    #[default]
    Fp16,
    W8a16,
    W8a8,
    W4a16,
}

impl Precision {
    /// Every precision, float first, then by falling size of the weights.
    pub const ALL: [Precision; 4] = [
        Precision::Fp16,
        Precision::W8a16,
        Precision::W8a8,
        Precision::W4a16,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Precision::Fp16 => "fp16",
            Precision::W8a16 => "w8a16",
            Precision::W8a8 => "w8a8",
            Precision::W4a16 => "w4a16",
        }
    }

    /// `fp16, w8a16, w8a8, w4a16`.
    pub fn allowed() -> String {
        Self::ALL.map(|p| p.label()).join(", ")
    }

    /// Whether the component is quantized (a QDQ graph with calibrated ranges).
    pub fn is_quantized(self) -> bool {
        self != Precision::Fp16
    }

    /// Bits per weight and per activation (16 for fp16's both).
    pub fn bits(self) -> (u8, u8) {
        match self {
            Precision::Fp16 => (16, 16),
            Precision::W8a16 => (8, 16),
            Precision::W8a8 => (8, 8),
            Precision::W4a16 => (4, 16),
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

impl FromStr for Precision {
    type Err = UnknownWord;

    fn from_str(s: &str) -> Result<Self, UnknownWord> {
        Self::ALL
            .into_iter()
            .find(|p| p.label() == s)
            .ok_or_else(|| UnknownWord {
                what: "precision",
                found: s.to_string(),
                allowed: Self::allowed(),
            })
    }
}

impl serde::Serialize for Precision {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.label())
    }
}

impl<'de> serde::Deserialize<'de> for Precision {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The ORT version the pinned runtime wheel carries (checked against the loaded library). Here,
/// with the other shared words, because the recipe layer names the release the tool drives and
/// the runtime layer fetches it.
pub const PINNED_ORT_VERSION: &str = "1.24.4";
/// The QNN SDK build the pinned plugin wheel carries.
pub const PINNED_QNN_VERSION: &str = "2.47.0";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_fails_with_any_part_and_passes_only_when_every_part_passed() {
        use Verdict::*;
        assert_eq!(Verdict::all([Pass, Pass]), Pass);
        assert_eq!(Verdict::all([Pass, Ungated, Fail]), Fail);
        assert_eq!(Verdict::all([Pass, Unmeasured, Ungated]), Unmeasured);
        assert_eq!(Verdict::all([Ungated, Pass]), Ungated);
        assert_eq!(Verdict::all([]), Pass);
        assert_eq!(serde_json::to_string(&Fail).unwrap(), "\"fail\"");
        assert_eq!(Fail.word(), "FAIL");
    }

    #[test]
    fn labels_round_trip_through_display_fromstr_and_serde() {
        for b in BackendKind::ALL {
            assert_eq!(BackendKind::from_label(b.label()), Some(b));
            assert_eq!(b.to_string().parse::<BackendKind>(), Ok(b));
            let json = serde_json::to_string(&b).unwrap();
            assert_eq!(json, format!("\"{b}\""));
            assert_eq!(serde_json::from_str::<BackendKind>(&json).unwrap(), b);
        }
        for t in [ToolchainKind::Embedded, ToolchainKind::Sdk] {
            assert_eq!(t.to_string().parse::<ToolchainKind>(), Ok(t));
        }
        for p in Precision::ALL {
            assert_eq!(p.to_string().parse::<Precision>(), Ok(p));
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(serde_json::from_str::<Precision>(&json).unwrap(), p);
        }
        let err = "w4a3".parse::<Precision>().unwrap_err().to_string();
        assert_eq!(
            err,
            "\"w4a3\" is not a precision: one of fp16, w8a16, w8a8, w4a16"
        );
    }

    #[test]
    fn an_unknown_name_lists_the_known_ones() {
        assert_eq!(BackendKind::from_label("gpu"), None);
        let err = "gpu".parse::<BackendKind>().unwrap_err().to_string();
        assert_eq!(err, "\"gpu\" is not a backend: one of ort, cpu, htp");
        assert!(serde_json::from_str::<BackendKind>("\"npu\"").is_err());
    }
}
