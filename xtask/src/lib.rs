//! The thin CLI of `cargo xtask`: one module per subcommand (`commands`), each flag struct the
//! command's input with its `run`, dispatched by `main.rs`. The domains live in the crates
//! below (`crates/`, docs/design.md): base → onnx → recipe → runtime → parity → diagnose and
//! build → chain → bundle. Nothing depends on this crate but its tests.

pub mod commands;
