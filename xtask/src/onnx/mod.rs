//! ONNX protobuf: a reader, writers and the EPContext wrapper.

pub mod builder;
pub mod decompose;
pub mod epcontext;
pub mod proto;
pub mod rewrite;
pub mod writer;
