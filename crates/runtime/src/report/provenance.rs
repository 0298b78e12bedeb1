//! Files laid out by `fetch --unverified` (a download without `manifest.json`, so nothing
//! proves them): each is recorded with its sha256 in `reports/<model>/unverified-inputs.json`,
//! and every report and card made while such a file is still in place says so. A verified
//! fetch that lays out the same path removes it from the record.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

const RECORD: &str = "unverified-inputs.json";

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct UnverifiedInputs {
    /// Where each file came from: `OWNER/NAME@revision`.
    pub sources: Vec<String>,
    /// Project-relative path → sha256 of what was laid out.
    pub files: BTreeMap<String, String>,
}

fn read(root: &Path, model: &str) -> UnverifiedInputs {
    std::fs::read(xtask_base::project::reports_dir(root, model).join(RECORD))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn write(root: &Path, model: &str, rec: &UnverifiedInputs) -> Result<()> {
    let path = xtask_base::project::reports_dir(root, model).join(RECORD);
    if rec.files.is_empty() {
        if path.exists() {
            std::fs::remove_file(&path)?;
        }
        return Ok(());
    }
    xtask_base::atomic::write_atomic(&path, &serde_json::to_vec_pretty(rec)?)
}

/// Records files laid out without a manifest (`source` = `OWNER/NAME@revision`).
pub fn record(root: &Path, model: &str, source: &str, files: &[(String, String)]) -> Result<()> {
    let mut rec = read(root, model);
    if !rec.sources.iter().any(|s| s == source) {
        rec.sources.push(source.to_string());
    }
    rec.files.extend(files.iter().cloned());
    write(root, model, &rec)
}

/// Forgets files a verified fetch has just laid out.
pub fn clear(root: &Path, model: &str, paths: &[String]) -> Result<()> {
    let mut rec = read(root, model);
    let before = rec.files.len();
    rec.files.retain(|p, _| !paths.contains(p));
    if rec.files.len() == before {
        return Ok(());
    }
    write(root, model, &rec)
}

/// The line every report and card made from this model's files carries while a file fetched
/// without a manifest is still in place; None when there is none.
pub fn note(root: &Path, model: &str) -> Option<String> {
    let rec = read(root, model);
    let present: Vec<&str> = rec
        .files
        .keys()
        .filter(|p| root.join(p).exists())
        .map(String::as_str)
        .collect();
    if present.is_empty() {
        return None;
    }
    Some(format!(
        "UNVERIFIED: {} input file(s) were fetched from {} without a manifest (`fetch --unverified`): {}",
        present.len(),
        rec.sources.join(", "),
        present.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_files_are_noted_until_a_verified_fetch_replaces_them() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::create_dir_all(r.join("onnx/m")).unwrap();
        std::fs::write(r.join("onnx/m/a.onnx"), b"x").unwrap();
        assert_eq!(note(r, "m"), None);
        record(r, "m", "o/n@main", &[("onnx/m/a.onnx".into(), "ab".into())]).unwrap();
        let n = note(r, "m").unwrap();
        assert!(n.contains("o/n@main") && n.contains("onnx/m/a.onnx"), "{n}");
        clear(r, "m", &["onnx/m/a.onnx".into()]).unwrap();
        assert_eq!(note(r, "m"), None);
        assert!(!r.join("reports/m").join(RECORD).exists());
    }
}
