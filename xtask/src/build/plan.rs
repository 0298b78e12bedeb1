//! The build plan: per component, the three steps with their inputs, outputs, fingerprints and
//! freshness. Pure planning over recipes and what is on disk; nothing runs here, so
//! `build-ctx --dry-run` prints exactly what a build would do.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use crate::build::fingerprint::{ComponentRecord, Freshness, StepKey, freshness};
use crate::hashing::{HashMemo, sha256_bytes};
use crate::recipe::{Component, Model};
use crate::target::soc::Soc;

/// Tool versions that enter every fingerprint.
#[derive(Debug, Clone, Serialize)]
pub struct Versions {
    pub onnxruntime: String,
    pub qnn: String,
    /// `embedded` or `qairt-sdk <version>`: which tools run the steps.
    pub toolchain: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum StepKind {
    Convert,
    CpuParity,
    Context,
}

impl StepKind {
    pub fn label(self) -> &'static str {
        match self {
            StepKind::Convert => "convert",
            StepKind::CpuParity => "cpu parity",
            StepKind::Context => "context binary",
        }
    }
}

/// File names of a component's artifacts in `ctx/<model>/` (relative to the project root).
#[derive(Debug, Clone, Serialize)]
pub struct Artifacts {
    pub dlc: PathBuf,
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
    #[serde(skip)]
    pub freshness: Freshness,
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
    pub steps: Vec<PlannedStep>,
    pub missing: Vec<String>,
}

/// Plans one component: hashes its inputs (memoised by path, size, mtime), chains the keys,
/// and compares them with the component's record.
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
    let mut convert_parts = BTreeMap::new();
    match hash_input(root, &onnx_rel, memo, &mut missing) {
        Some(sha) => {
            convert_parts.insert("onnx".to_string(), sha);
            for ext in external_data(root, &onnx_rel)? {
                convert_inputs.push(ext.display().to_string());
                if let Some(sha) = hash_input(root, &ext, memo, &mut missing) {
                    convert_parts.insert(format!("external data {}", ext.display()), sha);
                }
            }
        }
        None => convert_inputs.push("(external data: known once the ONNX exists)".into()),
    }
    convert_parts.insert(
        "recipe [component]".into(),
        section_hash(&comp.file.component),
    );
    convert_parts.insert(
        "recipe inputs/outputs".into(),
        section_hash(&(&comp.file.inputs, &comp.file.outputs)),
    );
    convert_parts.insert("recipe [convert]".into(), section_hash(&comp.file.convert));
    convert_parts.insert("onnxruntime version".into(), versions.onnxruntime.clone());
    convert_parts.insert("qnn version".into(), versions.qnn.clone());
    convert_parts.insert("toolchain".into(), versions.toolchain.clone());
    let convert_key = (missing.is_empty()).then(|| StepKey::new("convert", convert_parts));

    let golden_sha = hash_input(root, &golden_rel, memo, &mut missing);
    let cpu_key = match (&convert_key, golden_sha) {
        (Some(prev), Some(golden)) => Some(StepKey::new(
            "cpu_parity",
            BTreeMap::from([
                ("convert step".to_string(), prev.key.clone()),
                ("golden".to_string(), golden),
                (
                    "recipe [parity]".to_string(),
                    section_hash(&(&comp.file.parity, &model.file.parity)),
                ),
            ]),
        )),
        _ => None,
    };
    let context_key = cpu_key.as_ref().map(|prev| {
        StepKey::new(
            "context",
            BTreeMap::from([
                ("cpu parity step".to_string(), prev.key.clone()),
                (
                    "recipe [context]".to_string(),
                    section_hash(&comp.file.context),
                ),
                ("soc".to_string(), format!("{} v{}", soc.id, soc.htp_arch)),
            ]),
        )
    });

    let step = |kind: StepKind,
                record_name: String,
                key: Option<StepKey>,
                inputs: Vec<String>,
                outputs: Vec<String>,
                memo: &mut HashMemo| {
        let freshness = match &key {
            Some(k) => freshness(root, record.steps.get(&record_name), k, memo),
            None => Freshness::Dirty(vec!["an input file is missing".into()]),
        };
        PlannedStep {
            kind,
            record_name,
            key,
            inputs,
            outputs,
            freshness,
        }
    };
    let steps = vec![
        step(
            StepKind::Convert,
            "convert".into(),
            convert_key,
            convert_inputs,
            vec![art.dlc.display().to_string()],
            memo,
        ),
        step(
            StepKind::CpuParity,
            "cpu_parity".into(),
            cpu_key,
            vec![
                onnx_rel.display().to_string(),
                golden_rel.display().to_string(),
            ],
            vec![],
            memo,
        ),
        step(
            StepKind::Context,
            format!("context@soc{}", soc.id),
            context_key,
            vec![onnx_rel.display().to_string()],
            vec![
                art.bin.display().to_string(),
                art.wrapper.display().to_string(),
            ],
            memo,
        ),
    ];
    Ok(ComponentPlan {
        component: name.to_string(),
        artifacts: art,
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

fn section_hash<T: Serialize>(section: &T) -> String {
    sha256_bytes(&serde_json::to_vec(section).unwrap_or_default())
}
