//! The library behind `cargo xtask`: every domain of the tool, used by the CLI in `main.rs`
//! and by the test doubles of the `xtask-test-doubles` workspace member (`test-doubles/`).
//!
//! Read first: `recipe` (what a model is), `build` (plan → steps → execute), `toolchain`
//! (who runs a step), `parity` (how numbers are judged), then `chain` and `bundle`.

pub mod atomic;
pub mod bad_input;
pub mod bundle;
pub mod chain;
pub mod commands;
pub mod conformance;
pub mod ctx_build;
pub mod device;
pub mod diagnose;
pub mod disk;
pub mod executors;
pub mod fp16;
pub mod golden;
pub mod hashing;
pub mod htp_target;
pub mod identity;
pub mod onnx;
pub mod parity;
pub mod precision;
pub mod proc;
pub mod project;
pub mod quantize;
pub mod recipe;
pub mod record;
pub mod report;
pub mod rewritten;
pub mod runtime;
pub mod soc;
pub mod tensor;
pub mod ui;
pub mod vocab;
