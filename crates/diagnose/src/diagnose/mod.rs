//! Diagnostics that turn a failed gate into a cause: bisect (the first divergent operator),
//! the probe that exposes intermediate tensors, and the fp16 range lint.

pub mod bisect;
pub mod bisect_report;
pub mod bisect_search;
mod bisect_tables;
pub mod probe;
pub mod rank;
pub mod tensor_point;
pub mod verdict;

pub use xtask_parity::parity::bisect_hint;
