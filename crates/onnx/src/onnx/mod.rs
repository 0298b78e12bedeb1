//! ONNX protobuf: a reader, writers, one node extracted as a model, and the EPContext wrapper.

pub mod attr;
pub mod builder;
pub mod decompose;
pub mod epcontext;
pub mod extract;
pub mod proto;
pub mod rewrite;
mod wire;
pub mod writer;

/// Places an ONNX's external-data file `from` at `to`, beside a copy of the model: a hard link
/// (same filesystem) or else a copy. ORT refuses external data that resolves outside the
/// model's folder, which a symlink does. The error is the copy's; callers say what failed.
pub fn link_external_data(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to)?;
    }
    Ok(())
}
