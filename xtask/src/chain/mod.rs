//! The host pipeline of the model family and its run report.

pub mod pipeline;
pub mod report;
