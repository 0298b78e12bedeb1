//! Which backend a session runs on: ORT's CPU EP, the QNN CPU backend, or the QNN HTP with
//! its target.

use xtask_recipe::htp_target::HtpTarget;

/// The name ORT gives the QNN execution provider (its plugin, its devices, its placement log).
pub const QNN_EP: &str = "QNNExecutionProvider";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// ONNX Runtime's own CPU execution provider (the reference of `parity --backend ort`).
    OrtCpu,
    /// The QNN CPU backend, `libQnnCpu.so`.
    QnnCpu,
    /// The QNN HTP backend, `libQnnHtp.so`.
    QnnHtp(HtpTarget),
}

impl Backend {
    /// Which of the three backends this is (the word reports and flags use).
    pub fn kind(&self) -> xtask_base::vocab::BackendKind {
        match self {
            Backend::OrtCpu => xtask_base::vocab::BackendKind::Ort,
            Backend::QnnCpu => xtask_base::vocab::BackendKind::Cpu,
            Backend::QnnHtp(_) => xtask_base::vocab::BackendKind::Htp,
        }
    }

    pub fn label(&self) -> &'static str {
        self.kind().label()
    }
}
