//! The shared words of the tool, spelled once: which backend runs a graph, which tools run a
//! build step, and how a command ended. Every layer (CLI, build, conformance, device, reports)
//! uses these types; none of them lives in `commands/`, so no domain module imports the CLI.

/// How a command ended when it did not fail with an error: exit 0, or exit 1 for a failed
/// gate or build step (errors are exit 2, see `bad_input`).
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Success,
    GateFailed,
}

/// The backend a command runs on, as flags, reports and messages name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum BackendKind {
    /// ONNX Runtime's CPU execution provider on the ONNX graphs.
    Ort,
    /// The QNN CPU backend on the ONNX graphs.
    Cpu,
    /// The built HTP context binaries (emulated on x86_64, the NPU on a device).
    Htp,
}

impl BackendKind {
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
        [BackendKind::Ort, BackendKind::Cpu, BackendKind::Htp]
            .into_iter()
            .find(|b| b.label() == label)
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
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

impl std::fmt::Display for ToolchainKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip() {
        for b in [BackendKind::Ort, BackendKind::Cpu, BackendKind::Htp] {
            assert_eq!(BackendKind::from_label(b.label()), Some(b));
        }
        assert_eq!(BackendKind::from_label("gpu"), None);
    }
}
