//! File operations inside the cache that never follow a link. A cache folder is shared (CI's
//! cache action, a synced folder, other users), so anything in it may have been replaced by a
//! symbolic link to a file elsewhere; writing through such a link would let a cache entry
//! overwrite that file. So: every folder and file the cache uses is checked with
//! `symlink_metadata` (a link is refused, never resolved); nothing that exists is opened for
//! writing: new content is written to a fresh file under `tmp/` (created exclusively) and
//! renamed over its name, and `rename` replaces a link rather than following it.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// What is at `path`, without following a link.
#[derive(Debug, PartialEq, Eq)]
pub enum Kind {
    Missing,
    File(u64),
    Dir,
    /// A symbolic link or anything else (a socket, a device): never used.
    Other,
}

pub fn kind(path: &Path) -> Kind {
    match fs::symlink_metadata(path) {
        Err(_) => Kind::Missing,
        Ok(m) if m.file_type().is_file() => Kind::File(m.len()),
        Ok(m) if m.file_type().is_dir() => Kind::Dir,
        Ok(_) => Kind::Other,
    }
}

/// Creates the folder `path` (its parent must exist and be checked already), or accepts the
/// real folder already there; a link or a file in its place is refused.
pub fn ensure_dir(path: &Path) -> Result<()> {
    match kind(path) {
        Kind::Dir => Ok(()),
        Kind::Missing => match fs::create_dir(path) {
            Ok(()) => Ok(()),
            // Another build created it meanwhile: check what it is.
            Err(_) if kind(path) == Kind::Dir => Ok(()),
            Err(e) => {
                Err(e).with_context(|| format!("cannot create the folder {}", path.display()))
            }
        },
        _ => bail!(
            "{} is a link or a file, not a folder: the cache does not follow links",
            path.display()
        ),
    }
}

/// Opens an existing regular file for reading, refusing a link (`O_NOFOLLOW`).
pub fn open_read(path: &Path) -> Result<fs::File> {
    if let k @ (Kind::Dir | Kind::Other) = kind(path) {
        bail!("{} is not a regular file ({k:?})", path.display());
    }
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))
}

/// A new, exclusively created file in `tmp` (removed when dropped unless persisted).
pub fn temp_file(tmp: &Path) -> Result<tempfile::NamedTempFile> {
    tempfile::Builder::new()
        .prefix(".tmp-")
        .tempfile_in(tmp)
        .with_context(|| format!("cannot create a temporary file in {}", tmp.display()))
}

/// Writes `bytes` as `dest` by create-and-rename (synced first): readers see the old file or
/// the new one, never a part, and a link at `dest` is replaced, not followed.
pub fn write_replace(tmp: &Path, dest: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = temp_file(tmp)?;
    f.write_all(bytes)
        .and_then(|()| f.as_file().sync_all())
        .with_context(|| format!("cannot write {}", f.path().display()))?;
    persist(f, dest)
}

/// Renames a finished temporary file onto `dest` (replacing whatever is there, link or not).
pub fn persist(f: tempfile::NamedTempFile, dest: &Path) -> Result<()> {
    if kind(dest) == Kind::Dir {
        bail!("{} is a folder: not replaced", dest.display());
    }
    f.persist(dest)
        .map(drop)
        .map_err(|e| e.error)
        .with_context(|| format!("cannot place {}", dest.display()))
}

/// Copies `from` into a new temporary file in `tmp`, hashing what was read; synced.
/// Returns the file, its size and its sha256.
pub fn copy_to_temp(from: &Path, tmp: &Path) -> Result<(tempfile::NamedTempFile, u64, String)> {
    let mut dst = temp_file(tmp)?;
    let (n, sha) = copy_hashed(&mut open_read(from)?, dst.as_file_mut(), from)?;
    dst.as_file()
        .sync_all()
        .with_context(|| format!("cannot sync {}", dst.path().display()))?;
    Ok((dst, n, sha))
}

/// Copies a stored file out of the cache into a new file `to` (outside the cache, in a
/// staging folder), hashing what was read. Returns (bytes, sha256).
pub fn copy_out(from: &Path, to: &Path) -> Result<(u64, String)> {
    let mut dst = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)
        .with_context(|| format!("cannot create {}", to.display()))?;
    let out = copy_hashed(&mut open_read(from)?, &mut dst, from)?;
    dst.sync_all()?;
    Ok(out)
}

/// The size and sha256 of a stored file (read without following a link).
pub fn hash_file(path: &Path) -> Result<(u64, String)> {
    copy_hashed(&mut open_read(path)?, &mut std::io::sink(), path)
}

fn copy_hashed(src: &mut impl Read, dst: &mut impl Write, from: &Path) -> Result<(u64, String)> {
    xtask_base::hashing::copy_hashed(src, dst)
        .with_context(|| format!("cannot copy {}", from.display()))
}

/// Marks `blob` used now without writing through a link: its mtime is set on a descriptor
/// opened with `O_NOFOLLOW` (a concurrent `gc` keeps blobs younger than an hour). Best effort.
pub fn freshen(path: &Path) {
    if let Ok(f) = open_read(path) {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
}

/// Removes a file or folder inside the cache: renamed out of the way first (readers see it
/// gone at once), then deleted. `remove_dir_all` does not follow links.
pub fn remove(tmp: &Path, path: &Path) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let trash: PathBuf = tmp.join(format!(".tmp-removed-{name}-{}", std::process::id()));
    fs::rename(path, &trash).with_context(|| format!("cannot remove {}", path.display()))?;
    match kind(&trash) {
        Kind::Dir => fs::remove_dir_all(&trash)?,
        _ => fs::remove_file(&trash)?,
    }
    Ok(())
}

/// The modification time of `path` itself (a link's own, never its target's), Unix seconds.
pub fn mtime(path: &Path) -> Option<u64> {
    fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs())
}
