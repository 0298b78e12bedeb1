//! A content-addressed cache of build steps, shared by checkouts, machines and CI runs: each
//! entry holds one step's outputs and its record, under the step's key (the chained
//! fingerprint of its inputs, rendered options and tool versions, see `ctx_build::fingerprint`).
//!
//! It is an explicit opt-in (`build-ctx --cache DIR` or `XTASK_CACHE_DIR`), the one place
//! outside the project this tool writes to besides `XTASK_DATA_ROOT`. The cache is just a
//! folder: sync it, mount it or hand it to CI's cache action.
//!
//! Layout: `DIR/xtask-steps-v1/<key>/{entry.json, files/…, last-used}`. An entry is written in a
//! temporary folder inside the cache (`.tmp-*`), every file synced, `entry.json` last, then
//! renamed into place in one step: a killed writer leaves only a `.tmp-*` folder, never a
//! folder under a key. Restoring re-hashes every file against `entry.json`; a corrupted or
//! partial entry is refused (and removed), never used. Concurrent builds are safe: entries are
//! never edited in place (a second writer of the same key keeps the first one's entry), and a
//! reader that loses an entry to `gc` just builds the step.

pub mod entry;
pub mod gc;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The environment variable that opts a build into a cache folder (like `--cache`).
pub const CACHE_ENV: &str = "XTASK_CACHE_DIR";

/// The folder of entries inside a cache (versioned with the entry format).
pub const ENTRIES: &str = "xtask-steps-v1";

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

    /// Opens (creating) a cache folder.
    pub fn open(dir: &Path) -> Result<StepCache> {
        if dir.exists() && !dir.is_dir() {
            bail!("the build cache {} is not a folder", dir.display());
        }
        let entries = dir.join(ENTRIES);
        std::fs::create_dir_all(&entries)
            .with_context(|| format!("cannot create the build cache {}", entries.display()))?;
        let dir = dir
            .canonicalize()
            .with_context(|| format!("cannot resolve the build cache {}", dir.display()))?;
        Ok(StepCache { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn entries(&self) -> PathBuf {
        self.dir.join(ENTRIES)
    }

    /// Where the entry of `key` lives (a key is 64 hex digits: nothing else is accepted).
    pub fn entry_dir(&self, key: &str) -> Result<PathBuf> {
        if key.len() != 64 || !key.chars().all(|c| c.is_ascii_hexdigit()) {
            bail!("not a step key: {key:?}");
        }
        Ok(self.entries().join(key))
    }
}

/// The short form of a key shown to people (the full key is in the reports).
pub fn short(key: &str) -> &str {
    &key[..12.min(key.len())]
}
