//! Parity: metrics (f64, NaN/Inf-aware), the one gate, component runs against golden tensors,
//! and the parity report.

pub mod component;
pub mod gate;
pub mod metrics;
pub mod report;
pub mod runner;
