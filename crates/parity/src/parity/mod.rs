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

/// The bisect command to suggest when a gate fails on a QNN backend: a float component is
/// bisected on that backend against ORT's CPU EP; a quantized one as its QDQ graph against its
/// float graph (a float bisect would look at a graph its binary does not hold).
pub fn bisect_hint(
    model: &str,
    comp: &xtask_recipe::recipe::Component,
    backend: xtask_base::vocab::BackendKind,
) -> String {
    if comp.precision().is_quantized() {
        return format!("cargo xtask bisect {} --qdq --model {model}", comp.name());
    }
    format!(
        "cargo xtask bisect {} --backend {backend} --model {model}",
        comp.name()
    )
}
