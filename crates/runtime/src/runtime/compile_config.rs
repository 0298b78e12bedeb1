//! How a context compile opens its model: the session config (EPContext output, no CPU
//! fallback) and a checkout-independent external-data folder, so the binaries a build makes do
//! not depend on where the project lives.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The folder ORT resolves the model's external data in, named so that it does not depend on
/// the checkout: ORT hashes this path into the QNN graph and partition names, so a symlink at
/// `<tmp>/xtask-onnx-<digest>` points at the real folder, the digest covering the graph bytes
/// and the external files' names and sizes (same name ⇒ same files to read).
///
/// The link lives only while a compile uses it (the guard removes it), so nothing is left in
/// the system temp folder. Several processes may compile the same graph at once (from other
/// checkouts: the files behind the link are the same by its digest); each holds a shared
/// `flock` on `<tmp>/xtask-onnx-<digest>.lock` while it compiles, and the last one out, the one
/// that gets the lock exclusively, removes the link and then the lock file. A process that
/// opened a lock file being removed finds its inode no longer at the path and opens it again.
pub(super) struct StableModelDir {
    pub path: PathBuf,
    lock: std::fs::File,
    lock_path: PathBuf,
}

pub(super) fn stable_model_dir(model: &Path) -> Result<StableModelDir> {
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
    let tmp = std::env::temp_dir();
    let link = tmp.join(format!("xtask-onnx-{}", &id[..24]));
    let lock_path = tmp.join(format!("xtask-onnx-{}.lock", &id[..24]));
    let lock = shared_lock(&lock_path)?;
    if std::fs::read_link(&link).ok().as_deref() != Some(dir.as_path()) {
        let staged = tmp.join(format!(".xtask-onnx-{}-{}", &id[..24], std::process::id()));
        let _ = std::fs::remove_file(&staged);
        std::os::unix::fs::symlink(&dir, &staged)
            .with_context(|| format!("cannot create {}", staged.display()))?;
        if let Err(e) = std::fs::rename(&staged, &link) {
            let _ = std::fs::remove_file(&staged);
            return Err(e).with_context(|| {
                format!(
                    "cannot place {} (another user's? set TMPDIR to a folder of your own)",
                    link.display()
                )
            });
        }
    }
    Ok(StableModelDir {
        path: link,
        lock,
        lock_path,
    })
}

/// A shared lock on `path`, on the file that is at `path` once locked (a file the last user
/// removed while this process waited is not the lock anymore: open the path again).
fn shared_lock(path: &Path) -> Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    loop {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        // SAFETY: flock on an fd this process owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH) } != 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("cannot lock {}", path.display()));
        }
        let held = file.metadata()?.ino();
        if std::fs::metadata(path).is_ok_and(|m| m.ino() == held) {
            return Ok(file);
        }
    }
}

impl Drop for StableModelDir {
    /// The last user removes the link, then the lock file (a new user arriving in between
    /// waits on the old lock, finds it removed, and starts over).
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on an fd this process owns.
        let last =
            unsafe { libc::flock(self.lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
        if last {
            let _ = std::fs::remove_file(&self.path);
            let _ = std::fs::remove_file(&self.lock_path);
        }
    }
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
