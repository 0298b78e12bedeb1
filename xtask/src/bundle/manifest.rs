//! `manifest.json` and `SHA256SUMS`: the bundle's own list of files (path, size, sha256, role),
//! written by `package` and checked by `verify`, `fetch` and `release`. Files the Hugging Face
//! Hub manages itself are tolerated beside the listed ones, and nothing else is.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::hashing::sha256_file;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ManifestEntry {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
    pub role: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub model: String,
    pub files: Vec<ManifestEntry>,
}

impl Manifest {
    /// The `SHA256SUMS` text of this manifest (`sha256sum -c` format).
    pub fn sha256sums(&self) -> String {
        self.files
            .iter()
            .map(|f| format!("{}  {}\n", f.sha256, f.path))
            .collect()
    }

    pub fn write(&self, dir: &Path) -> Result<()> {
        std::fs::write(dir.join("manifest.json"), serde_json::to_vec_pretty(self)?)?;
        std::fs::write(dir.join("SHA256SUMS"), self.sha256sums())?;
        Ok(())
    }
}

/// Files the Hub adds to every repository or download folder and no manifest lists:
/// `.gitattributes` (written with the repository, fetched by `hf download`) and the
/// `.cache/huggingface/` metadata of `hf download --local-dir` (huggingface_hub's
/// `hf_api.py` / `_local_folder.py`).
pub fn hub_managed(rel: &str) -> bool {
    rel == ".gitattributes" || rel.starts_with(".cache/huggingface/")
}

pub fn read_manifest(dir: &Path) -> Result<Manifest> {
    let path = dir.join("manifest.json");
    let bytes = std::fs::read(&path)
        .with_context(|| format!("{} has no manifest.json: not a bundle", dir.display()))?;
    serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a valid manifest", path.display()))
}

/// Changed, missing and extra files, each named (every file is re-hashed in full).
pub fn check_files(dir: &Path) -> Result<Vec<String>> {
    check_files_matching(dir, &|_| true)
}

/// `check_files` for a partial download: only the listed files `selected` accepts must be
/// present and intact; any file present must still be listed (or be the Hub's own).
pub fn check_files_matching(dir: &Path, selected: &dyn Fn(&str) -> bool) -> Result<Vec<String>> {
    let manifest = read_manifest(dir)?;
    let mut problems = Vec::new();
    let mut listed = BTreeSet::new();
    for f in &manifest.files {
        listed.insert(f.path.clone());
        if !selected(&f.path) {
            continue;
        }
        let path = dir.join(&f.path);
        match std::fs::metadata(&path) {
            Err(_) => problems.push(format!("missing: {}", f.path)),
            Ok(m) if m.len() != f.bytes => problems.push(format!(
                "changed: {} ({} bytes, manifest says {})",
                f.path,
                m.len(),
                f.bytes
            )),
            Ok(_) => {
                let sha = sha256_file(&path)?;
                if sha != f.sha256 {
                    problems.push(format!(
                        "changed: {} (sha256 {sha}, manifest says {})",
                        f.path, f.sha256
                    ));
                }
            }
        }
    }
    for entry in walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
    {
        let rel = entry
            .path()
            .strip_prefix(dir)?
            .to_string_lossy()
            .into_owned();
        if rel != "manifest.json"
            && rel != "SHA256SUMS"
            && !hub_managed(&rel)
            && !listed.contains(&rel)
        {
            problems.push(format!("extra: {rel} (not in manifest.json)"));
        }
    }
    let sums = manifest.sha256sums();
    if std::fs::read_to_string(dir.join("SHA256SUMS"))
        .ok()
        .as_deref()
        != Some(sums.as_str())
    {
        problems.push("SHA256SUMS does not match manifest.json".into());
    }
    Ok(problems)
}
