//! `cargo xtask precision`: which components can be quantized before the robot's actions
//! change. The search (`search`) measures configurations of per-component precisions by the
//! chain's own action error against the float golden; `measure` builds and runs them; the
//! report (`report`, `plot`) shows every configuration, the size/error frontier and the
//! proposal; `apply` writes the proposal into the recipes.

pub mod apply;
pub mod measure;
pub mod plot;
pub mod report;
pub mod search;
