//! The embedded QNN 2.47 runtime: fetching it (`bootstrap`), loading it and opening checked
//! sessions on it (`session`), and asking it for versions (`version`).

pub mod bootstrap;
pub mod compile_config;
pub mod device;
pub mod placement;
pub mod platform;
pub mod probe;
pub mod session;
pub mod stdio;
pub mod values;
pub mod version;
pub mod wheels;

pub use crate::htp_target::HtpTarget;
pub use session::{Backend, Runtime};
