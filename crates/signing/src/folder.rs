//! Walking a model folder and hashing its files, streaming.
//!
//! As `model_signing/_serialization/file.py` and `serialization.py` do: every
//! entry under the folder (the folder itself included, ignored paths included) is
//! checked: a symlink is refused (the reference's default, without
//! `--allow_symlinks`), and so is anything neither a regular file nor a directory.
//! Regular files not under an ignored path are hashed with SHA-256. An ignored path
//! is relative to the folder and covers itself and everything below it
//! (`PurePath.is_relative_to`), so `.git` ignores `.git/HEAD` but not `sub/.git`.
//! Names are `/`-joined relative paths, which must be UTF-8 to go into JSON.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::{Component, Path};

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use walkdir::WalkDir;

use crate::keys::hex;

/// The paths the reference ignores by default when signing into `model.sig`
/// (the git paths of `hashing.Config`, plus the signature file itself, which the
/// CLI adds), in the order this crate writes them into `ignore_paths`.
pub const DEFAULT_IGNORE_PATHS: [&str; 5] = [
    ".git",
    ".gitattributes",
    ".github",
    ".gitignore",
    "model.sig",
];

/// The git paths a reference verifier always ignores (`ignore_git_paths` defaults to true).
pub(crate) const GIT_IGNORE_PATHS: [&str; 4] = [".git", ".gitattributes", ".github", ".gitignore"];

/// Read size for streaming hashes: the reference's default chunk (1 MiB).
const CHUNK: usize = 1 << 20;

/// Paths to leave out, each as its list of components.
#[derive(Clone, Debug, Default)]
pub(crate) struct IgnoreList {
    prefixes: Vec<Vec<String>>,
}

impl IgnoreList {
    /// Absolute paths are dropped, as the reference drops those not under the
    /// model folder; `.` and empty components vanish as in `PurePosixPath`.
    pub(crate) fn new<'a>(paths: impl IntoIterator<Item = &'a str>) -> Self {
        let mut list = Self::default();
        for p in paths {
            list.add(p);
        }
        list
    }

    pub(crate) fn add(&mut self, path: &str) {
        if path.starts_with('/') {
            return;
        }
        let parts = path
            .split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .map(str::to_string)
            .collect();
        self.prefixes.push(parts);
    }

    /// Whether the relative `/`-separated `name` is an ignored path or lies under one.
    pub(crate) fn ignores(&self, name: &str) -> bool {
        let parts: Vec<&str> = name.split('/').collect();
        self.prefixes.iter().any(|prefix| {
            prefix.len() <= parts.len() && prefix.iter().zip(&parts).all(|(a, b)| a == b)
        })
    }
}

/// Hashes every regular file under `folder` not under `ignore`: relative name → sha256 hex.
pub(crate) fn hash_folder_with(
    folder: &Path,
    ignore: &IgnoreList,
) -> Result<BTreeMap<String, String>> {
    let meta = std::fs::symlink_metadata(folder)
        .with_context(|| format!("reading the model folder {}", folder.display()))?;
    if meta.file_type().is_symlink() {
        bail!(
            "the model folder {} is a symlink: model_signing refuses symlinks; pass the real folder",
            folder.display()
        );
    }
    if !meta.is_dir() {
        bail!("{} is not a directory", folder.display());
    }
    let mut digests = BTreeMap::new();
    let mut buffer = vec![0u8; CHUNK];
    for entry in WalkDir::new(folder).follow_links(false).sort_by_file_name() {
        let entry =
            entry.with_context(|| format!("walking the model folder {}", folder.display()))?;
        let kind = entry.file_type();
        let path = entry.path();
        if kind.is_symlink() {
            bail!(
                "{} is a symlink: model_signing refuses symlinks (it would sign the target's bytes under the link's name); replace it with the file itself",
                path.display()
            );
        }
        if kind.is_dir() {
            continue;
        }
        if !kind.is_file() {
            bail!(
                "{} is neither a regular file nor a directory (socket, pipe or device): model_signing refuses it",
                path.display()
            );
        }
        let name = relative_name(folder, path)?;
        if ignore.ignores(&name) {
            continue;
        }
        let digest = sha256_file_with(path, &mut buffer)?;
        digests.insert(name, digest);
    }
    Ok(digests)
}

/// Streams a file through SHA-256; returns lowercase hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    sha256_file_with(path, &mut vec![0u8; CHUNK])
}

fn sha256_file_with(path: &Path, buffer: &mut [u8]) -> Result<String> {
    let mut file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut hasher = Sha256::new();
    loop {
        match file.read(buffer) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buffer[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }
    Ok(hex(&hasher.finalize()))
}

/// `path` relative to `folder`, components joined by `/`.
pub(crate) fn relative_name(folder: &Path, path: &Path) -> Result<String> {
    let rel = path
        .strip_prefix(folder)
        .with_context(|| format!("{} is not under {}", path.display(), folder.display()))?;
    let mut parts = Vec::new();
    for component in rel.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str().with_context(|| {
                format!(
                    "the file name {} is not UTF-8, so it cannot be named in a signature",
                    path.display()
                )
            })?),
            other => bail!("unexpected path component {other:?} in {}", path.display()),
        }
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignore_list_matches_whole_components() {
        let ignore = IgnoreList::new(DEFAULT_IGNORE_PATHS);
        assert!(ignore.ignores(".git"));
        assert!(ignore.ignores(".git/objects/ab"));
        assert!(ignore.ignores("model.sig"));
        assert!(!ignore.ignores("sub/.git"));
        assert!(!ignore.ignores(".gitx"));
        assert!(!ignore.ignores("model.sig.bak"));
        let odd = IgnoreList::new(["./docs/", "/abs", "a/../b"]);
        assert!(odd.ignores("docs/x"));
        assert!(!odd.ignores("abs"));
        assert!(!odd.ignores("b"));
    }

    #[test]
    fn hashes_stream_and_skip_ignored() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/HEAD"), "ref").unwrap();
        std::fs::write(dir.path().join("model.sig"), "{}").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/a"), "abc").unwrap();
        let big = vec![7u8; CHUNK * 2 + 5];
        std::fs::write(dir.path().join("big"), &big).unwrap();
        let got = hash_folder_with(dir.path(), &IgnoreList::new(DEFAULT_IGNORE_PATHS)).unwrap();
        assert_eq!(got.keys().collect::<Vec<_>>(), ["big", "sub/a"]);
        assert_eq!(
            got["sub/a"],
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(got["big"], hex(&Sha256::digest(&big)));
    }

    #[test]
    fn symlinks_are_refused_by_path_even_when_ignored() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join("a"), "x").unwrap();
        std::os::unix::fs::symlink("../a", dir.path().join(".git/link")).unwrap();
        let err = format!(
            "{:#}",
            hash_folder_with(dir.path(), &IgnoreList::new(DEFAULT_IGNORE_PATHS)).unwrap_err()
        );
        assert!(
            err.contains(".git/link") && err.contains("symlink"),
            "{err}"
        );
    }
}
