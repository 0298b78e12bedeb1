//! sha256 of files and bytes, plus a content-hash memo keyed by (path, size, mtime) so a large
//! ONNX file is hashed once per content, like cargo's mtime shortcut in front of a content check.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn sha256_bytes(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Streams the file through sha256 (never holds a multi-GB file in memory).
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut file =
        fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let (_, sha) = copy_hashed(&mut file, &mut std::io::sink())
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(sha)
}

/// Streams `src` into `dst` in 1 MiB blocks, hashing what passes: (bytes, sha256). The one
/// streaming hash of the tool (`io::sink()` as `dst` only hashes); callers add which file.
pub fn copy_hashed(src: &mut impl Read, dst: &mut impl Write) -> std::io::Result<(u64, String)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = src.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        dst.write_all(&buf[..n])?;
        total += n as u64;
    }
    Ok((total, hex(&hasher.finalize())))
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    size: u64,
    mtime_ns: u128,
    sha256: String,
}

/// Remembers file hashes by path, size and mtime; a changed size or mtime forces a re-hash.
/// The memo is only the speed-up of ordinary incremental builds: a file edited in place with
/// its size and mtime restored fools it, so release-grade checks (`package`, `verify`,
/// `--require-fresh`, HTP loads) use [`HashMemo::full`], which re-hashes every file.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct HashMemo {
    entries: BTreeMap<PathBuf, Stamp>,
    #[serde(skip)]
    dirty: bool,
    /// Never trust (size, mtime) from earlier runs: hash each file's content once per run.
    #[serde(skip)]
    full: bool,
    #[serde(skip)]
    hashed_this_run: BTreeMap<PathBuf, String>,
}

impl HashMemo {
    /// Where a project keeps its memo (shared by builds, the conformance sweep and lint).
    pub fn path_in(root: &Path) -> std::path::PathBuf {
        crate::project::scratch_dir(root, "xtask-hash-memo.json")
    }

    /// A memo that re-hashes every file it is asked about (nothing is taken on trust).
    pub fn full() -> Self {
        HashMemo {
            full: true,
            ..HashMemo::default()
        }
    }

    pub fn load(path: &Path) -> Self {
        fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        if !self.dirty || self.full {
            return Ok(());
        }
        crate::atomic::write_atomic(path, &serde_json::to_vec(self)?)
    }

    pub fn sha256(&mut self, path: &Path) -> Result<String> {
        let meta =
            fs::metadata(path).with_context(|| format!("missing file {}", path.display()))?;
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        if self.full {
            if let Some(sha) = self.hashed_this_run.get(path) {
                return Ok(sha.clone());
            }
            let sha = sha256_file(path)?;
            self.hashed_this_run.insert(path.to_path_buf(), sha.clone());
            return Ok(sha);
        }
        if let Some(stamp) = self.entries.get(path)
            && stamp.size == meta.len()
            && stamp.mtime_ns == mtime_ns
        {
            return Ok(stamp.sha256.clone());
        }
        let sha256 = sha256_file(path)?;
        let stamp = Stamp {
            size: meta.len(),
            mtime_ns,
            sha256: sha256.clone(),
        };
        self.entries.insert(path.to_path_buf(), stamp);
        self.dirty = true;
        Ok(sha256)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_known_bytes() {
        assert_eq!(
            sha256_bytes(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn memo_rehashes_when_content_changes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        fs::write(&p, b"one").unwrap();
        let mut memo = HashMemo::default();
        let a = memo.sha256(&p).unwrap();
        fs::write(&p, b"two!").unwrap();
        let b = memo.sha256(&p).unwrap();
        assert_ne!(a, b);
        assert_eq!(b, sha256_bytes(b"two!"));
    }

    #[test]
    fn an_edit_with_size_and_mtime_restored_fools_the_memo_but_not_a_full_check() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.bin");
        fs::write(&p, b"good bytes").unwrap();
        let mtime = fs::metadata(&p).unwrap().modified().unwrap();
        let mut memo = HashMemo::default();
        let good = memo.sha256(&p).unwrap();
        fs::write(&p, b"evil bytes").unwrap();
        fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        assert_eq!(memo.sha256(&p).unwrap(), good, "the shortcut is fooled");
        assert_eq!(
            HashMemo::full().sha256(&p).unwrap(),
            sha256_bytes(b"evil bytes")
        );
    }
}
