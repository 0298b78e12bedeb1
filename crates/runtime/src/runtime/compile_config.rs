//! How a context compile opens its model: the session config (EPContext output, no CPU
//! fallback) and a checkout-independent external-data folder, so the binaries a build makes do
//! not depend on where the project lives.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The folder ORT resolves the model's external data in, named so that it does not depend on
/// the checkout: ORT hashes this path into the QNN graph and partition names, so a symlink at
/// `<tmp>/xtask-onnx-<digest>` points at the real folder, the digest covering the graph bytes
/// and the external files' names and sizes (same name ⇒ same files to read).
pub(super) fn stable_model_dir(model: &Path) -> Result<PathBuf> {
    let dir = std::path::absolute(model.parent().unwrap_or(Path::new(".")))?;
    let bytes = std::fs::read(model).with_context(|| format!("cannot read {}", model.display()))?;
    let mut id = xtask_base::hashing::sha256_bytes(&bytes);
    for loc in xtask_onnx::onnx::proto::parse_model(&bytes)
        .map(|s| s.external_data)
        .unwrap_or_default()
    {
        let size = std::fs::metadata(dir.join(&loc)).map_or(0, |m| m.len());
        id = xtask_base::hashing::sha256_bytes(format!("{id}\n{loc}\n{size}").as_bytes());
    }
    let link = std::env::temp_dir().join(format!("xtask-onnx-{}", &id[..24]));
    if std::fs::read_link(&link).ok().as_deref() != Some(dir.as_path()) {
        let tmp =
            std::env::temp_dir().join(format!(".xtask-onnx-{}-{}", &id[..24], std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&dir, &tmp)
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        std::fs::rename(&tmp, &link).with_context(|| format!("cannot place {}", link.display()))?;
    }
    Ok(link)
}

/// The session config of a context compile. The model is opened from memory with its
/// external-data folder given (`model_dir`), so nothing the QNN EP derives from the model's
/// path (its graph and partition names carry a hash of it) depends on the checkout's path.
pub fn context_session_config(wrapper: &str, model_dir: &str) -> Vec<(String, String)> {
    vec![
        ("ep.context_enable".into(), "1".into()),
        ("ep.context_embed_mode".into(), "0".into()),
        ("ep.context_file_path".into(), wrapper.into()),
        ("session.disable_cpu_ep_fallback".into(), "1".into()),
        (
            "session.model_external_initializers_file_folder_path".into(),
            model_dir.into(),
        ),
    ]
}
