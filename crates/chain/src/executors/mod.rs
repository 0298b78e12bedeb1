//! Who executes a component for `parity`: the embedded runtime, the QAIRT SDK's tools, or a
//! board over ssh, each an `parity::runner::Executor`. This layer sits above the build, the
//! toolchains and the device, so the parity engine below needs none of them.

pub mod device;
pub mod embedded;
pub mod sdk;
