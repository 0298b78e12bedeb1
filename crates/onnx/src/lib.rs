//! Tensors as the tool holds them and the ONNX protobuf: a reader, writers, one node extracted as a
//! model, graph rewrites and the EPContext wrapper. Knows nothing of recipes, runtimes or builds:
//! it must depend on `xtask-base` only.

pub mod onnx;
pub mod tensor;
