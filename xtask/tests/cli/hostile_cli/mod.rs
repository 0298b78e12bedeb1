//! The hostile-input suite: a generator writes a corpus of broken inputs at test time (npz
//! files, ONNX graphs, recipe values, path escapes) into scratch copies of the tiny project;
//! each case states the exit code and a fragment of the message it must produce. Bad input
//! must end in exit 2 with a message that names the problem, never a panic, a signal, or a
//! good-looking number; nothing already built may be replaced.
//!
//! This module holds the component every case aims at and the two commands the cases run.

mod artifacts;
mod corpus;
mod forge;
pub(crate) use forge::edit_path;

const COMP: &str = "action_context";
const GOLDEN: &str = "golden/tiny/action_context_io.npz";
const RECIPE: &str = "recipes/tiny/action_context.toml";
const ONNX: &str = "onnx/tiny/action_context.onnx";

const PARITY: &[&str] = &["parity", "--backend", "ort", "--only", COMP];
const BUILD: &[&str] = &["build-ctx", "--soc", "77", "--only", COMP];
