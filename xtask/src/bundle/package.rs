//! Packaging a built model as a Hugging Face bundle in the model card's layout (`ctx/`,
//! `golden/`, `onnx/<component>/`, `reports/`, `README.md`), plus `manifest.json` and
//! `SHA256SUMS`. Refuses stale artifacts (every stale component is listed) unless
//! `allow_stale`, and any failed gate. Assembled in a staging folder and renamed into place.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::assemble::{Placement, assemble, component_files};
use super::card::{BundleComponent, BundleInfo, htp_figures, latency_figures, render};
use super::checks::{broken_artifacts, usable_report};
use super::manifest::Manifest;
use crate::ctx_build::facts::StepFacts;
use crate::ctx_build::fingerprint::{ComponentRecord, Freshness};
use crate::ctx_build::fresh::runtime_versions;
use crate::ctx_build::plan::plan_component;
use crate::hashing::{HashMemo, sha256_bytes};
use crate::recipe::{Component, Model};
use crate::runtime::Runtime;
use crate::runtime::bootstrap::{QNN_WHEEL, ensure_runtime_rehashed};
use crate::soc::Soc;
use crate::vocab::{BackendKind, ToolchainKind};

/// What to package: the model's selected components for one SoC, into `out`.
pub struct PackageRequest<'a> {
    pub root: &'a Path,
    pub model: &'a Model,
    pub comps: &'a [&'a Component],
    pub soc: Soc,
    /// The bundle folder (absolute); it must not exist or be empty.
    pub out: PathBuf,
    pub allow_stale: bool,
}

