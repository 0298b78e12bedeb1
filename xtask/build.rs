//! The tool's identity at build time: a sha256 over its own sources (`src/`, the Python
//! scripts it runs, its manifest and the workspace lock), exported as `XTASK_SOURCE_SHA256`.
//! Records and reports carry it (`identity::XTASK_ID`), so two builds of the tool from sources
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
    let mut files = Vec::new();
    for dir in ["src", "scripts"] {
        files_under(&manifest.join(dir), &mut files);
        println!("cargo:rerun-if-changed={dir}");
    }
    files.push(manifest.join("Cargo.toml"));
    files.push(manifest.join("../Cargo.lock"));
    println!("cargo:rerun-if-changed=Cargo.toml");
    println!("cargo:rerun-if-changed=../Cargo.lock");
    files.sort();
    let mut hasher = Sha256::new();
    for file in &files {
        let rel = file.strip_prefix(&manifest).unwrap_or(file);
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
