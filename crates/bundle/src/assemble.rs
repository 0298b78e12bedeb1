//! Laying files into a bundle folder: which files a component contributes and where they go,
//! hard links for large files and copies for small ones, then the manifest and checksums.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::manifest::{Manifest, ManifestEntry};
use xtask_base::hashing::{HashMemo, sha256_bytes, sha256_file};
use xtask_recipe::recipe::{Component, Model};

/// Files at least this large are hard-linked into the bundle instead of copied.
const HARD_LINK_FROM_BYTES: u64 = 256 << 20;

/// Files to place in the bundle: (source, path in the bundle, role).
pub type Placement = Vec<(PathBuf, String, &'static str)>;

/// The component's files and where they go in the bundle.
pub fn component_files(
    root: &Path,
    model: &Model,
    comp: &Component,
    art: &xtask_ctx_build::plan::Artifacts,
) -> Result<Placement> {
    let name = comp.name();
    let file_name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let mut files: Placement = vec![
        (
            root.join(&art.bin),
            format!("ctx/{}", file_name(&art.bin)),
            "context-binary",
        ),
        (
            root.join(&art.record),
            format!("ctx/{}", file_name(&art.record)),
            "build-record",
        ),
        (
            root.join(&comp.file.component.onnx),
            format!("onnx/{name}/{}", file_name(&comp.file.component.onnx)),
            "onnx",
        ),
        (
            root.join(&comp.file.golden.file),
            format!("golden/{}", file_name(&comp.file.golden.file)),
            "golden",
        ),
    ];
    if model.file.package.wrappers {
        files.push((
            root.join(&art.wrapper),
            format!("ctx/{}", file_name(&art.wrapper)),
            "epcontext-wrapper",
        ));
    }
    if model.file.package.dlc {
        files.push((
            root.join(&art.dlc),
            format!("ctx/{}", file_name(&art.dlc)),
            "dlc",
        ));
    }
    for ext in xtask_ctx_build::plan::external_data(root, &comp.file.component.onnx)? {
        files.push((
            root.join(&ext),
            format!("onnx/{name}/{}", file_name(&ext)),
            "onnx-external-data",
        ));
    }
    if let Some(host) = model.file.host.as_ref().filter(|h| h.vision == name) {
        let trace = xtask_recipe::golden::trace_files(root, host)?;
        for file in [trace.json, trace.npz] {
            let rel = format!("golden/{}", file_name(&file));
            files.push((file, rel, "trace"));
        }
    }
    Ok(files)
}

/// Refuses before the first file when what cannot be hard-linked (small files, and every file
/// when `dir` is on another filesystem) would not fit `dir`'s free space with 100 MB to spare:
/// a real bundle copied to another disk is ~10 GB.
fn require_disk_for_copies(dir: &Path, files: &Placement) -> Result<()> {
    let linkable = xtask_base::disk::same_filesystem;
    let copied: u64 = files
        .iter()
        .filter_map(|(src, _, _)| {
            let len = std::fs::metadata(src).ok()?.len();
            (len < HARD_LINK_FROM_BYTES || !linkable(src, dir)).then_some(len)
        })
        .sum();
    match xtask_base::disk::free_bytes(dir) {
        Some(free) if copied as f64 + 1e8 > free => bail!(
            "package refused before writing: the bundle's copies need ~{:.2} GB in {} (files on another filesystem cannot be hard-linked), found {:.2} GB free",
            copied as f64 / 1e9,
            dir.display(),
            free / 1e9
        ),
        _ => Ok(()),
    }
}

/// Links or streams every file into `dir`, writes the generated files, the manifest and
/// SHA256SUMS.
///
/// `memo` is the full (this run only) memo of the freshness check: a hard-linked file is the
/// file that check just hashed, so a 27 GB bundle is read once, not twice; copies are hashed
/// where they landed.
pub fn assemble(
    dir: &Path,
    files: &Placement,
    generated: &[(String, Vec<u8>)],
    model: &str,
    memo: &mut HashMemo,
) -> Result<Manifest> {
    require_disk_for_copies(dir, files)?;
    let mut entries = BTreeMap::new();
    let task = xtask_base::ui::progress::Task::new("package: linking and hashing", files.len());
    for (src, rel, role) in files {
        task.working_on(rel);
        let dest = dir.join(rel);
        std::fs::create_dir_all(dest.parent().context("bundle path")?)?;
        // Large files are hard-linked (no copy, no memory); small ones are copied, so editing
        // a bundle file in place can never reach back into ctx/ or onnx/.
        let sha256 = match xtask_recipe::golden::link_or_copy(src, &dest, HARD_LINK_FROM_BYTES)? {
            xtask_recipe::golden::Linked::Yes => memo.sha256(src)?,
            xtask_recipe::golden::Linked::Copied => sha256_file(&dest)?,
        };
        entries.insert(
            rel.clone(),
            ManifestEntry {
                path: rel.clone(),
                bytes: std::fs::metadata(&dest)?.len(),
                sha256,
                role: role.to_string(),
            },
        );
        task.step_done(rel, false);
    }
    drop(task);
    for (rel, bytes) in generated {
        let dest = dir.join(rel);
        std::fs::create_dir_all(dest.parent().context("bundle path")?)?;
        std::fs::write(&dest, bytes)?;
        let role = if rel == "README.md" {
            "model-card"
        } else {
            "report"
        };
        entries.insert(
            rel.clone(),
            ManifestEntry {
                path: rel.clone(),
                bytes: bytes.len() as u64,
                sha256: sha256_bytes(bytes),
                role: role.into(),
            },
        );
    }
    let manifest = Manifest::new(model, entries.into_values().collect());
    manifest.write(dir)?;
    Ok(manifest)
}
