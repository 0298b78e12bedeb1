//! Laying files into a bundle folder: which files a component contributes and where they go,
//! hard links for large files and copies for small ones, then the manifest and checksums.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::info::BundleInfo;
use super::manifest::{Manifest, ManifestEntry, Role};
use xtask_base::hashing::{HashMemo, sha256_bytes, sha256_file};
use xtask_recipe::recipe::{Component, Model};

/// Files at least this large are hard-linked into the bundle instead of copied.
const HARD_LINK_FROM_BYTES: u64 = 256 << 20;

/// Files to place in the bundle: (source, path in the bundle, role).
pub type Placement = Vec<(PathBuf, String, Role)>;

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
            Role::ContextBinary,
        ),
        (
            root.join(&art.record),
            format!("ctx/{}", file_name(&art.record)),
            Role::BuildRecord,
        ),
        (
            root.join(&comp.file.component.onnx),
            format!("onnx/{name}/{}", file_name(&comp.file.component.onnx)),
            Role::Onnx,
        ),
        (
            root.join(&comp.file.golden.file),
            format!("golden/{}", file_name(&comp.file.golden.file)),
            Role::Golden,
        ),
    ];
    if model.file.package.wrappers {
        files.push((
            root.join(&art.wrapper),
            format!("ctx/{}", file_name(&art.wrapper)),
            Role::EpcontextWrapper,
        ));
    }
    if model.file.package.dlc {
        files.push((
            root.join(&art.dlc),
            format!("ctx/{}", file_name(&art.dlc)),
            Role::Dlc,
        ));
    }
    for ext in xtask_ctx_build::plan::external_data(root, &comp.file.component.onnx)? {
        files.push((
            root.join(&ext),
            format!("onnx/{name}/{}", file_name(&ext)),
            Role::OnnxExternalData,
        ));
    }
    if let Some(host) = model.file.host.as_ref().filter(|h| h.vision == name) {
        let trace = xtask_recipe::golden::trace_files(root, host)?;
        // A trace that disagrees with the recipe is not shipped with it.
        xtask_recipe::golden::trace::check_against_recipe(model, host, &trace)?;
        for file in [trace.json, trace.npz] {
            let rel = format!("golden/{}", file_name(&file));
            files.push((file, rel, Role::Trace));
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

/// Links or streams every file into `dir`, writes the generated files (reports, the card),
/// then `reports/bundle.json` binding every one of them (`info.files`: path, size, sha256 and
/// role of each file but itself and the card, which `verify` renders again), then the
/// manifest and SHA256SUMS.
///
/// `memo` is the full (this run only) memo of the freshness check: a hard-linked file is the
/// file that check just hashed, so a 27 GB bundle is read once, not twice; copies are hashed
/// where they landed.
pub fn assemble(
    dir: &Path,
    files: &Placement,
    generated: &[(String, Vec<u8>)],
    mut info: BundleInfo,
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
                role: *role,
            },
        );
        task.step_done(rel, false);
    }
    drop(task);
    for (rel, bytes) in generated {
        write_generated(dir, rel, bytes, &mut entries)?;
    }
    info.files = entries
        .values()
        .filter(|e| e.path != CARD)
        .cloned()
        .collect();
    let info_json = xtask_base::record::to_json(&info)?;
    write_generated(dir, INFO, &info_json, &mut entries)?;
    let manifest = Manifest::new(&info.model, entries.into_values().collect());
    manifest.write(dir)?;
    Ok(manifest)
}

/// Writes one file `package` made itself (a report, the card) and lists it.
fn write_generated(
    dir: &Path,
    rel: &str,
    bytes: &[u8],
    entries: &mut BTreeMap<String, ManifestEntry>,
) -> Result<()> {
    let dest = dir.join(rel);
    std::fs::create_dir_all(dest.parent().context("bundle path")?)?;
    std::fs::write(&dest, bytes)?;
    let role = match rel {
        CARD => Role::ModelCard,
        _ => Role::Report,
    };
    entries.insert(
        rel.to_string(),
        ManifestEntry {
            path: rel.to_string(),
            bytes: bytes.len() as u64,
            sha256: sha256_bytes(bytes),
            role,
        },
    );
    Ok(())
}

/// The model card, bound by being rendered again from the bundle's reports.
pub const CARD: &str = "README.md";
/// The bundle's description, binding every other file.
pub const INFO: &str = "reports/bundle.json";
