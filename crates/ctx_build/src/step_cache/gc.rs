//! Size control: `cache ls` (entries, sizes, last use) and `cache gc` (least recently used
//! entries first, then the stored files no entry refers to). Real entries are gigabytes (a
//! vision context binary is 1.8 GB); a file shared by entries is counted and freed once.

use std::collections::BTreeMap;
use std::fs;

use anyhow::{Result, bail};

use super::safe::{self, Kind};
use super::{StepCache, short};

/// A writer may still be filling a temporary file, or about to name a new blob in its entry,
/// for this long: `gc` leaves younger leftovers and unreferenced blobs alone.
const GRACE_S: u64 = 3600;

/// One entry, as `ls` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Listed {
    pub key: String,
    /// The step (`convert`, `cpu_parity`, `context@soc77`), the model that stored it and its
    /// first output there; for an unreadable entry, why.
    pub what: String,
    /// The bytes of its files (shared ones counted in each entry that names them).
    pub bytes: u64,
    /// Unix seconds of the last store or restore.
    pub last_used_unix: u64,
    pub complete: bool,
    /// The blobs it names (content hashes).
    #[serde(skip)]
    pub blobs: Vec<String>,
}

/// The whole cache, as `ls` and `gc` see it.
pub struct Survey {
    pub entries: Vec<Listed>,
    /// Stored files: sha256 → (bytes, mtime).
    pub blobs: BTreeMap<String, (u64, u64)>,
    /// Temporary files of writers (interrupted or still writing): (path, bytes, mtime).
    pub leftovers: Vec<(std::path::PathBuf, u64, u64)>,
}

impl Survey {
    /// Bytes on disk: each stored file once, plus leftovers.
    pub fn stored_bytes(&self) -> u64 {
        self.blobs.values().map(|b| b.0).sum::<u64>()
            + self.leftovers.iter().map(|l| l.1).sum::<u64>()
    }

    /// What the same entries would take if each held its own copy of its files.
    pub fn unshared_bytes(&self) -> u64 {
        self.entries.iter().map(|e| e.bytes).sum()
    }
}

impl StepCache {
    /// Every entry (most recently used first), stored file and leftover.
    pub fn survey(&self) -> Result<Survey> {
        let mut entries = Vec::new();
        for e in fs::read_dir(self.entries())?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            // Only `<key>.json`: anything else in the folder is not ours to list or remove.
            let Some(key) = name
                .strip_suffix(".json")
                .filter(|k| self.entry_file(k).is_ok())
            else {
                continue;
            };
            let last = self
                .stamp_file(key)
                .ok()
                .and_then(|s| safe::mtime(&s))
                .or_else(|| safe::mtime(&e.path()))
                .unwrap_or(0);
            entries.push(match self.read(key) {
                Ok(en) => Listed {
                    key: key.to_string(),
                    what: format!(
                        "{} of {}: {}",
                        en.names.step,
                        en.names.model,
                        en.names
                            .outputs
                            .first()
                            .map_or("(no files)", String::as_str)
                    ),
                    bytes: en.files.iter().map(|f| f.bytes).sum(),
                    last_used_unix: last,
                    complete: true,
                    blobs: en.files.iter().map(|f| f.sha256.clone()).collect(),
                },
                Err(why) => Listed {
                    key: key.to_string(),
                    what: format!("(unreadable: {why:#})"),
                    bytes: 0,
                    last_used_unix: last,
                    complete: false,
                    blobs: Vec::new(),
                },
            });
        }
        entries.sort_by_key(|l| std::cmp::Reverse(l.last_used_unix));
        let mut blobs = BTreeMap::new();
        for e in fs::read_dir(self.blobs())?.flatten() {
            if let Kind::File(n) = safe::kind(&e.path()) {
                let name = e.file_name().to_string_lossy().into_owned();
                blobs.insert(name, (n, safe::mtime(&e.path()).unwrap_or(0)));
            }
        }
        let mut leftovers = Vec::new();
        for e in fs::read_dir(self.tmp())?.flatten() {
            let n = match safe::kind(&e.path()) {
                Kind::File(n) => n,
                _ => 0,
            };
            leftovers.push((e.path(), n, safe::mtime(&e.path()).unwrap_or(0)));
        }
        Ok(Survey {
            entries,
            blobs,
            leftovers,
        })
    }

    /// Every entry and leftover, most recently used first.
    pub fn list(&self) -> Result<Vec<Listed>> {
        Ok(self.survey()?.entries)
    }

    /// Removes leftovers and unreferenced stored files older than an hour, then least
    /// recently used entries until the stored files take at most `max_bytes` (a file goes
    /// when the last entry naming it goes). Returns (entries removed, bytes freed, bytes kept).
    pub fn gc(&self, max_bytes: u64) -> Result<(usize, u64, u64)> {
        let survey = self.survey()?;
        let now = xtask_runtime::report::now_unix();
        let old = |mtime: u64| now.saturating_sub(mtime) > GRACE_S;
        let mut freed = 0;
        for (path, n, mtime) in &survey.leftovers {
            if old(*mtime) && safe::remove(&self.tmp(), path).is_ok() {
                freed += n;
            }
        }
        let mut refs: BTreeMap<&str, usize> = BTreeMap::new();
        for e in &survey.entries {
            for b in &e.blobs {
                *refs.entry(b.as_str()).or_default() += 1;
            }
        }
        let mut total = 0;
        for (sha, (n, mtime)) in &survey.blobs {
            if !refs.contains_key(sha.as_str()) && old(*mtime) {
                if safe::remove(&self.tmp(), &self.blobs().join(sha)).is_ok() {
                    freed += n;
                }
            } else {
                total += n;
            }
        }
        // Stamps whose entry is gone (a removal interrupted between the two files).
        for e in fs::read_dir(self.entries())?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(key) = name.strip_suffix(".used")
                && self
                    .entry_file(key)
                    .is_ok_and(|f| safe::kind(&f) == Kind::Missing)
                && safe::mtime(&e.path()).is_some_and(old)
            {
                let _ = safe::remove(&self.tmp(), &e.path());
            }
        }
        let mut removed = 0;
        // Unreadable entries first, then the oldest last use.
        let mut order: Vec<&Listed> = survey.entries.iter().collect();
        order.sort_by_key(|l| (l.complete, l.last_used_unix));
        for l in order {
            if total <= max_bytes && l.complete {
                break;
            }
            self.remove_entry(&l.key)?;
            removed += 1;
            for b in &l.blobs {
                let left = refs.get_mut(b.as_str()).map(|r| {
                    *r -= 1;
                    *r
                });
                if left == Some(0)
                    && let Some((n, _)) = survey.blobs.get(b)
                    && safe::remove(&self.tmp(), &self.blobs().join(b)).is_ok()
                {
                    total -= n;
                    freed += n;
                }
            }
        }
        Ok((removed, freed, total))
    }

    /// Removes `key`'s entry file and stamp (not its blobs: see `gc`, `rm`).
    pub fn remove_entry(&self, key: &str) -> Result<()> {
        safe::remove(&self.tmp(), &self.entry_file(key)?)?;
        if safe::kind(&self.stamp_file(key)?) != Kind::Missing {
            let _ = safe::remove(&self.tmp(), &self.stamp_file(key)?);
        }
        Ok(())
    }
}

