//! The tool's identity at build time: a sha256 over its own sources (every crate's `src/` and
//! manifest, the Python scripts it runs, the workspace manifest and lock), exported as
//! `XTASK_SOURCE_SHA256` and handed to `xtask_base::identity::set` by `main`. Records and
//! reports carry it (`identity::xtask_id()`), so two builds of the tool from sources
//! that differ never claim the same identity, and two commits that leave the tool unchanged
//! (docs, recipes, tests) keep it, unlike a `git describe` that would change the build keys
//! of every step on every commit.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "__pycache__" || name == "target" {
            continue;
        }
        match entry.file_type() {
            Ok(t) if t.is_dir() => files_under(&path, out),
            Ok(t) if t.is_file() => out.push(path),
            _ => {}
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest
        .parent()
        .expect("the workspace root above xtask/")
        .to_path_buf();
    let mut files = Vec::new();
    let mut dirs = vec![manifest.join("src"), manifest.join("scripts")];
    files.push(manifest.join("Cargo.toml"));
    if let Ok(crates) = std::fs::read_dir(root.join("crates")) {
        for krate in crates.flatten() {
            dirs.push(krate.path().join("src"));
            dirs.push(krate.path().join("scripts"));
            files.push(krate.path().join("Cargo.toml"));
        }
    }
    for dir in &dirs {
        files_under(dir, &mut files);
        println!("cargo:rerun-if-changed={}", dir.display());
    }
    files.push(root.join("Cargo.toml"));
    files.push(root.join("Cargo.lock"));
    for file in &files[..] {
        if file.extension().is_some_and(|e| e == "toml" || e == "lock") {
            println!("cargo:rerun-if-changed={}", file.display());
        }
    }
    println!("cargo:rerun-if-changed={}", root.join("crates").display());
    files.sort();
    files.dedup();
    let mut hasher = Sha256::new();
    for file in &files {
        let rel = file.strip_prefix(&root).unwrap_or(file);
        let Ok(bytes) = std::fs::read(file) else {
            continue;
        };
        hasher.update(rel.to_string_lossy().as_bytes());
        hasher.update([0]);
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    let digest: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    println!("cargo:rustc-env=XTASK_SOURCE_SHA256={digest}");
}
