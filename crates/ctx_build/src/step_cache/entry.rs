//! One cache entry: storing a step's outputs (as content-addressed blobs) and its record, and
//! restoring them with every byte re-hashed and every name mapped onto the restoring build.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::names::StepNames;
use super::safe::{self, Kind};
use super::{StepCache, short};
use crate::fingerprint::StepRecord;

/// `entries/<key>.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntryFile {
    pub key: String,
    /// The names and paths of the build that stored it (mapped at restore, never keyed).
    pub names: StepNames,
    /// The blobs of the step's outputs, by role: `files[i]` is `names.outputs[i]`.
    pub files: Vec<StoredFile>,
    /// The record of the step that made these files (its typed facts and figures).
    pub record: StepRecord,
    pub stored_unix: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredFile {
    pub bytes: u64,
    /// The content's hash: the blob's name.
    pub sha256: String,
}

/// A restored file: (staged path, the artifact it becomes, its sha256).
pub type StagedFile = (PathBuf, String, String);

/// What a lookup found.
pub enum Lookup {
    Miss,
    /// Every file copied into the staging folder and re-hashed: (staged path, artifact,
    /// sha256), and the record mapped onto this build's names.
    Hit {
        record: Box<StepRecord>,
        staged: Vec<StagedFile>,
    },
    /// The entry is unusable (why, naming the key and the file): the step builds and its
    /// store replaces the entry. A stored file whose bytes are wrong is removed (it is wrong
    /// for every entry that refers to it).
    Refused(String),
}

impl StepCache {
    /// Stores a step that just ran: its outputs (read from `root`) and its record. A complete
    /// entry already under the key is kept (another build stored the same content), unless
    /// `replace` (`--force`).
    pub fn store(
        &self,
        root: &Path,
        names: &StepNames,
        record: &StepRecord,
        replace: bool,
    ) -> Result<()> {
        self.check_folders()?;
        let key = &record.key.key;
        let dest = self.entry_file(key)?;
        if !replace && self.complete(key) {
            return self.touch(key);
        }
        let mut files = Vec::new();
        for artifact in &names.outputs {
            let sha256 = record
                .outputs
                .get(artifact)
                .with_context(|| format!("the record names no output {artifact}"))?;
            let from = root.join(artifact);
            let bytes = std::fs::metadata(&from)
                .with_context(|| format!("cannot stat {}", from.display()))?
                .len();
            let blob = self.blob(sha256)?;
            if replace || safe::kind(&blob) != Kind::File(bytes) {
                let (tmp, n, got) = safe::copy_to_temp(&from, &self.tmp())?;
                if &got != sha256 || n != bytes {
                    bail!(
                        "{artifact} changed while it was being cached (sha256 {got}, recorded \
                         {sha256})"
                    );
                }
                safe::persist(tmp, &blob)?;
            } else {
                safe::freshen(&blob);
            }
            files.push(StoredFile {
                bytes,
                sha256: sha256.clone(),
            });
        }
        let entry = EntryFile {
            key: key.clone(),
            names: names.clone(),
            files,
            record: record.clone(),
            stored_unix: xtask_runtime::report::now_unix(),
        };
        safe::write_replace(&self.tmp(), &dest, &serde_json::to_vec_pretty(&entry)?)?;
        self.touch(key)
    }

    /// True when `key`'s entry reads back and each of its blobs is a regular file of its size
    /// (cheap: the bytes are hashed when restored and by `cache verify`).
    fn complete(&self, key: &str) -> bool {
        self.read(key).is_ok_and(|e| {
            e.files.iter().all(|f| {
                self.blob(&f.sha256)
                    .is_ok_and(|b| safe::kind(&b) == Kind::File(f.bytes))
            })
        })
    }

    /// Reads `key`'s entry (never through a link), checked to be filed under its key.
    pub fn read(&self, key: &str) -> Result<EntryFile> {
        let path = self.entry_file(key)?;
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut safe::open_read(&path)?, &mut text)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let entry: EntryFile =
            serde_json::from_slice(&text).context("entry file is not a readable entry")?;
        if entry.key != key || entry.record.key.key != key {
            bail!("it is filed under another key");
        }
        if entry.files.len() != entry.names.outputs.len() {
            bail!(
                "it lists {} files for {} outputs",
                entry.files.len(),
                entry.names.outputs.len()
            );
        }
        for (f, artifact) in entry.files.iter().zip(&entry.names.outputs) {
            if entry.record.outputs.get(artifact) != Some(&f.sha256) {
                bail!(
                    "its record does not list {artifact} with sha256 {}",
                    short(&f.sha256)
                );
            }
        }
        Ok(entry)
    }

    /// Looks `key` up for the step `names`; on a hit every file is copied into `staging` and
    /// re-hashed. Nothing is removed but a stored file whose bytes are wrong.
    pub fn lookup(&self, key: &str, names: &StepNames, staging: &Path) -> Lookup {
        let Ok(path) = self.entry_file(key) else {
            return Lookup::Miss;
        };
        if safe::kind(&path) == Kind::Missing {
            return Lookup::Miss;
        }
        match self.restore_files(key, names, staging) {
            Ok((record, staged)) => {
                // Best effort: a read-only cache still restores.
                let _ = self.touch(key);
                Lookup::Hit {
                    record: Box::new(record),
                    staged,
                }
            }
            Err(e) => Lookup::Refused(format!("cache entry {} refused: {e:#}", short(key))),
        }
    }

    fn restore_files(
        &self,
        key: &str,
        names: &StepNames,
        staging: &Path,
    ) -> Result<(StepRecord, Vec<StagedFile>)> {
        let entry = self.read(key)?;
        if entry.names.step != names.step || entry.files.len() != names.outputs.len() {
            bail!(
                "it is a `{}` step with {} file(s), this is a `{}` step with {}",
                entry.names.step,
                entry.files.len(),
                names.step,
                names.outputs.len()
            );
        }
        let mut staged = Vec::new();
        for (i, (f, artifact)) in entry.files.iter().zip(&names.outputs).enumerate() {
            let blob = self.blob(&f.sha256)?;
            let stored_as = &entry.names.outputs[i];
            let file = Path::new(artifact)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let to = staging.join(format!("{i}-{file}"));
            let (n, sha) = safe::copy_out(&blob, &to).with_context(|| {
                format!("its file {stored_as} ({}) is unreadable", short(&f.sha256))
            })?;
            if n != f.bytes || sha != f.sha256 {
                // Wrong for every entry that names it: out of the way, so the build that
                // follows stores the right bytes under that hash.
                let _ = safe::remove(&self.tmp(), &blob);
                bail!(
                    "its file {stored_as} is {n} bytes with sha256 {}, the entry says {} bytes \
                     with {}",
                    short(&sha),
                    f.bytes,
                    short(&f.sha256)
                );
            }
            staged.push((to, artifact.clone(), sha));
        }
        let mapped = names.map_onto(&entry.names, serde_json::to_value(&entry.record)?);
        let mut record: StepRecord =
            serde_json::from_value(mapped).context("its record does not map onto this build")?;
        // The key holds content only: never mapped.
        record.key = entry.record.key;
        Ok((record, staged))
    }
}
