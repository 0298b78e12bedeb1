//! `cargo xtask precision`: which components can be quantized before the robot's actions
//! change. The search (`search`, over the types of `outcome`) measures the float chain first,
//! then configurations of per-component precisions by the chain's own action error against the
//! float golden; `measure` builds and runs them (in `variants` of the model; `chain_once`: one
//! chain, with the float chain's attribution when it misses the budget), `gates` handles a
//! component that fails its own gate, `confirm` confirms a `--backend qdq` proposal on the HTP;
//! the report (`report`, `report_text`, `report_md`, `plot`) shows every configuration, the
//! size/error frontier and the proposal; `progress` keeps stderr alive; `apply` writes the
//! proposal into the recipes.

pub mod apply;
pub mod chain_once;
pub mod confirm;
pub mod gates;
pub mod measure;
pub mod outcome;
pub mod plot;
pub mod progress;
pub mod report;
pub mod report_md;
pub mod report_text;
pub mod search;
pub mod variants;
