//! The bottom layer: the shared words (`vocab`), the SoC table, versioned JSON records, hashing,
//! atomic writes, the project layout, child processes and how the tool talks to its user (`ui`).
//! Everything else stands on it; it must not depend on any other crate of the workspace.

pub mod atomic;
pub mod bad_input;
pub mod disk;
pub mod hashing;
pub mod identity;
pub mod proc;
pub mod project;
pub mod record;
pub mod soc;
pub mod ui;
pub mod vocab;
