//! Size control: `cache ls` (entries, sizes, last use) and `cache gc --max-size` (least
//! recently used first). Real entries are gigabytes (a vision context binary is 1.8 GB).

use std::fs;
use std::path::Path;

use anyhow::{Result, bail};

use super::entry::EntryFile;
use super::{ENTRIES, StepCache, short};

/// One folder of the cache, as `ls` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Listed {
    pub key: String,
    /// The step (`convert`, `cpu_parity`, `context@soc77`) and its first artifact; for a
    /// leftover, what it is.
    pub what: String,
    pub bytes: u64,
    /// Unix seconds of the last store or restore.
    pub last_used_unix: u64,
    /// False for an interrupted writer's `.tmp-*` folder or an entry without `entry.json`.
    pub complete: bool,
}

impl StepCache {
    /// Every entry and leftover, most recently used first.
    pub fn list(&self) -> Result<Vec<Listed>> {
        let mut out = Vec::new();
        for e in fs::read_dir(self.dir().join(ENTRIES))?.flatten() {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if !path.is_dir() {
                continue;
            }
            let entry: Option<EntryFile> = fs::read(path.join("entry.json"))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok());
            let complete = entry.is_some() && !name.starts_with('.');
            let what = match &entry {
                Some(en) if complete => format!(
                    "{} {}",
                    en.step,
                    en.files
                        .first()
                        .map_or("(no files)", |f| f.artifact.as_str())
                ),
                _ if name.starts_with(".tmp-") => "(left by an interrupted writer)".into(),
                _ => "(incomplete: no readable entry.json)".into(),
            };
            out.push(Listed {
                key: name,
                what,
                bytes: folder_bytes(&path),
                last_used_unix: last_used(&path),
                complete,
            });
        }
        out.sort_by_key(|l| std::cmp::Reverse(l.last_used_unix));
        Ok(out)
    }

    /// Removes leftovers older than an hour (a writer may still be filling a younger one),
    /// then least recently used entries until the cache holds at most `max_bytes`.
    /// Returns (entries removed, bytes freed, bytes kept).
    pub fn gc(&self, max_bytes: u64) -> Result<(usize, u64, u64)> {
        let now = crate::report::now_unix();
        let mut removed = 0;
        let mut freed = 0;
        let mut entries = Vec::new();
        for l in self.list()? {
            if !l.complete {
                if now.saturating_sub(l.last_used_unix) > 3600 {
                    let dir = self.dir().join(ENTRIES).join(&l.key);
                    if fs::remove_dir_all(&dir).is_ok() {
                        removed += 1;
                        freed += l.bytes;
                    }
                }
                continue;
            }
            entries.push(l);
        }
        let mut total: u64 = entries.iter().map(|l| l.bytes).sum();
        // Oldest last use first.
        entries.sort_by_key(|l| l.last_used_unix);
        for l in entries {
            if total <= max_bytes {
                break;
            }
            self.discard(&self.dir().join(ENTRIES).join(&l.key));
            total -= l.bytes;
            freed += l.bytes;
            removed += 1;
        }
        Ok((removed, freed, total))
    }
}

/// The table `cache ls` prints.
pub fn ls_table(cache: &StepCache, listed: &[Listed]) -> String {
    let mut text = format!("build cache {}\n", cache.dir().display());
    let total: u64 = listed.iter().map(|l| l.bytes).sum();
    for l in listed {
        text.push_str(&format!(
            "  {:<12}  {:>10}  last used {}  {}\n",
            short(&l.key),
            human_bytes(l.bytes),
            ago(l.last_used_unix),
            l.what
        ));
    }
    text.push_str(&format!(
        "{} entr{}, {} in all\n",
        listed.len(),
        if listed.len() == 1 { "y" } else { "ies" },
        human_bytes(total)
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
        _ => bail!("--max-size {text:?}: use a number with K, M, G or T (e.g. 50G)"),
    };
    let n: f64 = num
        .trim()
        .parse()
        .ok()
        .filter(|n: &f64| n.is_finite() && *n >= 0.0)
        .ok_or_else(|| anyhow::anyhow!("--max-size {text:?}: not a size (e.g. 50G)"))?;
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
    let s = crate::report::now_unix().saturating_sub(unix);
    match s {
        s if s < 120 => format!("{s} s ago"),
        s if s < 7200 => format!("{} min ago", s / 60),
        s if s < 172_800 => format!("{} h ago", s / 3600),
        s => format!("{} days ago", s / 86_400),
    }
}

fn folder_bytes(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// The last use of an entry: `last-used`'s mtime, else the folder's.
fn last_used(dir: &Path) -> u64 {
    let mtime = |p: &Path| {
        fs::metadata(p)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs())
    };
    mtime(&dir.join("last-used"))
        .or_else(|| mtime(dir))
        .unwrap_or(0)
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

    fn entry(cache: &StepCache, key: &str, age_s: u64) {
        let e = cache.dir().join(ENTRIES).join(key);
        fs::create_dir_all(e.join("files")).unwrap();
        fs::write(e.join("files/0-x"), vec![0u8; 1000]).unwrap();
        let record = crate::ctx_build::fingerprint::StepRecord {
            key: crate::ctx_build::fingerprint::StepKey {
                key: key.into(),
                parts: Default::default(),
            },
            outputs: Default::default(),
            finished_unix: 0,
            seconds: 0.0,
            facts: crate::ctx_build::fingerprint::test_facts(),
            restored_from_cache: None,
            detail: Default::default(),
        };
        let file = EntryFile {
            key: key.into(),
            step: "convert".into(),
            files: vec![],
            record,
            stored_unix: 0,
        };
        fs::write(e.join("entry.json"), serde_json::to_vec(&file).unwrap()).unwrap();
        let t = std::time::SystemTime::now() - std::time::Duration::from_secs(age_s);
        fs::File::create(e.join("last-used"))
            .unwrap()
            .set_modified(t)
            .unwrap();
    }

    #[test]
    fn gc_removes_least_recently_used_first_and_keeps_young_leftovers() {
        let dir = tempfile::tempdir().unwrap();
        let cache = StepCache::open(dir.path()).unwrap();
        entry(&cache, &"a".repeat(64), 300);
        entry(&cache, &"b".repeat(64), 100);
        entry(&cache, &"c".repeat(64), 200);
        fs::create_dir_all(cache.dir().join(ENTRIES).join(".tmp-writer/files")).unwrap();
        let size = cache
            .list()
            .unwrap()
            .iter()
            .find(|l| l.complete)
            .unwrap()
            .bytes;
        // Room for two entries: the least recently used (a) goes.
        let (removed, _, kept) = cache.gc(2 * size + 10).unwrap();
        assert_eq!((removed, kept), (1, 2 * size));
        let left: Vec<String> = cache.list().unwrap().into_iter().map(|l| l.key).collect();
        assert!(left.contains(&"b".repeat(64)) && left.contains(&"c".repeat(64)));
        assert!(
            left.contains(&".tmp-writer".to_string()),
            "a young leftover may be in use"
        );
        assert!(!left.contains(&"a".repeat(64)));
    }
}
