//! The host pipeline of the model family (`pipeline`), how `cargo xtask run` drives it and
//! judges every boundary (`run`, the one chain runner, over a `runner::ComponentRunner`: this
//! host's sessions in `host` and `sessions`, or a board in `device::chain`), and its reports (`report` the
//! record, `report_md` its Markdown, `html` its page, `report_files` the three files,
//! `terminal`; latency percentiles in `latency`).

pub mod boundaries;
pub mod device_figures;
pub mod host;
pub mod html;
pub mod introduced;
pub use xtask_runtime::report::latency;
pub mod layout;
pub mod next_steps;
pub mod pipeline;
pub mod progress;
pub mod report;
pub mod report_files;
pub mod report_md;
pub mod run;
pub mod runner;
pub mod sessions;
pub mod terminal;
pub mod trace;
pub mod whatif;
