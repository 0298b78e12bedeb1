//! One cache entry: storing a step's outputs and record atomically, and restoring them with
//! every byte re-hashed against what the entry says.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{ENTRIES, StepCache, short};
use crate::ctx_build::fingerprint::StepRecord;

/// `entry.json`: written last inside the entry, so an entry without it is incomplete.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntryFile {
    pub key: String,
    /// The step's record name (`convert`, `cpu_parity`, `context@soc77`).
    pub step: String,
    pub files: Vec<StoredFile>,
    /// The record of the step that made these files (its typed facts and figures).
    pub record: StepRecord,
    pub stored_unix: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredFile {
    /// The artifact it is, project-relative (`ctx/tiny/vision.dlc`).
    pub artifact: String,
    /// Its name under `files/`.
    pub stored: String,
    pub bytes: u64,
    pub sha256: String,
}

/// What a lookup found.
pub enum Lookup {
    Miss,
    /// Every file copied into the staging folder and re-hashed: (staged path, stored file).
    Hit {
        entry: Box<EntryFile>,
        staged: Vec<(PathBuf, StoredFile)>,
    },
    /// The entry exists but is unusable (why); it was removed so the next writer replaces it.
    Refused(String),
}

impl StepCache {
    /// Stores a step that just ran: its outputs (read from `root`) and its record. A key
    /// already present is kept as it is (another build stored the same content first).
    pub fn store(&self, root: &Path, step: &str, record: &StepRecord) -> Result<()> {
        let key = &record.key.key;
        let dest = self.entry_dir(key)?;
        if dest.join("entry.json").is_file() {
            return Ok(());
        }
        // A folder under the key without its entry.json is not an entry: out of the way.
        if dest.exists() {
            self.discard(&dest);
        }
        let tmp = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempdir_in(self.dir().join(ENTRIES))
            .context("cannot create a temporary entry in the build cache")?;
        fs::create_dir(tmp.path().join("files"))?;
        let mut files = Vec::new();
        for (i, (artifact, sha256)) in record.outputs.iter().enumerate() {
            let name = Path::new(artifact)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let stored = format!("{i}-{name}");
            let (bytes, got) = copy_hashed(
                &root.join(artifact),
                &tmp.path().join("files").join(&stored),
            )?;
            if &got != sha256 {
                bail!(
                    "{artifact} changed while it was being cached (sha256 {got}, recorded {sha256})"
                );
            }
            files.push(StoredFile {
                artifact: artifact.clone(),
                stored,
                bytes,
                sha256: got,
            });
        }
        let entry = EntryFile {
            key: key.clone(),
            step: step.to_string(),
            files,
            record: record.clone(),
            stored_unix: crate::report::now_unix(),
        };
        write_synced(
            &tmp.path().join("entry.json"),
            &serde_json::to_vec_pretty(&entry)?,
        )?;
        sync_dir(&tmp.path().join("files"))?;
        sync_dir(tmp.path())?;
        let kept = tmp.keep();
        match fs::rename(&kept, &dest) {
            Ok(()) => {
                sync_dir(&self.dir().join(ENTRIES))?;
                touch(&dest);
                Ok(())
            }
            // Another build stored this key meanwhile: its entry is as good as ours.
            Err(_) if dest.join("entry.json").is_file() => {
                let _ = fs::remove_dir_all(&kept);
                Ok(())
            }
            Err(e) => {
                let _ = fs::remove_dir_all(&kept);
                Err(e).with_context(|| format!("cannot place the cache entry {}", dest.display()))
            }
        }
    }

    /// Looks `key` up for step `step`, whose outputs must be `artifacts`; on a hit every file
    /// is copied into `staging` and re-hashed. A refused entry is removed.
    pub fn lookup(&self, key: &str, step: &str, artifacts: &[String], staging: &Path) -> Lookup {
        let Ok(dir) = self.entry_dir(key) else {
            return Lookup::Miss;
        };
        if !dir.exists() {
            return Lookup::Miss;
        }
        match self.read_entry(&dir, key, step, artifacts, staging) {
            Ok((entry, staged)) => {
                touch(&dir);
                Lookup::Hit {
                    entry: Box::new(entry),
                    staged,
                }
            }
            Err(e) => {
                let why = format!("cache entry {} refused: {e:#}", short(key));
                self.discard(&dir);
                Lookup::Refused(why)
            }
        }
    }

    fn read_entry(
        &self,
        dir: &Path,
        key: &str,
        step: &str,
        artifacts: &[String],
        staging: &Path,
    ) -> Result<(EntryFile, Vec<(PathBuf, StoredFile)>)> {
        let bytes =
            fs::read(dir.join("entry.json")).context("no entry.json (an incomplete entry)")?;
        let entry: EntryFile =
            serde_json::from_slice(&bytes).context("entry.json is not a readable entry")?;
        if entry.key != key || entry.record.key.key != key || entry.step != step {
            bail!("it is filed under another key or step");
        }
        // The same files, whichever order the entry lists them in (a set, not a sequence:
        // the quantize step's entry once came back sorted and was refused).
        let mut listed: Vec<&str> = entry.files.iter().map(|f| f.artifact.as_str()).collect();
        let mut wanted: Vec<&str> = artifacts.iter().map(String::as_str).collect();
        listed.sort_unstable();
        wanted.sort_unstable();
        if listed != wanted {
            bail!("it holds {listed:?}, this step makes {artifacts:?}");
        }
        let mut staged = Vec::new();
        for f in &entry.files {
            if f.stored.contains('/') || f.stored.contains("..") {
                bail!("file name {:?} leaves the entry", f.stored);
            }
            if entry.record.outputs.get(&f.artifact) != Some(&f.sha256) {
                bail!("its record does not list {} with that sha256", f.artifact);
            }
            let to = staging.join(&f.stored);
            let (n, sha) = copy_hashed(&dir.join("files").join(&f.stored), &to)?;
            if n != f.bytes || sha != f.sha256 {
                bail!(
                    "{} is {n} bytes with sha256 {}, the entry says {} bytes with {}",
                    f.stored,
                    short(&sha),
                    f.bytes,
                    short(&f.sha256)
                );
            }
            staged.push((to, f.clone()));
        }
        Ok((entry, staged))
    }

    /// Removes an entry: renamed out of the way first (readers see it gone at once).
    pub fn discard(&self, dir: &Path) {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let trash = dir.with_file_name(format!(".tmp-discarded-{name}-{}", std::process::id()));
        if fs::rename(dir, &trash).is_ok() {
            let _ = fs::remove_dir_all(&trash);
        }
    }
}

/// Copies `from` to `to` (a new file), hashing what was read; synced. Returns (bytes, sha256).
fn copy_hashed(from: &Path, to: &Path) -> Result<(u64, String)> {
    let mut src =
        fs::File::open(from).with_context(|| format!("cannot open {}", from.display()))?;
    let mut dst =
        fs::File::create(to).with_context(|| format!("cannot create {}", to.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = src
            .read(&mut buf)
            .with_context(|| format!("cannot read {}", from.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        dst.write_all(&buf[..n])
            .with_context(|| format!("cannot write {}", to.display()))?;
        total += n as u64;
    }
    dst.sync_all()?;
    Ok((total, crate::hashing::hex(&hasher.finalize())))
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f =
        fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    Ok(())
}

fn sync_dir(dir: &Path) -> Result<()> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("cannot sync {}", dir.display()))
}

/// Marks an entry used now (`last-used`'s mtime orders `gc`).
pub fn touch(dir: &Path) {
    let _ = fs::write(dir.join("last-used"), crate::report::now_unix().to_string());
}
