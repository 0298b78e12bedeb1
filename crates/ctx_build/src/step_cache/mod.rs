//! A content-addressed cache of build steps, shared by checkouts, models, machines and CI
//! runs. A step's key is the content of what it depends on (inputs, rendered options, the
//! toolchain's identity, the tool's own source hash; see `ctx_build::fingerprint`), never a
//! model name or a path, so two models or two checkouts that share inputs share entries.
//!
//! It is an explicit opt-in (`build-ctx --cache DIR` or `XTASK_CACHE_DIR`), the one place
//! outside the project this tool writes to besides `XTASK_DATA_ROOT`. The cache is just a
//! folder: sync it, mount it or hand it to CI's cache action.
//!
//! Layout (`DIR/xtask-steps-v2/`):
//! - `blobs/<sha256>`: every stored file, once, named by its content's hash; two entries with
//!   the same binary (two models sharing a component) cost its bytes once.
//! - `entries/<key>.json`: one step's record and the blobs of its outputs, by role (the i-th
//!   output of the step), with the names and paths of the build that stored it; they are
//!   mapped onto the restoring build's own (`names`).
//! - `entries/<key>.used`: its last use (the stamp's mtime orders eviction).
//! - `tmp/`: files being written; each is renamed into place once complete and synced, so a
//!   killed writer leaves only a `tmp/.tmp-*` file.
//!
//! Nothing in the cache is followed through a link or written in place (`safe`). Restoring
//! re-hashes every byte; a mismatch is a warning and the step builds and replaces the entry.
//! Failing to store is a warning: the cache is an optimisation, the build's result stands.

pub mod entry;
pub mod gc;
pub mod names;
pub mod safe;
pub mod verify;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The environment variable that opts a build into a cache folder (like `--cache`).
pub const CACHE_ENV: &str = "XTASK_CACHE_DIR";

/// The environment variable of the size cap applied after a build (like `--cache-max-size`).
pub const MAX_SIZE_ENV: &str = "XTASK_CACHE_MAX_SIZE";

/// The size cap when none is given: room for the full-width model's entries for two SoCs
/// (~9 GiB of binaries and DLCs each) and the tiny models, on any developer disk.
pub const DEFAULT_MAX_SIZE: &str = "20G";

/// The folder of the cache's content (versioned with the layout).
pub const LAYOUT: &str = "xtask-steps-v2";

/// A cache folder, opened.
#[derive(Debug, Clone)]
pub struct StepCache {
    dir: PathBuf,
}

impl StepCache {
    /// The cache a command was given: `--cache DIR`, else `XTASK_CACHE_DIR`, else none.
    /// A relative path is taken from the working directory, as the user typed it.
    pub fn from_flag_or_env(flag: Option<&Path>) -> Result<Option<StepCache>> {
        let chosen = match flag {
            Some(p) => Some(p.to_path_buf()),
            None => std::env::var_os(CACHE_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
        };
        chosen.map(|p| StepCache::open(&p)).transpose()
    }

    /// Opens (creating) a cache folder. The folder given may itself be a link (the user chose
    /// it); nothing inside it may be.
    pub fn open(dir: &Path) -> Result<StepCache> {
        if dir.exists() && !dir.is_dir() {
            bail!("the build cache {} is not a folder", dir.display());
        }
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the build cache {}", dir.display()))?;
        let dir = dir
            .canonicalize()
            .with_context(|| format!("cannot resolve the build cache {}", dir.display()))?;
        let cache = StepCache { dir };
        for sub in cache.folders() {
            safe::ensure_dir(&sub)
                .with_context(|| format!("cannot use the build cache {}", cache.dir.display()))?;
        }
        Ok(cache)
    }

    fn folders(&self) -> [PathBuf; 4] {
        [self.layout(), self.blobs(), self.entries(), self.tmp()]
    }

    /// Checks, before a write, that the cache's folders are still real folders: a path
    /// through a folder replaced by a link since `open` would be written through it.
    pub fn check_folders(&self) -> Result<()> {
        for sub in self.folders() {
            if safe::kind(&sub) != safe::Kind::Dir {
                bail!(
                    "{} is no longer a folder (a link?): the cache does not follow links",
                    sub.display()
                );
            }
        }
        Ok(())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn layout(&self) -> PathBuf {
        self.dir.join(LAYOUT)
    }

    pub fn blobs(&self) -> PathBuf {
        self.layout().join("blobs")
    }

    pub fn entries(&self) -> PathBuf {
        self.layout().join("entries")
    }

    pub fn tmp(&self) -> PathBuf {
        self.layout().join("tmp")
    }

    /// The stored file of content `sha256`.
    pub fn blob(&self, sha256: &str) -> Result<PathBuf> {
        check_hex(sha256, "a sha256")?;
        Ok(self.blobs().join(sha256))
    }

    /// The entry file of `key` (a key is 64 hex digits: nothing else is accepted).
    pub fn entry_file(&self, key: &str) -> Result<PathBuf> {
        check_hex(key, "a step key")?;
        Ok(self.entries().join(format!("{key}.json")))
    }

    /// The last-use stamp of `key`.
    pub fn stamp_file(&self, key: &str) -> Result<PathBuf> {
        check_hex(key, "a step key")?;
        Ok(self.entries().join(format!("{key}.used")))
    }

    /// Marks `key` used now: a new stamp renamed over the old (never written through a link).
    pub fn touch(&self, key: &str) -> Result<()> {
        self.check_folders()?;
        let stamp = self.stamp_file(key)?;
        safe::write_replace(
            &self.tmp(),
            &stamp,
            xtask_runtime::report::now_unix().to_string().as_bytes(),
        )
    }
}

/// The cache's size cap: `--cache-max-size`, else `XTASK_CACHE_MAX_SIZE`, else the default.
/// A value that is not a size is an error (never silently the default).
pub fn max_size(flag: Option<u64>) -> Result<u64> {
    if let Some(n) = flag {
        return Ok(n);
    }
    match std::env::var(MAX_SIZE_ENV).ok().filter(|v| !v.is_empty()) {
        Some(v) => gc::parse_size(&v).with_context(|| format!("{MAX_SIZE_ENV}={v:?}")),
        None => gc::parse_size(DEFAULT_MAX_SIZE),
    }
}

fn check_hex(text: &str, what: &str) -> Result<()> {
    if text.len() != 64 || !text.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')) {
        bail!("not {what}: {text:?}");
    }
    Ok(())
}

/// The short form of a key shown to people (the full key is in the reports).
pub fn short(key: &str) -> &str {
    &key[..12.min(key.len())]
}
#[cfg(test)]
mod tests;
