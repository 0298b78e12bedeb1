//! Atomic file writes: write to a temporary name in the same folder, then rename, so a reader
//! (or an interrupted run) never sees a half-written file in place of a good one.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().context("path has no parent folder")?;
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    tmp.as_file().sync_all()?;
    set_readable(tmp.path())?;
    tmp.persist(path)
        .with_context(|| format!("cannot rename into {}", path.display()))?;
    Ok(())
}

/// Moves a finished file into place (same filesystem), replacing the old one in one step.
pub fn move_into_place(from: &Path, to: &Path) -> Result<()> {
    if let Some(dir) = to.parent() {
        fs::create_dir_all(dir)?;
    }
    set_readable(from)?;
    fs::rename(from, to)
        .with_context(|| format!("cannot move {} to {}", from.display(), to.display()))
}

/// Temporary files are created 0600; artifacts and reports are ordinary 0644 files.
pub fn set_readable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o644))
        .with_context(|| format!("cannot set permissions of {}", path.display()))
}

/// Takes an exclusive lock on `path` (created if needed); a second holder waits, saying why.
/// The lock is released when the returned file is dropped (or the process dies).
pub fn lock_file(path: &Path, what: &str) -> Result<fs::File> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("cannot open the lock {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(fs::TryLockError::WouldBlock) => {
            crate::errln!(
                "another {what} holds {}; waiting for it to finish ...",
                path.display()
            );
            file.lock()
                .with_context(|| format!("cannot lock {}", path.display()))?;
            Ok(file)
        }
        Err(fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("cannot lock {}", path.display()))
        }
    }
}

/// Removes the folders named `<prefix>*` in `dir` that killed runs left behind; call it only
/// while holding the lock that guards them, so none of them is in use.
pub fn remove_leftovers(dir: &Path, prefix: &str) -> Result<Vec<String>> {
    let mut removed = Vec::new();
    for entry in fs::read_dir(dir)?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(prefix) && entry.path().is_dir() {
            fs::remove_dir_all(entry.path())
                .with_context(|| format!("cannot remove {}", entry.path().display()))?;
            removed.push(name);
        }
    }
    Ok(removed)
}
