//! What a build would refuse, found before anything runs: `build-ctx --dry-run` refuses it too
//! (exit 2), rather than printing a plan the build then fails at its quantize step.
//!
//! - `[quantize] exclude`: every entry names an operator type or a node of the graph the
//!   quantizer reads (the recipe's ONNX, or its `[rewrite]` copy, rewritten in memory here);
//! - `[quantize] calibration = "<folder>"`: the folder holds at least one `.npz` whose keys
//!   are the component's inputs.
//!
//! A graph that is not on disk yet (a model whose inputs are still to be fetched) is not
//! checked here: the build names it when it needs it.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result};

use xtask_base::bad_input::BadInput;
use xtask_recipe::recipe::Component;
use xtask_recipe::recipe::quantize::CalibrationSource;
use xtask_recipe::recipe::validate::at;

/// Every problem of the selected components' quantize inputs, refused together (exit 2).
pub fn refuse_unbuildable(root: &Path, comps: &[&Component]) -> Result<()> {
    let mut problems = Vec::new();
    for comp in comps {
        let Some(q) = comp
            .file
            .quantize
            .as_ref()
            .filter(|q| q.precision.is_quantized())
        else {
            continue;
        };
        if !q.exclude.is_empty() && root.join(&comp.file.component.onnx).is_file() {
            problems.extend(unmatched_excludes(root, comp, &q.exclude)?);
        }
        if let CalibrationSource::Folder(dir) = &q.calibration {
            problems.extend(calibration_folder(root, comp, dir));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(BadInput(anyhow::anyhow!(
        "the build would refuse these inputs (nothing was run):\n  {}",
        problems.join("\n  ")
    ))
    .into())
}

/// The `exclude` entries that are neither an operator type nor a node name of the graph the
/// quantizer reads, each named with the types the graph holds.
fn unmatched_excludes(root: &Path, comp: &Component, exclude: &[String]) -> Result<Vec<String>> {
    let onnx = &comp.file.component.onnx;
    let bytes = std::fs::read(root.join(onnx))
        .with_context(|| format!("cannot read {}", onnx.display()))?;
    let mut summary = xtask_onnx::onnx::proto::parse_model(&bytes)
        .with_context(|| format!("{} is not a valid ONNX model", onnx.display()))?;
    let rewrites = &comp.file.rewrite.apply;
    if !rewrites.is_empty() {
        let (rewritten, _) =
            xtask_onnx::onnx::decompose::apply_parsed(&bytes, Some(&summary), rewrites)
                .with_context(|| {
                    format!(
                        "{}: [rewrite] of {}",
                        comp.recipe_path.display(),
                        onnx.display()
                    )
                })?;
        summary = xtask_onnx::onnx::proto::parse_model(&rewritten)?;
    }
    let types: BTreeSet<&str> = summary.nodes.iter().map(|n| n.op_type.as_str()).collect();
    let names: BTreeSet<&str> = summary.nodes.iter().map(|n| n.name.as_str()).collect();
    let where_ = at(
        &comp.recipe_path,
        &comp.recipe_text,
        "quantize",
        "exclude",
        0,
    );
    Ok(exclude
        .iter()
        .enumerate()
        .filter(|(_, e)| !types.contains(e.as_str()) && !names.contains(e.as_str()))
        .map(|(i, e)| {
            format!(
                "{where_}[{i}] = {e:?} is neither an operator type nor a node name of {}{}; its operator types: {}",
                onnx.display(),
                match rewrites.is_empty() {
                    true => "",
                    false => " (as [rewrite] leaves it)",
                },
                types.iter().copied().collect::<Vec<_>>().join(", ")
            )
        })
        .collect())
}

/// A calibration folder that holds no `.npz` whose keys are the component's inputs.
fn calibration_folder(root: &Path, comp: &Component, dir: &Path) -> Vec<String> {
    let where_ = at(
        &comp.recipe_path,
        &comp.recipe_text,
        "quantize",
        "calibration",
        0,
    );
    let inputs: BTreeSet<String> = comp
        .file
        .inputs
        .iter()
        .map(|s| s.name.get_ref().clone())
        .collect();
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return vec![format!(
            "{where_} = {:?} is not a folder",
            dir.display().to_string()
        )];
    };
    let mut npz: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "npz"))
        .collect();
    npz.sort();
    let mut seen = Vec::new();
    for path in &npz {
        let keys = npz_keys(path);
        if keys.as_ref().is_ok_and(|k| inputs.is_subset(k)) {
            return Vec::new();
        }
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        seen.push(match keys {
            Ok(k) => format!("{name}: {}", k.into_iter().collect::<Vec<_>>().join(", ")),
            Err(e) => format!("{name}: not an npz ({e:#})"),
        });
    }
    let found = match seen.is_empty() {
        true => "it holds no .npz".to_string(),
        false => format!("its .npz hold: {}", seen.join("; ")),
    };
    vec![format!(
        "{where_} = {:?}: no .npz whose keys are `{}`'s inputs ({}); {found}",
        dir.display().to_string(),
        comp.name(),
        inputs.into_iter().collect::<Vec<_>>().join(", ")
    )]
}

/// The array names of an npz (its members without `.npy`), without reading the arrays.
fn npz_keys(path: &Path) -> Result<BTreeSet<String>> {
    let file = std::fs::File::open(path)?;
    let archive = zip::ZipArchive::new(file)?;
    Ok(archive
        .file_names()
        .map(|n| n.trim_end_matches(".npy").to_string())
        .collect())
}
