//! How numbers are judged: f64 metrics with NaN/Inf detection, the one gate per output, a component
//! run against its golden, and the rewritten (QNN-ready) copy of a graph. It must not depend on
//! builds, the chain, diagnostics or bundles.

pub mod parity;
pub mod rewritten;
