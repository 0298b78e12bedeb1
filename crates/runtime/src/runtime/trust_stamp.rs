//! Re-hashing the runtime's libraries before each use, cheaply: a file whose full sha256 was
//! checked is remembered by its inode, size and change time (`trusted.json` beside the
//! runtime's manifest). The next command trusts that check while all three are unchanged and
//! re-hashes the file otherwise.
//!
//! Why ctime and not mtime: `touch -d` or `File::set_modified` can put a file's mtime back
//! after it was edited, but its ctime is set by the kernel on every write, rename or chmod and
//! cannot be set from user space. A library edited in place with its size and mtime kept has a
//! new ctime, so it is hashed again and named. A stamp that cannot be read is ignored (every
//! file is hashed, as the first time).

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::wheels::RuntimeFile;
use xtask_base::hashing::sha256_file;

/// The stamp's file name inside the runtime folder.
pub const STAMP: &str = "trusted.json";

/// What identifies a file's bytes as unchanged since it was hashed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Seen {
    ino: u64,
    dev: u64,
    bytes: u64,
    ctime: i64,
    ctime_nsec: i64,
    sha256: String,
}

impl Seen {
    fn of(meta: &std::fs::Metadata, sha256: &str) -> Seen {
        Seen {
            ino: meta.ino(),
            dev: meta.dev(),
            bytes: meta.size(),
            ctime: meta.ctime(),
            ctime_nsec: meta.ctime_nsec(),
            sha256: sha256.to_string(),
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Stamp {
    files: BTreeMap<String, Seen>,
}

/// The files this process checked against their pinned sha256 (canonical path → sha256):
/// what needs a library's content hash (the build cache's key) takes it from here instead of
/// hashing hundreds of MB again.
static VERIFIED: std::sync::Mutex<BTreeMap<std::path::PathBuf, String>> =
    std::sync::Mutex::new(BTreeMap::new());

/// The sha256 of `path` when this process checked it against its pin (None: never checked,
/// such as a library the user brought).
pub fn verified_sha256(path: &Path) -> Option<String> {
    let real = std::fs::canonicalize(path).ok()?;
    let map = VERIFIED.lock().unwrap_or_else(|e| e.into_inner());
    map.get(&real).cloned()
}

fn remember(path: &Path, sha256: &str) {
    if let Ok(real) = std::fs::canonicalize(path) {
        let mut map = VERIFIED.lock().unwrap_or_else(|e| e.into_inner());
        map.insert(real, sha256.to_string());
    }
}

/// What a check found: how many files were hashed (the rest were trusted), and each file whose
/// bytes are not the recorded ones.
pub struct Checked {
    pub hashed: usize,
    pub trusted: usize,
    pub mismatched: Vec<String>,
}

/// Checks every listed file of `dir`: trusted when the stamp saw it with the same inode, size
/// and ctime and the sha256 `files` records, else re-hashed. `full` ignores the stamp. The
/// stamp is rewritten (create and rename) with the files that matched.
pub fn check(dir: &Path, files: &[RuntimeFile], full: bool) -> Result<Checked> {
    let stamp_path = dir.join(STAMP);
    let old: Stamp = match full {
        true => Stamp::default(),
        false => std::fs::read(&stamp_path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default(),
    };
    let mut new = Stamp::default();
    let mut checked = Checked {
        hashed: 0,
        trusted: 0,
        mismatched: Vec::new(),
    };
    for f in files {
        let path = dir.join(&f.path);
        // Never through a link: the manifest lists the files the wheels held, all plain.
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_file() => m,
            Ok(_) => {
                checked
                    .mismatched
                    .push(format!("{} is not a plain file", f.path));
                continue;
            }
            Err(_) => {
                checked.mismatched.push(format!("{} is missing", f.path));
                continue;
            }
        };
        let before = Seen::of(&meta, &f.sha256);
        if old.files.get(&f.path) == Some(&before) {
            checked.trusted += 1;
            remember(&path, &f.sha256);
            new.files.insert(f.path.clone(), before);
            continue;
        }
        let sha = sha256_file(&path)?;
        checked.hashed += 1;
        // Hashed, then stat'ed again: a file changed while it was read is not stamped.
        let after = std::fs::symlink_metadata(&path).map(|m| Seen::of(&m, &f.sha256));
        if sha != f.sha256 {
            checked.mismatched.push(format!(
                "{} has sha256 {sha}, {} when unpacked",
                f.path, f.sha256
            ));
        } else {
            remember(&path, &f.sha256);
            if after.as_ref().ok() == Some(&before) {
                new.files.insert(f.path.clone(), before);
            }
        }
    }
    if checked.hashed > 0 || full {
        // A stamp that cannot be written costs the next command a full hash, nothing more.
        let _ = xtask_base::atomic::write_atomic(&stamp_path, &serde_json::to_vec_pretty(&new)?);
    }
    Ok(checked)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(dir: &Path, name: &str, bytes: &[u8]) -> RuntimeFile {
        std::fs::write(dir.join(name), bytes).unwrap();
        RuntimeFile {
            path: name.into(),
            bytes: bytes.len() as u64,
            sha256: xtask_base::hashing::sha256_bytes(bytes),
        }
    }

    #[test]
    fn a_file_edited_with_its_size_and_mtime_kept_is_hashed_again_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let files = vec![listed(dir.path(), "libQnnHtp.so", b"0123456789")];
        let first = check(dir.path(), &files, false).unwrap();
        assert_eq!((first.hashed, first.trusted), (1, 0));
        let again = check(dir.path(), &files, false).unwrap();
        assert_eq!((again.hashed, again.trusted), (0, 1));

        let lib = dir.path().join("libQnnHtp.so");
        let mtime = std::fs::metadata(&lib).unwrap().modified().unwrap();
        std::fs::write(&lib, b"0123456780").unwrap();
        let f = std::fs::File::options().write(true).open(&lib).unwrap();
        f.set_modified(mtime).unwrap();
        drop(f);
        let edited = check(dir.path(), &files, false).unwrap();
        assert_eq!(edited.hashed, 1);
        assert_eq!(edited.mismatched.len(), 1, "{:?}", edited.mismatched);
        assert!(edited.mismatched[0].starts_with("libQnnHtp.so has sha256"));
        // And it stays named: a mismatch is never stamped.
        let still = check(dir.path(), &files, false).unwrap();
        assert_eq!(still.mismatched.len(), 1);
    }

    #[test]
    fn a_link_in_place_of_a_library_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let files = vec![listed(dir.path(), "libQnnCpu.so", b"abc")];
        std::fs::rename(dir.path().join("libQnnCpu.so"), dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("libQnnCpu.so"))
            .unwrap();
        let c = check(dir.path(), &files, false).unwrap();
        assert_eq!(c.mismatched, vec!["libQnnCpu.so is not a plain file"]);
    }
}
