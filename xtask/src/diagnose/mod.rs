//! Diagnostics that turn a failed gate into a cause: bisect (the first divergent operator),
//! the probe that exposes intermediate tensors, and the fp16 range lint.

pub mod bisect;
pub mod bisect_report;
pub mod probe;
pub mod rank;

/// The bisect command to suggest when a gate fails.
pub fn bisect_hint(
    model: &str,
    comp: &crate::recipe::Component,
    backend: crate::vocab::BackendKind,
) -> String {
    format!(
        "cargo xtask bisect {} --backend {backend} --model {model}",
        comp.name()
    )
}
