//! The hardened bundle reader, shared by `fetch`, `verify`, `package` and `release`. A bundle
//! may come from a download, so nothing in it is trusted before it is checked:
//!
//! - a manifest path must be relative and normalised (no `/` at the start, no empty, `.` or
//!   `..` part, no backslash or control character), so it can only name a file inside;
//! - every entry of the bundle folder must be a regular file or a folder: a symlink, FIFO,
//!   socket or device is refused by name (`symlink_metadata`, links are never followed);
//! - files are opened part by part with `O_NOFOLLOW` (`openat`), so a link anywhere on the way
//!   fails instead of leading outside, and a FIFO cannot block the open (`O_NONBLOCK`);
//! - errors name the path in the bundle and what is wrong, never anything about the file a
//!   link or an absolute path points at (no size, hash or existence of a host file).

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use anyhow::{Context, Result, bail};

/// Why a manifest path is unsafe, or None when it names a file inside the bundle.
pub fn unsafe_path(rel: &str) -> Option<&'static str> {
    if rel.is_empty() {
        return Some("it is empty");
    }
    if rel.starts_with('/') {
        return Some("it is absolute");
    }
    if rel.chars().any(|c| c == '\\' || c.is_control()) {
        return Some("it holds a backslash or a control character");
    }
    if rel.split('/').any(|p| p == "..") {
        return Some("it climbs out with `..`");
    }
    if rel.split('/').any(|p| p.is_empty() || p == ".") {
        return Some("it is not normalised (empty or `.` part)");
    }
    None
}

/// What a walk of the bundle folder found, links never followed.
#[derive(Debug, Default)]
pub struct Scan {
    /// Every regular file, by its path in the bundle (`/`-separated), with its size.
    pub files: BTreeMap<String, u64>,
    /// Every entry that is neither a regular file nor a folder, with what it is.
    pub refused: BTreeMap<String, &'static str>,
}

impl Scan {
    /// One line per refused entry, for error lists.
    pub fn refusals(&self) -> Vec<String> {
        self.refused
            .iter()
            .map(|(rel, kind)| {
                format!(
                    "not a regular file: {rel} is {kind} (a bundle holds only files and folders)"
                )
            })
            .collect()
    }
}

fn kind_of(ft: &fs::FileType) -> &'static str {
    if ft.is_symlink() {
        "a symbolic link"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_block_device() || ft.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// Walks `dir` (the folder itself may be reached through a link the user named), recording
/// every regular file and refusing everything else; links are listed, never entered.
pub fn scan(dir: &Path) -> Result<Scan> {
    if !fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
        bail!("{} is not a folder", dir.display());
    }
    let mut out = Scan::default();
    let mut pending = vec![String::new()];
    while let Some(prefix) = pending.pop() {
        let here = if prefix.is_empty() {
            dir.to_path_buf()
        } else {
            dir.join(&prefix)
        };
        let entries =
            fs::read_dir(&here).with_context(|| format!("cannot list {}", here.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("cannot list {}", here.display()))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                let rel = format!("{prefix}{}", name.to_string_lossy());
                out.refused.insert(rel, "a name that is not UTF-8");
                continue;
            };
            let rel = format!("{prefix}{name}");
            let meta = fs::symlink_metadata(entry.path())
                .with_context(|| format!("cannot inspect {rel} in the bundle"))?;
            let ft = meta.file_type();
            if ft.is_dir() {
                pending.push(format!("{rel}/"));
            } else if ft.is_file() {
                out.files.insert(rel, meta.len());
            } else {
                out.refused.insert(rel, kind_of(&ft));
            }
        }
    }
    Ok(out)
}

/// Opens `rel` inside `dir` for reading, one path part at a time with `O_NOFOLLOW`: a link at
/// any depth fails, and the result must be a regular file. The error says only that.
pub fn open(dir: &Path, rel: &str) -> Result<File> {
    if let Some(why) = unsafe_path(rel) {
        bail!("{rel:?} is not a path inside the bundle: {why}");
    }
    open_parts(dir, rel).map_err(|e| {
        anyhow::anyhow!(
            "{rel}: cannot be opened as a regular file inside the bundle ({})",
            brief(&e)
        )
    })
}

/// The OS error kind without any path (the message may be shown for a hostile entry).
fn brief(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ELOOP) => "a symbolic link is on its way".into(),
        Some(libc::ENOTDIR) => "a part of it is not a folder".into(),
        Some(libc::ENOENT) => "missing".into(),
        _ => e.kind().to_string(),
    }
}

