//! Fingerprints and freshness, after cargo's: a step's key hashes everything it depends on
//! (content, recipe sections, options, tool versions, the previous step's key), so dirtiness
//! propagates down the chain. Records are written only after a step succeeded; the record of
//! a step is cleared before it re-runs, so an interrupted build never looks fresh.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::hashing::{HashMemo, sha256_bytes};

/// The key of one step plus its named parts, kept to explain *why* a step is dirty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepKey {
    pub key: String,
    pub parts: BTreeMap<String, String>,
}

impl StepKey {
    pub fn new(step: &str, parts: BTreeMap<String, String>) -> Self {
        let mut text = format!("xtask-step-v1\n{step}\n");
        for (k, v) in &parts {
            text.push_str(&format!("{k}={v}\n"));
        }
        StepKey {
            key: sha256_bytes(text.as_bytes()),
            parts,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepRecord {
    pub key: StepKey,
    /// Outputs (paths relative to the project root) and their sha256.
    pub outputs: BTreeMap<String, String>,
    pub finished_unix: u64,
    pub seconds: f64,
    /// Step-specific results (parity figures, graph name, ...), shown in reports of fresh steps.
    #[serde(default)]
    pub detail: serde_json::Value,
}

/// All step records of one component, in `ctx/<model>/<component>.record.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ComponentRecord {
    pub steps: BTreeMap<String, StepRecord>,
}

impl ComponentRecord {
    /// A missing or unreadable record is an empty one (everything dirty), never an error.
    pub fn load(path: &Path) -> Self {
        std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        crate::atomic::write_atomic(path, &serde_json::to_vec_pretty(self)?)
            .with_context(|| format!("cannot write build record {}", path.display()))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Freshness {
    Fresh,
    Dirty(Vec<String>),
}

/// Compares a step's current key and outputs with its record; the reasons say why it is dirty.
pub fn freshness(
    root: &Path,
    record: Option<&StepRecord>,
    key: &StepKey,
    memo: &mut HashMemo,
) -> Freshness {
    let Some(record) = record else {
        return Freshness::Dirty(vec!["never built".into()]);
    };
    let mut reasons = explain_key_change(&record.key, key);
    for (rel, sha) in &record.outputs {
        match memo.sha256(&root.join(rel)) {
            Ok(actual) if &actual == sha => {}
            Ok(_) => reasons.push(format!("output {rel} was modified")),
            Err(_) => reasons.push(format!("output {rel} is missing")),
        }
    }
    if reasons.is_empty() {
        Freshness::Fresh
    } else {
        Freshness::Dirty(reasons)
    }
}

fn explain_key_change(old: &StepKey, new: &StepKey) -> Vec<String> {
    if old.key == new.key {
        return Vec::new();
    }
    let mut reasons = Vec::new();
    for (name, value) in &new.parts {
        match old.parts.get(name) {
            None => reasons.push(format!("{name} is new")),
            Some(v) if v != value => reasons.push(format!("{name} changed")),
            Some(_) => {}
        }
    }
    for name in old.parts.keys().filter(|n| !new.parts.contains_key(*n)) {
        reasons.push(format!("{name} was removed"));
    }
    if reasons.is_empty() {
        reasons.push("fingerprint format changed".into());
    }
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(onnx: &str) -> StepKey {
        StepKey::new(
            "convert",
            BTreeMap::from([
                ("onnx".to_string(), onnx.to_string()),
                ("qnn".to_string(), "2.47".to_string()),
            ]),
        )
    }

    #[test]
    fn key_changes_with_any_part() {
        assert_ne!(key("a").key, key("b").key);
        assert_eq!(key("a").key, key("a").key);
    }

    #[test]
    fn dirty_reason_names_the_changed_part() {
        let dir = tempfile::tempdir().unwrap();
        let rec = StepRecord {
            key: key("a"),
            outputs: BTreeMap::new(),
            finished_unix: 0,
            seconds: 0.0,
            detail: serde_json::Value::Null,
        };
        let mut memo = HashMemo::default();
        assert_eq!(
            freshness(dir.path(), Some(&rec), &key("a"), &mut memo),
            Freshness::Fresh
        );
        assert_eq!(
            freshness(dir.path(), Some(&rec), &key("b"), &mut memo),
            Freshness::Dirty(vec!["onnx changed".into()])
        );
        assert_eq!(
            freshness(dir.path(), None, &key("a"), &mut memo),
            Freshness::Dirty(vec!["never built".into()])
        );
    }

    #[test]
    fn missing_or_modified_output_is_dirty() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("out.bin"), b"good").unwrap();
        let mut memo = HashMemo::default();
        let sha = memo.sha256(&dir.path().join("out.bin")).unwrap();
        let outputs = BTreeMap::from([("out.bin".to_string(), sha)]);
        let rec = StepRecord {
            key: key("a"),
            outputs,
            finished_unix: 0,
            seconds: 0.0,
            detail: serde_json::Value::Null,
        };
        assert_eq!(
            freshness(dir.path(), Some(&rec), &key("a"), &mut memo),
            Freshness::Fresh
        );
        std::fs::write(dir.path().join("out.bin"), b"bad!!").unwrap();
        assert!(
            matches!(freshness(dir.path(), Some(&rec), &key("a"), &mut memo), Freshness::Dirty(r) if r[0].contains("modified"))
        );
    }
}
