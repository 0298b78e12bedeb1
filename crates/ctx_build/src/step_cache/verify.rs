//! Trust: `cache verify` re-hashes every stored file against every entry that names it, and
//! `cache rm` removes entries by key or by the model that stored them.

use std::collections::BTreeMap;

use anyhow::{Result, bail};

use super::safe::{self, Kind};
use super::{StepCache, short};

/// One bad entry: its key, the file (as the storing build named it) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bad {
    pub key: String,
    pub file: String,
    pub why: String,
}

impl std::fmt::Display for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.key, self.file, self.why)
    }
}

impl StepCache {
    /// Every entry checked: readable, filed under its key, each file present with the size and
    /// sha256 the entry says (each stored file hashed once). Returns (entries checked, bad).
    pub fn verify(&self) -> Result<(usize, Vec<Bad>)> {
        let survey = self.survey()?;
        let mut hashed: BTreeMap<String, Result<(u64, String), String>> = BTreeMap::new();
        let mut bad = Vec::new();
        for l in &survey.entries {
            let entry = match self.read(&l.key) {
                Ok(e) => e,
                Err(why) => {
                    bad.push(Bad {
                        key: l.key.clone(),
                        file: "(entry file)".into(),
                        why: format!("{why:#}"),
                    });
                    continue;
                }
            };
            for (f, artifact) in entry.files.iter().zip(&entry.names.outputs) {
                let got = hashed.entry(f.sha256.clone()).or_insert_with(|| {
                    self.blob(&f.sha256)
                        .and_then(|b| safe::hash_file(&b))
                        .map_err(|e| format!("{e:#}"))
                });
                let why = match got {
                    Err(e) => Some(format!("unreadable: {e}")),
                    Ok((n, sha)) if *n != f.bytes || *sha != f.sha256 => Some(format!(
                        "{n} bytes with sha256 {}, the entry says {} bytes with {}",
                        short(sha),
                        f.bytes,
                        short(&f.sha256)
                    )),
                    Ok(_) => None,
                };
                if let Some(why) = why {
                    bad.push(Bad {
                        key: l.key.clone(),
                        file: artifact.clone(),
                        why,
                    });
                }
            }
        }
        Ok((survey.entries.len(), bad))
    }

    /// The full keys of the entries `key` names (a full key or a prefix of at least 8 hex
    /// digits matching one entry).
    pub fn resolve(&self, key: &str) -> Result<String> {
        if key.len() < 8 || !key.chars().all(|c| c.is_ascii_hexdigit()) {
            bail!("{key:?} is not a step key (at least 8 hex digits, as `cache ls` shows)");
        }
        let key = key.to_ascii_lowercase();
        let found: Vec<String> = self
            .survey()?
            .entries
            .into_iter()
            .map(|l| l.key)
            .filter(|k| k.starts_with(&key))
            .collect();
        match found.as_slice() {
            [one] => Ok(one.clone()),
            [] => bail!("no cache entry {key} in {}", self.dir().display()),
            _ => bail!("{key} names {} entries: give more digits", found.len()),
        }
    }

    /// Removes the entries `keys` and those of their stored files no remaining entry names
    /// (another entry's file stays). Returns the bytes freed.
    pub fn remove(&self, keys: &[String]) -> Result<u64> {
        let mut theirs = std::collections::BTreeSet::new();
        for k in keys {
            if let Ok(e) = self.read(k) {
                theirs.extend(e.files.into_iter().map(|f| f.sha256));
            }
            self.remove_entry(k)?;
        }
        let survey = self.survey()?;
        let named: std::collections::BTreeSet<&str> = survey
            .entries
            .iter()
            .flat_map(|l| l.blobs.iter().map(String::as_str))
            .collect();
        let mut freed = 0;
        for (sha, (n, _)) in &survey.blobs {
            let blob = self.blob(sha)?;
            if theirs.contains(sha)
                && !named.contains(sha.as_str())
                && safe::kind(&blob) == Kind::File(*n)
                && safe::remove(&self.tmp(), &blob).is_ok()
            {
                freed += n;
            }
        }
        Ok(freed)
    }

    /// The keys of the entries a build of `model` stored.
    pub fn keys_of_model(&self, model: &str) -> Result<Vec<String>> {
        let mut keys = Vec::new();
        for l in self.survey()?.entries {
            if self.read(&l.key).is_ok_and(|e| e.names.model == model) {
                keys.push(l.key);
            }
        }
        Ok(keys)
    }
}
