//! Parity: metrics (f64, NaN/Inf-aware), the one gate, component runs against golden tensors,
//! and the parity report.

pub mod component;
pub mod gate;
pub mod html;
pub mod markdown;
pub mod metrics;
pub mod report;
pub mod report_files;
pub mod runner;

/// The bisect command to suggest when a gate fails.
pub fn bisect_hint(
    model: &str,
    comp: &xtask_recipe::recipe::Component,
    backend: xtask_base::vocab::BackendKind,
) -> String {
    format!(
        "cargo xtask bisect {} --backend {backend} --model {model}",
        comp.name()
    )
}
