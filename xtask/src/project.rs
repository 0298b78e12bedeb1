//! The project layout: where recipes, ONNX, golden tensors, contexts and reports live.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

/// Finds the project root: `--root`, else the nearest folder upwards from the working
/// directory that holds both `Cargo.toml` and `recipes/`.
pub fn find_root(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(root) = explicit {
        if !root.join("recipes").is_dir() {
            bail!("--root {} has no recipes/ folder", root.display());
        }
        return Ok(std::path::absolute(root)?);
    }
    let cwd = std::env::current_dir()?;
    for dir in cwd.ancestors() {
        if dir.join("Cargo.toml").is_file() && dir.join("recipes").is_dir() {
            return Ok(dir.to_path_buf());
        }
    }
    bail!(
        "no project root (a folder with Cargo.toml and recipes/) above {}; pass --root",
        cwd.display()
    )
}

pub fn ctx_dir(root: &Path, model: &str) -> PathBuf {
    root.join("ctx").join(model)
}

pub fn reports_dir(root: &Path, model: &str) -> PathBuf {
    root.join("reports").join(model)
}

/// Shows a path relative to the root when it is inside it (reports never hold machine paths).
pub fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Removes the project root from a message, so reports never carry this machine's paths.
pub fn scrub(root: &Path, text: &str) -> String {
    let prefix = format!("{}/", root.display());
    text.replace(&prefix, "")
}