pub fn package(req: &PackageRequest<'_>) -> Result<Manifest> {
    let PackageRequest {
        root,
        model,
        comps,
        soc,
        out,
        allow_stale,
    } = req;
    let (root, model, comps, soc, out, allow_stale) =
        (*root, *model, *comps, soc, out, *allow_stale);
    let model_name = &model.file.model.name;
    let out = &super::destination::check_out(root, out)?;
    let _build = super::destination::no_running_build(root, model_name)?;
    let parent = out.parent().context("--out has no parent")?;
    std::fs::create_dir_all(parent)?;
    // One package at a time per destination folder; staging folders of killed runs go first.
    let _lock = crate::atomic::lock_file(&parent.join(".bundle.lock"), "package")?;
    for left in crate::atomic::remove_leftovers(parent, ".bundle-")? {
        crate::errln!("removed {left}, left behind by an interrupted package");
    }
    let rt = Runtime::load(ensure_runtime_rehashed(root)?)?;
    let versions = runtime_versions(&rt)?;
    crate::recipe::target::check_qairt(model, Some(&versions.qnn))?;
    // Release-grade: every input and artifact is re-hashed, nothing is taken on (size, mtime).
    let mut memo = HashMemo::full();
    let mut stale = Vec::new();
    let mut stale_why = Vec::new();
    let mut broken = Vec::new();
    let mut files: Placement = Vec::new();
    let mut components = Vec::new();
    let mut newest_context = 0u64;
    // Re-hashing every input and binary takes minutes at the real size (27 GB).
    let checking = crate::ui::progress::Task::new("package: checking freshness", comps.len());
    for comp in comps {
        checking.working_on(comp.name());
        let art = crate::ctx_build::plan::artifacts(model_name, comp.name(), soc);
        let built = crate::ctx_build::fresh::as_built(
            versions.clone(),
            &ComponentRecord::load(&root.join(&art.record)),
        );
        let plan = plan_component(root, model, comp, soc, &built, &mut memo)?;
        let dirty: Vec<String> = plan
            .steps
            .iter()
            .filter_map(|s| match &s.freshness {
                Freshness::Dirty(r) => Some(format!(
                    "{} ({})",
                    s.kind.label(),
                    r.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join("; ")
                )),
                Freshness::Fresh => None,
            })
            .collect();
        if !dirty.is_empty() {
            stale.push(comp.name().to_string());
            stale_why.push(format!("`{}` is stale: {}", comp.name(), dirty.join(", ")));
        }
        let record = ComponentRecord::load(&root.join(&plan.artifacts.record));
        // Stale may be allowed; broken may not: the binary must be the one its build recorded
        // and its wrapper must point at it.
        broken.extend(broken_artifacts(
            root,
            comp,
            &record,
            soc,
            &plan.artifacts,
            &mut memo,
        ));
        let built = record
            .steps
            .get(&format!("context@soc{}", soc.id))
            .map_or(0, |r| r.finished_unix);
        newest_context = newest_context.max(built);
        checking.step_done(comp.name(), true);
        if !stale.is_empty() && !allow_stale {
            continue; // every stale component is listed before refusing
        }
        components.push(bundle_component(
            root,
            model,
            comp,
            &record,
            soc,
            &plan.artifacts,
            &mut memo,
        )?);
        files.extend(component_files(root, model, comp, &plan.artifacts)?);
    }
    drop(checking);
    if !broken.is_empty() {
        // A missing file is rebuilt by a plain build; a present file that is not what its
        // build recorded needs --force to be replaced.
        let force = match broken.iter().all(|b| b.ends_with(" is missing")) {
            true => "",
            false => " --force",
        };
        let mut names: Vec<&str> = broken.iter().filter_map(|b| b.split(": ").next()).collect();
        names.dedup();
        bail!(
            "refusing to package broken artifacts (--allow-stale does not cover these):\n  {}\nrebuild with `cargo xtask build-ctx --soc {} --model {model_name} --only {}{force}`",
            broken.join("\n  "),
            soc.id,
            names.join(",")
        );
    }
    if !stale.is_empty() && !allow_stale {
        bail!(
            "{} of {} component(s) are stale:\n  {}\nrun `cargo xtask build-ctx --soc {} --model {model_name} --only {}` (or pass --allow-stale)",
            stale.len(),
            comps.len(),
            stale_why.join("\n  "),
            soc.id,
            stale.join(",")
        );
    }
    let reports = root.join("reports").join(model_name);
    let htp = usable_report(
        &reports.join("parity-htp.json"),
        comps,
        newest_context,
        "HTP parity",
    )?;
    // The chain's latency, from the run report of the most telling backend there is.
    let run = [BackendKind::Htp, BackendKind::Cpu, BackendKind::Ort]
        .iter()
        .map(|b| {
            usable_report(
                &reports.join(format!("run-{b}.json")),
                &[],
                newest_context,
                "the chain run",
            )
            .map(|r| r.map(|r| (b, r)))
        })
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .next();
    let info = BundleInfo {
        model: model_name.clone(),
        description: model.file.model.description.clone(),
        soc_id: soc.id,
        soc_chips: soc.chips.iter().map(|s| s.to_string()).collect(),
        htp_arch: soc.htp_arch,
        qairt: model.file.target.qairt.clone(),
        // The versions that built the binaries, from their records (not this runtime's).
        qnn_build: built_versions(&components, |v| &v.qnn, &versions.qnn),
        onnxruntime: built_versions(&components, |v| &v.onnxruntime, &versions.onnxruntime),
        toolchain: bundle_toolchain(&components),
        commit: git_commit(root),
        allow_stale,
        stale,
        unverified_inputs: super::provenance::note(root, model_name),
        components,
    };
    let staging = tempfile::Builder::new()
        .prefix(".bundle-")
        .tempdir_in(parent)?;
    let mut reports_out: Vec<(String, Vec<u8>)> = vec![(
        "reports/bundle.json".into(),
        serde_json::to_vec_pretty(&info)?,
    )];
    if let Some(h) = &htp {
        reports_out.push((
            "reports/parity-htp.json".into(),
            serde_json::to_vec_pretty(h)?,
        ));
    }
    if let Some((b, r)) = &run {
        reports_out.push((
            format!("reports/run-{b}.json"),
            serde_json::to_vec_pretty(r)?,
        ));
    }
    let card = render(
        &info,
        htp.as_ref().map(htp_figures).as_ref(),
        run.as_ref().map(|(_, r)| latency_figures(r)).as_ref(),
    );
    reports_out.push(("README.md".into(), card.into_bytes()));
    let manifest = assemble(staging.path(), &files, &reports_out, model_name, &mut memo)?;
    if out.exists() {
        std::fs::remove_dir(out)?;
    }
    std::fs::rename(staging.keep(), out)
        .with_context(|| format!("cannot move the bundle to {}", out.display()))?;
    Ok(manifest)
}

