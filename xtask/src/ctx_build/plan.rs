//! The build plan: per component, the three steps with their inputs, outputs, what they will
//! run (rendered by the toolchain), fingerprints and freshness. Pure planning over recipes and what is on disk; nothing runs here, so
//! `build-ctx --dry-run` prints exactly what a build would do.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use crate::ctx_build::fingerprint::{
    ComponentRecord, DirtyReason, Freshness, StepKey, step_freshness,
};
use crate::ctx_build::steps;
use crate::ctx_build::toolchain::Rendered;
use crate::hashing::{HashMemo, sha256_bytes};
use crate::htp_target::HtpTarget;
use crate::recipe::{Component, Model};
use crate::soc::Soc;

/// Tool versions that enter every fingerprint (and every step's facts).
pub type Versions = crate::ctx_build::facts::ToolVersions;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    Convert,
    CpuParity,
    Context,
}

impl StepKind {
    /// The steps of a component, in the order they run.
    pub const ALL: [StepKind; 3] = [StepKind::Convert, StepKind::CpuParity, StepKind::Context];

    pub fn label(self) -> &'static str {
        match self {
            StepKind::Convert => "convert",
            StepKind::CpuParity => "cpu parity",
            StepKind::Context => "context binary",
        }
    }
}

/// The names of a component's steps in its record, in `StepKind::ALL` order.
pub fn record_names(soc: &Soc) -> [String; 3] {
    [
        steps::Convert::RECORD.to_string(),
        steps::CpuParity::RECORD.to_string(),
        steps::Context::record_name(soc),
    ]
}

/// File names of a component's artifacts in `ctx/<model>/` (relative to the project root).
#[derive(Debug, Clone, Serialize)]
pub struct Artifacts {
    /// The current DLC: the last one whose CPU parity passed.
    pub dlc: PathBuf,
    /// The convert step's DLC until its CPU parity passes (a failing one never replaces `dlc`).
    pub dlc_candidate: PathBuf,
    pub bin: PathBuf,
    pub wrapper: PathBuf,
    pub record: PathBuf,
}

impl Artifacts {
    /// `<component>_socid<N>_archv<A>.bin`
    pub fn bin_name(&self) -> String {
        file_name(&self.bin)
    }

    /// `<component>_socid<N>_archv<A>_ctx` (the wrapper without `.onnx`).
    pub fn wrapper_stem(&self) -> String {
        file_name(&self.wrapper)
            .trim_end_matches(".onnx")
            .to_string()
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

pub fn artifacts(model: &str, component: &str, soc: &Soc) -> Artifacts {
    let dir = PathBuf::from("ctx").join(model);
    let stem = format!("{component}_socid{}_archv{}", soc.id, soc.htp_arch);
    Artifacts {
        dlc: dir.join(format!("{component}.dlc")),
        dlc_candidate: dir.join(format!("{component}.candidate.dlc")),
        bin: dir.join(format!("{stem}.bin")),
        wrapper: dir.join(format!("{stem}_ctx.onnx")),
        record: dir.join(format!("{component}.record.json")),
    }
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

    let mut convert_inputs = vec![onnx_rel.display().to_string()];
    let mut hashes = InputHashes::default();
    match hash_input(root, &onnx_rel, memo, &mut missing) {
        Some(sha) => {
            let mut parts = BTreeMap::from([("onnx".to_string(), sha)]);
            for ext in external_data(root, &onnx_rel)? {
                convert_inputs.push(ext.display().to_string());
                if let Some(sha) = hash_input(root, &ext, memo, &mut missing) {
                    parts.insert(format!("external data {}", ext.display()), sha);
                }
            }
            hashes.onnx = missing.is_empty().then_some(parts);
        }
        None => convert_inputs.push("(external data: known once the ONNX exists)".into()),
    }
    hashes.golden = hash_input(root, &golden_rel, memo, &mut missing);
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
    let mut steps = Vec::new();
    for (i, ((((kind, key), rendered), inputs), outputs)) in StepKind::ALL
        .into_iter()
        .zip(keys)
        .zip(rendered)
        .zip(inputs)
        .zip(outputs)
        .enumerate()
    {
        let record_name = record_names[i].clone();
        let freshness = match &key {
            Some(k) => step_freshness(root, &record, &record_name, k, memo),
            None => Freshness::dirty(DirtyReason::InputMissing),
        };
        let built = record.steps.get(&record_name).map(|r| {
            let how = match &r.restored_from_cache {
                Some(k) => format!(
                    " (restored from cache {})",
                    crate::ctx_build::step_cache::short(k)
                ),
                None => String::new(),
            };
            format!("{}{how}", r.facts.summary())
        });
        steps.push(PlannedStep {
            kind,
            built,
            record_name,
            key,
            inputs,
            outputs: outputs.iter().map(|p| p.display().to_string()).collect(),
            rendered,
            freshness,
        });
    }
    Ok(ComponentPlan {
        component: name.to_string(),
        artifacts: art,
        target,
        steps,
        missing,
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

/// External-data files the ONNX graph refers to (relative to the project root).
pub fn external_data(root: &Path, onnx_rel: &Path) -> Result<Vec<PathBuf>> {
    let summary = crate::onnx::proto::read_summary(&root.join(onnx_rel))?;
    let dir = onnx_rel.parent().unwrap_or(Path::new(""));
    Ok(summary
        .external_data
        .iter()
        .map(|loc| dir.join(loc))
        .collect())
}

/// The hash of a recipe section as it was parsed (a key part).
pub fn section_hash<T: Serialize>(section: &T) -> String {
    sha256_bytes(&serde_json::to_vec(section).unwrap_or_default())
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