/// The table `cache ls` prints.
pub fn ls_table(cache: &StepCache, survey: &Survey) -> String {
    let mut text = format!("build cache {}\n", cache.dir().display());
    for l in &survey.entries {
        text.push_str(&format!(
            "  {:<12}  {:>10}  last used {}  {}\n",
            short(&l.key),
            human_bytes(l.bytes),
            ago(l.last_used_unix),
            l.what
        ));
    }
    if !survey.leftovers.is_empty() {
        text.push_str(&format!(
            "  {} temporary file(s) left by interrupted or running writers\n",
            survey.leftovers.len()
        ));
    }
    let n = survey.entries.len();
    text.push_str(&format!(
        "{n} entr{}, {} stored in {} file(s) ({} without sharing)\n",
        if n == 1 { "y" } else { "ies" },
        human_bytes(survey.stored_bytes()),
        survey.blobs.len(),
        human_bytes(survey.unshared_bytes()),
    ));
    text
}

/// `50G`, `500M`, `1024K`, `123` (bytes); binary units.
pub fn parse_size(text: &str) -> Result<u64> {
    let t = text.trim();
    let (num, unit) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => (&t[..i], t[i..].to_ascii_uppercase()),
        None => (t, String::new()),
    };
    let shift = match unit.trim_end_matches("IB").trim_end_matches('B') {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => bail!("size {text:?}: use a number with K, M, G or T (e.g. 50G)"),
    };
    let n: f64 = num
        .trim()
        .parse()
        .ok()
        .filter(|n: &f64| n.is_finite() && *n >= 0.0)
        .ok_or_else(|| anyhow::anyhow!("size {text:?}: not a size (e.g. 50G)"))?;
    Ok((n * (1u64 << shift) as f64) as u64)
}

pub fn human_bytes(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

fn ago(unix: u64) -> String {
    let s = xtask_runtime::report::now_unix().saturating_sub(unix);
    match s {
        s if s < 120 => format!("{s} s ago"),
        s if s < 7200 => format!("{} min ago", s / 60),
        s if s < 172_800 => format!("{} h ago", s / 3600),
        s => format!("{} days ago", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_binary_units() {
        assert_eq!(parse_size("50G").unwrap(), 50 << 30);
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("10").unwrap(), 10);
        assert!(parse_size("ten").is_err());
        assert!(parse_size("5X").is_err());
    }
}
