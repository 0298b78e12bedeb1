//! Parity: metrics (f64, NaN/Inf-aware), the one gate, component runs against golden tensors.

pub mod component;
pub mod metrics;