/// The bundle's view of one component, from its build record's typed facts and nothing else
/// (the recipe may have changed since the build): a record without them is refused.
fn bundle_component(
    root: &Path,
    model: &Model,
    comp: &Component,
    record: &ComponentRecord,
    soc: &Soc,
    art: &crate::ctx_build::plan::Artifacts,
    memo: &mut HashMemo,
) -> Result<BundleComponent> {
    let rebuild = |what: &str| {
        format!(
            "`{}`: {what}: rebuild it (`cargo xtask build-ctx --soc {} --model {} --only {}`)",
            comp.name(),
            soc.id,
            model.file.model.name,
            comp.name()
        )
    };
    let facts = |name: &str| {
        record
            .step(name)
            .map(|r| &r.facts)
            .with_context(|| rebuild(&format!("no usable `{name}` build record")))
    };
    let (StepFacts::Convert(convert), StepFacts::CpuParity(cpu), StepFacts::Context(context)) = (
        facts("convert")?,
        facts("cpu_parity")?,
        facts(&crate::ctx_build::steps::Context::record_name(soc))?,
    ) else {
        bail!(
            "{}",
            rebuild("its build record holds the wrong kind of facts")
        );
    };
    let graph = context
        .target
        .graph
        .as_ref()
        .with_context(|| rebuild("its context record names no graph options"))?;
    if context.soc_id != soc.id {
        bail!(
            "{}",
            rebuild(&format!("its binary was built for soc {}", context.soc_id))
        );
    }
    let cpu_cosine: Vec<(String, f64)> = cpu
        .result
        .outputs
        .iter()
        .map(|o| (o.name.clone(), o.metrics.cosine))
        .collect();
    let waivers = comp
        .file
        .outputs
        .iter()
        .flat_map(|o| {
            BackendKind::ALL.map(|b| {
                (
                    o.name.get_ref().clone(),
                    comp.gate(&model.file, o.name.get_ref(), b),
                )
            })
        })
        .filter_map(|(o, g)| g.waiver.map(|w| (o, g.min_cosine, w)))
        .fold(Vec::new(), |mut acc: Vec<(String, f64, String)>, w| {
            if !acc.contains(&w) {
                acc.push(w);
            }
            acc
        });
    let tensor = |s: &crate::recipe::TensorSpec| {
        (
            s.name.get_ref().clone(),
            s.shape.clone(),
            s.dtype.to_string(),
        )
    };
    Ok(BundleComponent {
        name: comp.name().into(),
        description: comp.file.component.description.clone(),
        inputs: comp.file.inputs.iter().map(tensor).collect(),
        outputs: comp.file.outputs.iter().map(tensor).collect(),
        cpu_cosine,
        graph_name: context.graph_name.clone(),
        ep_sdk_version: context.ep_sdk_version.clone(),
        bin_file: art.bin_name(),
        bin_bytes: std::fs::metadata(root.join(&art.bin))
            .map(|m| m.len())
            .unwrap_or(0),
        // What was compiled, as the record holds it (the recipe may have changed since).
        optimization_level: graph.optimization_level,
        fp16: graph.fp16,
        vtcm_mb: graph.vtcm_mb,
        toolchain: context.versions.toolchain.clone(),
        built_with: context.versions.clone(),
        float_bitwidth: convert.float_bitwidth,
        dlc_validation: convert.dlc_validation.clone(),
        rewrites: convert.rewrites.clone(),
        record_schema: crate::ctx_build::facts::RECORD_SCHEMA,
        recipe_sha256: sha256_bytes(comp.recipe_text.as_bytes()),
        // The freshness check hashed both this run: its full memo answers.
        onnx_sha256: memo.sha256(&root.join(&comp.file.component.onnx))?,
        golden_sha256: memo.sha256(&root.join(&comp.file.golden.file))?,
        waivers,
    })
}

/// One version of the packaged binaries' records (`a + b` when they differ; `none` packaged:
/// the runtime's).
fn built_versions(
    components: &[BundleComponent],
    pick: impl Fn(&crate::ctx_build::facts::ToolVersions) -> &String,
    fallback: &str,
) -> String {
    let mut all: Vec<&str> = components
        .iter()
        .map(|c| pick(&c.built_with).as_str())
        .collect();
    all.sort();
    all.dedup();
    if all.is_empty() {
        return fallback.to_string();
    }
    all.join(" + ")
}

/// The toolchains the packaged binaries were built with, from their records.
fn bundle_toolchain(components: &[BundleComponent]) -> String {
    let mut names: Vec<String> = components
        .iter()
        .map(|c| match c.toolchain.kind {
            ToolchainKind::Embedded => format!(
                "{} ({}, ONNX Runtime QNN EP)",
                c.toolchain.label(),
                QNN_WHEEL.requirement
            ),
            ToolchainKind::Sdk => c.toolchain.label(),
        })
        .collect();
    names.sort();
    names.dedup();
    names.join(" + ")
}

fn git_commit(root: &Path) -> String {
    crate::proc::Proc::new("git")
        .args(["rev-parse", "HEAD"])
        .dir(root)
        .timeout(std::time::Duration::from_secs(30))
        .run()
        .map(|done| done.output.trim().to_string())
        .unwrap_or_else(|_| "unknown (not a git checkout)".into())
}
