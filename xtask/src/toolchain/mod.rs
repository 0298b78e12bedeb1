//! Step executors besides the embedded runtime: the QAIRT SDK's command-line tools.

pub mod sdk;
