//! The build plan: per component, its steps (quantize when it is quantized, then convert, CPU
//! parity, context binary) with their inputs, outputs, what they will run (rendered by the
//! toolchain), chained fingerprints and freshness. Pure planning over recipes and what is on
//! disk; nothing runs here, so `build-ctx --dry-run` prints exactly what a build would do.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

pub use crate::artifacts::{Artifacts, StepKind, Versions, artifacts, external_data, section_hash};
use crate::fingerprint::{ComponentRecord, DirtyReason, Freshness, StepKey, step_freshness};
use crate::steps;
use crate::toolchain::Rendered;
use xtask_base::hashing::HashMemo;
use xtask_base::soc::Soc;
use xtask_recipe::htp_target::HtpTarget;
use xtask_recipe::recipe::{Component, Model};

/// A component's steps and their names in its record, in the order they run.
pub fn record_names(comp: &Component, soc: &Soc) -> Vec<(StepKind, String)> {
    StepKind::of(comp)
        .into_iter()
        .map(|k| (k, k.record_name(soc)))
        .collect()
}

#[derive(Debug, Clone, Serialize)]
pub struct PlannedStep {
    pub kind: StepKind,
    /// The record entry of this step (`context` is per SoC).
    pub record_name: String,
    /// None when an input file is missing.
    pub key: Option<StepKey>,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    /// What the step will run, as its toolchain renders it.
    pub rendered: Rendered,
    #[serde(skip)]
    pub freshness: Freshness,
    /// What its record says was built (the facts' summary), if it has one.
    pub built: Option<String>,
}