fn open_parts(dir: &Path, rel: &str) -> io::Result<File> {
    let mut fd: OwnedFd = File::open(dir)?.into();
    let parts: Vec<&str> = rel.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let name = CString::new(*part).map_err(io::Error::other)?;
        let flags = libc::O_RDONLY
            | libc::O_NOFOLLOW
            | libc::O_CLOEXEC
            | if last {
                libc::O_NONBLOCK
            } else {
                libc::O_DIRECTORY
            };
        // SAFETY: `fd` is an open descriptor and `name` a NUL-terminated string.
        let raw = unsafe { libc::openat(fd.as_raw_fd(), name.as_ptr(), flags) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `openat` returned a new descriptor that nothing else owns.
        fd = unsafe { OwnedFd::from_raw_fd(raw) };
    }
    let file = File::from(fd);
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    Ok(file)
}

/// A small bundle file (manifest, report, card, wrapper), read whole; larger ones are refused.
pub fn read_small(dir: &Path, rel: &str) -> Result<Vec<u8>> {
    const LIMIT: u64 = 256 << 20;
    let file = open(dir, rel)?;
    let mut bytes = Vec::new();
    file.take(LIMIT + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {rel} in the bundle"))?;
    if bytes.len() as u64 > LIMIT {
        bail!("{rel} in the bundle is larger than {} MB", LIMIT >> 20);
    }
    Ok(bytes)
}

/// A versioned record in the bundle (`record::from_slice` on `read_small`'s bytes, named by
/// its path in messages), or None when the bundle has no entry at `rel`. `rebuild` is the
/// command that writes it again.
pub fn read_record<T: xtask_base::record::Versioned>(
    dir: &Path,
    rel: &str,
    rebuild: &str,
) -> Result<Option<T>> {
    if unsafe_path(rel).is_none() && !has_entry(dir, rel) {
        return Ok(None);
    }
    let bytes = read_small(dir, rel)?;
    xtask_base::record::from_slice(&bytes, &dir.join(rel).display().to_string(), rebuild).map(Some)
}

/// Whether the bundle holds an entry at `rel`, one part at a time and links never followed: a
/// link or any other non-folder on the way counts as an entry (`open` then refuses it), so
/// nothing about what a link points at decides the answer.
fn has_entry(dir: &Path, rel: &str) -> bool {
    let mut here = dir.to_path_buf();
    for part in rel.split('/') {
        here.push(part);
        match fs::symlink_metadata(&here) {
            Err(_) => return false,
            Ok(m) if !m.is_dir() => return true,
            Ok(_) => {}
        }
    }
    true
}

/// Streams `from` into `to` (when given) while hashing; returns the sha256 and the byte count.
fn stream(from: &mut File, to: Option<&mut File>) -> io::Result<(String, u64)> {
    let (total, sha) = match to {
        Some(out) => xtask_base::hashing::copy_hashed(from, out)?,
        None => xtask_base::hashing::copy_hashed(from, &mut io::sink())?,
    };
    Ok((sha, total))
}

/// sha256 of a bundle file, opened as `open` does.
pub fn sha256(dir: &Path, rel: &str) -> Result<String> {
    let mut file = open(dir, rel)?;
    let (sha, _) = stream(&mut file, None).with_context(|| format!("cannot read {rel}"))?;
    Ok(sha)
}

/// Copies bundle file `rel` to the new file `to` (created, never followed or overwritten),
/// hashing what is copied: the copy must be the bytes the manifest lists (`want`, when given),
/// else it is removed. Returns the sha256 of what was copied.
pub fn copy_out(dir: &Path, rel: &str, to: &Path, want: Option<&str>) -> Result<String> {
    let mut from = open(dir, rel)?;
    let mut out = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(to)
        .with_context(|| format!("cannot create {}", to.display()))?;
    let copied = stream(&mut from, Some(&mut out)).and_then(|r| out.sync_all().map(|_| r));
    let problem = match (&copied, want) {
        (Err(e), _) => Some(format!("cannot copy {rel}: {e}")),
        (Ok((sha, _)), Some(want)) if sha != want => Some(format!(
            "{rel} changed while it was copied (sha256 {sha}, manifest says {want})"
        )),
        _ => None,
    };
    if let Some(problem) = problem {
        let _ = fs::remove_file(to);
        bail!("{problem}");
    }
    Ok(copied.map(|(sha, _)| sha).unwrap_or_default())
}

#[cfg(test)]
#[path = "reader_tests.rs"]
mod tests;
