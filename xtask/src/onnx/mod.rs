//! ONNX protobuf: a reader, writers, one node extracted as a model, and the EPContext wrapper.

pub mod attr;
pub mod builder;
pub mod decompose;
pub mod epcontext;
pub mod extract;
pub mod proto;
pub mod rewrite;
pub mod writer;