impl PlannedStep {
    pub fn is_fresh(&self) -> bool {
        self.freshness == Freshness::Fresh
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ComponentPlan {
    pub component: String,
    pub artifacts: Artifacts,
    /// The HTP target of this component on this SoC, rendered once per build: the plan's
    /// renderings, the context step and its record all use this one.
    pub target: HtpTarget,
    pub steps: Vec<PlannedStep>,
    pub missing: Vec<String>,
    /// The precision it is built at (the disk model sizes a quantized build's outputs by it).
    pub precision: xtask_base::vocab::Precision,
}

/// The content hashes a component's keys need; None where the file is missing.
#[derive(Debug, Clone, Default)]
pub struct InputHashes {
    /// The ONNX (`onnx`) and its external-data files, by key part name.
    pub onnx: Option<BTreeMap<String, String>>,
    pub golden: Option<String>,
    /// A quantized component's calibration files (`path sha256` lines), hashed.
    pub calibration: Option<String>,
}

/// The keys of a component's steps (`StepKind::of`), chained: each holds the previous one's
/// (pure: the seam the tests use). `rendered` is aligned with the steps.
pub fn step_keys(
    model: &Model,
    comp: &Component,
    target: &HtpTarget,
    versions: &Versions,
    rendered: &[Rendered],
    hashes: &InputHashes,
) -> Vec<Option<StepKey>> {
    let quantized = comp.precision().is_quantized();
    let mut previous: Option<StepKey> = None;
    let mut keys = Vec::new();
    for (kind, r) in StepKind::of(comp).into_iter().zip(rendered) {
        let key = match kind {
            StepKind::Quantize => match (&hashes.onnx, &hashes.calibration) {
                (Some(onnx), Some(calibration)) => Some(crate::step_quantize::Quantize::key(
                    comp,
                    versions,
                    r,
                    onnx,
                    calibration,
                )),
                _ => None,
            },
            StepKind::Convert if quantized => previous
                .as_ref()
                .map(|q| steps::Convert::key_after_quantize(comp, versions, r, q)),
            StepKind::Convert => hashes
                .onnx
                .as_ref()
                .map(|onnx| steps::Convert::key(comp, versions, r, onnx)),
            StepKind::CpuParity => match (&previous, &hashes.golden) {
                (Some(prev), Some(golden)) => {
                    Some(steps::CpuParity::key(model, comp, r, prev, golden))
                }
                _ => None,
            },
            StepKind::Context => previous
                .as_ref()
                .map(|prev| steps::Context::key(comp, target, r, prev)),
        };
        previous = key.clone();
        keys.push(key);
    }
    keys
}

/// Plans one component: hashes its inputs (memoised by path, size, mtime), renders what each
/// step runs with the toolchain named by `versions.toolchain`, chains the keys, and compares
/// them with the component's record.
pub fn plan_component(
    root: &Path,
    model: &Model,
    comp: &Component,
    soc: &Soc,
    versions: &Versions,
    memo: &mut HashMemo,
) -> Result<ComponentPlan> {
    let name = comp.name();
    let art = artifacts(&model.file.model.name, name, soc);
    let record = ComponentRecord::load(&root.join(&art.record));
    let mut missing = Vec::new();
    let (mut hashes, float_inputs) = hash_inputs(root, comp, memo, &mut missing)?;
    let calibration_inputs = match &comp.file.quantize {
        Some(q) if q.precision.is_quantized() => {
            let files = xtask_runtime::quantize::calibration::source_files(root, model, comp, q)?;
            hashes.calibration = hash_files(root, &files, memo, &mut missing);
            files.iter().map(|f| f.display().to_string()).collect()
        }
        _ => Vec::new(),
    };
    let toolchain = crate::toolchain::for_plan(&versions.toolchain);
    let target = HtpTarget::for_component(soc, comp);
    let kinds = StepKind::of(comp);
    let rendered: Vec<Rendered> = kinds
        .iter()
        .map(|&kind| match kind {
            StepKind::Quantize => crate::step_quantize::Quantize::render(comp, &art),
            kind => toolchain.render(kind, comp, &target, &art),
        })
        .collect();
    let keys = step_keys(
        model,
        comp,
        &target,
        versions,
        &content_only(rendered.clone(), &model.file.model.name, comp, &art),
        &hashes,
    );
    let qnn_onnx = if comp.precision().is_quantized() {
        art.qdq.display().to_string()
    } else {
        comp.file.component.onnx.display().to_string()
    };
    let golden_rel = comp.file.golden.file.display().to_string();
    let has_external_data = hashes.onnx.as_ref().is_some_and(|parts| parts.len() > 1);
    let steps = kinds
        .into_iter()
        .zip(keys)
        .zip(rendered)
        .map(|((kind, key), rendered)| {
            let inputs = match kind {
                StepKind::Quantize => [float_inputs.clone(), calibration_inputs.clone()].concat(),
                StepKind::Convert if comp.precision().is_quantized() => vec![qnn_onnx.clone()],
                StepKind::Convert => float_inputs.clone(),
                StepKind::CpuParity => vec![qnn_onnx.clone(), golden_rel.clone()],
                StepKind::Context => vec![qnn_onnx.clone()],
            };
            let record_name = kind.record_name(soc);
            let freshness = match &key {
                Some(k) => step_freshness(root, &record, &record_name, k, memo),
                None => Freshness::dirty(DirtyReason::InputMissing),
            };
            PlannedStep {
                kind,
                built: built_summary(&record, &record_name),
                record_name,
                key,
                inputs,
                outputs: step_outputs(kind, &art, has_external_data)
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect(),
                rendered,
                freshness,
            }
        })
        .collect();
    Ok(ComponentPlan {
        component: name.to_string(),
        artifacts: art,
        target,
        steps,
        missing,
        precision: comp.precision(),
    })
}

/// The files a step writes (the quantize step's external data only when the float ONNX has
/// external data: then the QDQ ONNX has it too).
fn step_outputs(kind: StepKind, art: &Artifacts, external_data: bool) -> Vec<std::path::PathBuf> {
    match kind {
        StepKind::Quantize => crate::step_quantize::Quantize::outputs(art, external_data),
        StepKind::Convert => steps::Convert::outputs(art),
        StepKind::CpuParity => steps::CpuParity::outputs(art),
        StepKind::Context => steps::Context::outputs(art),
    }
}

/// `path sha256` of every file, hashed as one key part; None (named in `missing`) when one is
/// missing.
fn hash_files(
    root: &Path,
    files: &[std::path::PathBuf],
    memo: &mut HashMemo,
    missing: &mut Vec<String>,
) -> Option<String> {
    let mut lines = String::new();
    let mut complete = true;
    for f in files {
        match hash_input(root, f, memo, missing) {
            // By position, not path: the same calibration set elsewhere is the same content.
            Some(sha) => lines.push_str(&format!("{sha}\n")),
            None => complete = false,
        }
    }
    complete.then(|| xtask_base::hashing::sha256_bytes(lines.as_bytes()))
}

/// The ONNX (with its external data) and the golden, hashed (None where missing, named in
/// `missing`), and the convert step's input files.
fn hash_inputs(
    root: &Path,
    comp: &Component,
    memo: &mut HashMemo,
    missing: &mut Vec<String>,
) -> Result<(InputHashes, Vec<String>)> {
    let onnx_rel = &comp.file.component.onnx;
    let mut convert_inputs = vec![onnx_rel.display().to_string()];
    let mut hashes = InputHashes::default();
    match hash_input(root, onnx_rel, memo, missing) {
        Some(sha) => {
            let mut parts = BTreeMap::from([("onnx".to_string(), sha)]);
            for ext in external_data(root, onnx_rel)? {
                convert_inputs.push(ext.display().to_string());
                if let Some(sha) = hash_input(root, &ext, memo, missing) {
                    // Named as the ONNX names it (beside the graph), not by its project path.
                    let at = ext.strip_prefix(onnx_rel.parent().unwrap_or(Path::new("")));
                    parts.insert(
                        format!("external data {}", at.unwrap_or(&ext).display()),
                        sha,
                    );
                }
            }
            hashes.onnx = missing.is_empty().then_some(parts);
        }
        None => convert_inputs.push("(external data: known once the ONNX exists)".into()),
    }
    hashes.golden = hash_input(root, &comp.file.golden.file, memo, missing);
    Ok((hashes, convert_inputs))
}

/// The rendered parts as keys take them: the project paths that name a model's folders (its
/// ONNX folder, `ctx/<model>`, its rewritten copy's folder) replaced by placeholders, so two
/// models or checkouts with the same content have the same keys. The dry run shows the real
/// paths (`Rendered::commands`).
fn content_only(
    mut rendered: Vec<Rendered>,
    model: &str,
    comp: &Component,
    art: &crate::artifacts::Artifacts,
) -> Vec<Rendered> {
    let dir = |p: &Path| p.parent().map(|d| d.display().to_string());
    let mut names: Vec<(String, &str)> = [
        (
            dir(&crate::toolchain::rendered_qnn_onnx(comp, art)),
            "ONNX_DIR",
        ),
        (dir(&comp.file.component.onnx), "ONNX_DIR"),
        (Some(format!("ctx/{model}")), "CTX"),
    ]
    .into_iter()
    .filter_map(|(p, to)| p.filter(|p| !p.is_empty()).map(|p| (p, to)))
    .collect();
    // Longest first: a folder inside another is replaced whole.
    names.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
    for r in &mut rendered {
        for text in r.parts.values_mut() {
            for (path, to) in &names {
                *text = replace_path(text, path, to);
            }
        }
    }
    rendered
}

/// `text` with `path` replaced by `to` where it stands as a whole path (followed by `/`, a
/// space, a line end or nothing), so `onnx/tiny` leaves `onnx/tiny-b` alone.
fn replace_path(text: &str, path: &str, to: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(path) {
        let after = &rest[i + path.len()..];
        let whole = after.is_empty() || after.starts_with(['/', ' ', '\n', '"', '\'', ',']);
        let before_ok = i == 0 || rest[..i].ends_with([' ', '=', '\n', '"', '\'', ',']);
        out.push_str(&rest[..i]);
        out.push_str(if whole && before_ok { to } else { path });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// What the record says a step built, for the dry run (`restored from cache` when it was).
fn built_summary(record: &ComponentRecord, record_name: &str) -> Option<String> {
    record.steps.get(record_name).map(|r| {
        let how = match &r.restored_from_cache {
            Some(k) => format!(" (restored from cache {})", crate::step_cache::short(k)),
            None => String::new(),
        };
        format!("{}{how}", r.facts.summary())
    })
}

fn hash_input(
    root: &Path,
    rel: &Path,
    memo: &mut HashMemo,
    missing: &mut Vec<String>,
) -> Option<String> {
    match memo.sha256(&root.join(rel)) {
        Ok(sha) => Some(sha),
        Err(_) => {
            missing.push(rel.display().to_string());
            None
        }
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
