//! The host pipeline of the model family (`pipeline`), how `cargo xtask run` drives it over
//! sessions and judges every boundary (`run`, `sessions`), and its reports (`report` with the
//! Markdown, `html`, `terminal`; latency percentiles in `latency`).

pub mod boundaries;
pub mod html;
pub mod introduced;
pub use crate::report::latency;
pub mod layout;
pub mod pipeline;
pub mod progress;
pub mod report;
pub mod run;
pub mod sessions;
pub mod terminal;
pub mod trace;
pub mod whatif;
