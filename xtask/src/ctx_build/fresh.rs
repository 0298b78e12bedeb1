//! The built context binary of a component, checked before it is loaded: present, fresh
//! against its current inputs, byte-identical to what its build recorded, and built by a QNN
//! no newer than the runtime's. Shared by `parity --backend htp` and `run --backend htp`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::ctx_build::fingerprint::{ComponentRecord, Freshness};
use crate::ctx_build::plan::{StepKind, Versions, plan_component};
use crate::hashing::{HashMemo, sha256_file};
use crate::recipe::{Component, Model};
use crate::runtime::Runtime;

/// The ORT and QNN versions the libraries report (they enter every fingerprint).
pub fn runtime_versions(rt: &Runtime) -> Result<Versions> {
    if let Some(why) = rt.qnn_unavailable() {
        bail!("{why}");
    }
    let qnn = rt
        .qnn_build_version()
        .context("the QNN backend reported no build version (run `cargo xtask doctor`)")?;
    Ok(Versions {
        onnxruntime: rt.ort_version.clone(),
        qnn,
        toolchain: crate::ctx_build::facts::ToolchainUsed::embedded(),
        xtask: env!("CARGO_PKG_VERSION").into(),
    })
}

/// The versions with the toolchain that built this component's artifacts, as its convert
/// step's facts name it (either toolchain's artifacts are valid; freshness is about their
/// inputs).
pub fn as_built(mut versions: Versions, record: &ComponentRecord) -> Versions {
    if let Some(s) = record.steps.get("convert") {
        versions.toolchain = s.facts.versions().toolchain.clone();
    }
    versions
}

/// For `parity --backend htp`: the component's wrapper, refused when the binary is missing,
/// stale against the current inputs, or not byte-identical to what the build recorded.
pub fn fresh_context_wrapper(
    root: &Path,
    rt: &Runtime,
    model: &Model,
    comp: &Component,
) -> Result<PathBuf> {
    let soc = crate::htp_target::target_soc(model, None)?;
    let versions = runtime_versions(rt)?;
    // Before an HTP load: the binary and its inputs are re-hashed in full, never taken on
    // (size, mtime) trust.
    let mut memo = HashMemo::full();
    let art = crate::ctx_build::plan::artifacts(&model.file.model.name, comp.name(), &soc);
    let versions = as_built(versions, &ComponentRecord::load(&root.join(&art.record)));
    let plan = plan_component(root, model, comp, &soc, &versions, &mut memo)?;
    let step = plan
        .steps
        .iter()
        .find(|s| s.kind == StepKind::Context)
        .context("no context step")?;
    let rebuild = format!(
        "cargo xtask build-ctx --soc {} --model {} --only {}",
        soc.id,
        model.file.model.name,
        comp.name()
    );
    let bin = root.join(&plan.artifacts.bin);
    if !bin.is_file() {
        bail!(
            "no context binary {} (run `{rebuild}`)",
            plan.artifacts.bin.display()
        );
    }
    if let Freshness::Dirty(reasons) = &step.freshness {
        bail!(
            "context binary {} is stale: {} (run `{rebuild}`)",
            plan.artifacts.bin.display(),
            reasons.join("; ")
        );
    }
    let record = ComponentRecord::load(&root.join(&plan.artifacts.record));
    let recorded = record
        .steps
        .get(&step.record_name)
        .and_then(|r| r.outputs.get(&plan.artifacts.bin.display().to_string()));
    if recorded != Some(&sha256_file(&bin)?) {
        bail!(
            "context binary {} does not match the sha256 its build recorded (run `{rebuild}`)",
            plan.artifacts.bin.display()
        );
    }
    let built_with = match record.steps.get(&step.record_name).map(|r| &r.facts) {
        Some(crate::ctx_build::facts::StepFacts::Context(f)) => f.ep_sdk_version.as_deref(),
        _ => None,
    };
    let what = plan.artifacts.bin.display().to_string();
    if let Some(note) =
        crate::runtime::version::check_context_version(&what, built_with, &versions.qnn, &rebuild)?
    {
        crate::errln!("note: {note}");
    }
    Ok(root.join(&plan.artifacts.wrapper))
}
