//! The build plan: per component, the three steps with their inputs, outputs, what they will
//! run (rendered by the toolchain), fingerprints and freshness. Pure planning over recipes and what is on disk; nothing runs here, so
//! `build-ctx --dry-run` prints exactly what a build would do.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

pub use crate::ctx_build::artifacts::{
    Artifacts, StepKind, Versions, artifacts, external_data, section_hash,
};
use crate::ctx_build::fingerprint::{
    ComponentRecord, DirtyReason, Freshness, StepKey, step_freshness,
};
use crate::ctx_build::steps;
use crate::ctx_build::toolchain::Rendered;
use crate::hashing::HashMemo;
use crate::htp_target::HtpTarget;
use crate::recipe::{Component, Model};
use crate::soc::Soc;

/// The names of a component's steps in its record, in `StepKind::ALL` order.
pub fn record_names(soc: &Soc) -> [String; 3] {
    [
        steps::Convert::RECORD.to_string(),
        steps::CpuParity::RECORD.to_string(),
        steps::Context::record_name(soc),
    ]
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
}

/// The content hashes a component's keys need; None where the file is missing.
#[derive(Debug, Clone, Default)]
pub struct InputHashes {
    /// The ONNX (`onnx`) and its external-data files, by key part name.
    pub onnx: Option<BTreeMap<String, String>>,
    pub golden: Option<String>,
}

/// The keys of a component's three steps, chained (pure: the seam the tests use).
pub fn step_keys(
    model: &Model,
    comp: &Component,
    target: &HtpTarget,
    versions: &Versions,
    rendered: &[Rendered; 3],
    hashes: &InputHashes,
) -> [Option<StepKey>; 3] {
    let convert = hashes
        .onnx
        .as_ref()
        .map(|onnx| steps::Convert::key(comp, versions, &rendered[0], onnx));
    let cpu = match (&convert, &hashes.golden) {
        (Some(prev), Some(golden)) => Some(steps::CpuParity::key(
            model,
            comp,
            &rendered[1],
            prev,
            golden,
        )),
        _ => None,
    };
    let context = cpu
        .as_ref()
        .map(|prev| steps::Context::key(comp, target, &rendered[2], prev));
    [convert, cpu, context]
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
    let onnx_rel = comp.file.component.onnx.clone();
    let golden_rel = comp.file.golden.file.clone();
    let (hashes, convert_inputs) = hash_inputs(root, comp, memo, &mut missing)?;
    let toolchain = crate::ctx_build::toolchain::for_plan(&versions.toolchain);
    let target = HtpTarget::from_recipe(soc, &comp.file.context);
    let rendered = StepKind::ALL.map(|kind| toolchain.render(kind, comp, &target, &art));
    let keys = step_keys(model, comp, &target, versions, &rendered, &hashes);
    let inputs = [
        convert_inputs,
        vec![
            onnx_rel.display().to_string(),
            golden_rel.display().to_string(),
        ],
        vec![onnx_rel.display().to_string()],
    ];
    let record_names = record_names(soc);
    let outputs = [
        steps::Convert::outputs(&art),
        steps::CpuParity::outputs(&art),
        steps::Context::outputs(&art),
    ];
    let steps = StepKind::ALL
        .into_iter()
        .zip(keys)
        .zip(rendered)
        .zip(inputs)
        .zip(outputs)
        .enumerate()
        .map(|(i, ((((kind, key), rendered), inputs), outputs))| {
            let record_name = record_names[i].clone();
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
                outputs: outputs.iter().map(|p| p.display().to_string()).collect(),
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
    })
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
                    parts.insert(format!("external data {}", ext.display()), sha);
                }
            }
            hashes.onnx = missing.is_empty().then_some(parts);
        }
        None => convert_inputs.push("(external data: known once the ONNX exists)".into()),
    }
    hashes.golden = hash_input(root, &comp.file.golden.file, memo, missing);
    Ok((hashes, convert_inputs))
}

/// What the record says a step built, for the dry run (`restored from cache` when it was).
fn built_summary(record: &ComponentRecord, record_name: &str) -> Option<String> {
    record.steps.get(record_name).map(|r| {
        let how = match &r.restored_from_cache {
            Some(k) => format!(
                " (restored from cache {})",
                crate::ctx_build::step_cache::short(k)
            ),
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
