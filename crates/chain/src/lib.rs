//! The host pipeline of the model family run end to end (`run`), boundary by boundary, on the local
//! backends or a board over ssh, and the precision search that judges quantized components by the
//! chain. It must not depend on bundles or the CLI.

pub mod chain;
pub mod device;
pub mod executors;
pub mod precision;
