//! Packaging a built model as a Hugging Face bundle in the model card's layout (`ctx/`,
//! `golden/`, `onnx/<component>/`, `reports/`, `README.md`), plus `manifest.json` and
//! `SHA256SUMS`. Refuses stale artifacts (every stale component is listed) unless
//! `allow_stale`, and any failed gate. Assembled in a staging folder and renamed into place.

use std::path::Path;

use super::package_request::PackageRequest;
use anyhow::{Context, Result, bail};

use super::assemble::{Placement, assemble, component_files};
use super::card::render;
use super::card_figures::{htp_figures, latency_figures};
use super::card_reports::CardReports;
use super::checks::{ContextBuilt, broken_artifacts};
use super::component::bundle_component;
use super::info::{BuiltBy, BundleComponent, BundleInfo};
use super::manifest::Manifest;
use xtask_base::hashing::HashMemo;
use xtask_base::record::Versioned;
use xtask_base::vocab::{BackendKind, ToolchainKind};
use xtask_ctx_build::fingerprint::{ComponentRecord, Freshness};
use xtask_ctx_build::fresh::runtime_versions;
use xtask_ctx_build::plan::{ComponentPlan, Versions, plan_component};
use xtask_recipe::recipe::Component;
use xtask_runtime::runtime::Runtime;
use xtask_runtime::runtime::bootstrap::{QNN_WHEEL, ensure_runtime_rehashed};

pub fn package(req: &PackageRequest<'_>) -> Result<Manifest> {
    let out = super::destination::check_out(req.root, &req.out)?;
    let _build = super::destination::no_running_build(req.root, req.model_name())?;
    let parent = out.parent().context("--out has no parent")?;
    let _lock = lock_destination(parent)?;
    let versions = checked_runtime_versions(req)?;
    // Release-grade: every input and artifact is re-hashed, nothing is taken on (size, mtime).
    let mut memo = HashMemo::full();
    let checked = check_components(req, &versions, &mut memo)?;
    checked.refuse_broken(req)?;
    checked.refuse_stale(req)?;
    let reports = CardReports::find(req, &checked.context_built)?;
    reports.refuse_unmeasured(req)?;
    reports.refuse_chain_unmeasured(req)?;
    let mut info = bundle_info(req, checked.stale, checked.components);
    info.htp_unmeasured = reports.htp_unmeasured.clone();
    info.chain_unmeasured = reports.chain_unmeasured.clone();
    let generated = generated_files(&info, &reports)?;
    let (staging, _partial) = xtask_base::ui::interrupt::Partial::staging(parent, ".bundle-")?;
    let manifest = assemble(staging.path(), &checked.files, &generated, info, &mut memo)?;
    if let Some(key) = &req.sign_key {
        super::signature::sign(staging.path(), &out, &manifest, key)?;
    }
    move_into_place(staging, &out)?;
    Ok(manifest)
}

/// One package at a time per destination folder; staging folders of killed runs go first.
fn lock_destination(parent: &Path) -> Result<std::fs::File> {
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    let lock = xtask_base::atomic::lock_file(&parent.join(".bundle.lock"), "package")?;
    for left in xtask_base::atomic::remove_leftovers(parent, ".bundle-")? {
        xtask_base::errln!("removed {left}, left behind by an interrupted package");
    }
    Ok(lock)
}

/// The versions of the runtime here (freshness is judged against them), refused when they are
/// not the recipe's QAIRT.
fn checked_runtime_versions(req: &PackageRequest<'_>) -> Result<Versions> {
    let rt = Runtime::load(ensure_runtime_rehashed(req.root)?)?;
    let versions = runtime_versions(&rt)?;
    xtask_recipe::recipe::target::check_qairt(req.model, Some(&versions.qnn))?;
    Ok(versions)
}

/// What the freshness check found over the selected components, and the bundle's view of
/// every component it lets through.
#[derive(Default)]
struct Checked {
    /// Stale components, and why each is.
    stale: Vec<String>,
    stale_why: Vec<String>,
    /// Artifacts that are not what their build recorded (refused whatever the freshness).
    broken: Vec<String>,
    /// When each packaged context binary was built: older measurements are about others.
    context_built: ContextBuilt,
    components: Vec<BundleComponent>,
    files: Placement,
}

/// Re-hashes every input and binary (minutes at the real size, 27 GB), listing every stale
/// and broken component before anything is refused.
fn check_components(
    req: &PackageRequest<'_>,
    versions: &Versions,
    memo: &mut HashMemo,
) -> Result<Checked> {
    let mut checked = Checked::default();
    let checking =
        xtask_base::ui::progress::Task::new("package: checking freshness", req.comps.len());
    for comp in req.comps {
        checking.working_on(comp.name());
        check_component(req, comp, versions, memo, &mut checked)?;
        checking.step_done(comp.name(), true);
    }
    Ok(checked)
}

fn check_component(
    req: &PackageRequest<'_>,
    comp: &Component,
    versions: &Versions,
    memo: &mut HashMemo,
    checked: &mut Checked,
) -> Result<()> {
    let (root, soc) = (req.root, &req.soc);
    let art = xtask_ctx_build::plan::artifacts(req.model_name(), comp.name(), soc);
    let built = xtask_ctx_build::fresh::as_built(
        versions.clone(),
        &ComponentRecord::load(&root.join(&art.record)),
    );
    let plan = plan_component(root, req.model, comp, soc, &built, memo)?;
    let dirty = dirty_steps(&plan);
    if !dirty.is_empty() {
        checked.stale.push(comp.name().to_string());
        checked
            .stale_why
            .push(format!("`{}` is stale: {}", comp.name(), dirty.join(", ")));
    }
    let record = ComponentRecord::load(&root.join(&plan.artifacts.record));
    // Stale may be allowed; broken may not: the binary must be the one its build recorded
    // and its wrapper must point at it.
    let art = &plan.artifacts;
    checked
        .broken
        .extend(broken_artifacts(root, comp, &record, soc, art, memo));
    let built = record
        .steps
        .get(&format!("context@soc{}", soc.id))
        .map_or(0, |r| r.finished_unix);
    checked.context_built.insert(comp.name().to_string(), built);
    if !checked.stale.is_empty() && !req.allow_stale {
        return Ok(()); // every stale component is listed before refusing
    }
    let component = bundle_component(root, req.model, comp, &record, soc, art, memo)?;
    checked.components.push(component);
    checked
        .files
        .extend(component_files(root, req.model, comp, art)?);
    Ok(())
}

/// Each dirty step of the plan with why it is dirty.
fn dirty_steps(plan: &ComponentPlan) -> Vec<String> {
    plan.steps
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
        .collect()
}

impl Checked {
    /// A missing file is rebuilt by a plain build; a present file that is not what its build
    /// recorded needs --force to be replaced.
    fn refuse_broken(&self, req: &PackageRequest<'_>) -> Result<()> {
        if self.broken.is_empty() {
            return Ok(());
        }
        let force = match self.broken.iter().all(|b| b.ends_with(" is missing")) {
            true => "",
            false => " --force",
        };
        let mut names: Vec<&str> = self
            .broken
            .iter()
            .filter_map(|b| b.split(": ").next())
            .collect();
        names.dedup();
        bail!(
            "refusing to package broken artifacts (--allow-stale does not cover these):\n  {}\nrebuild with `cargo xtask build-ctx --soc {} --model {} --only {}{force}`",
            self.broken.join("\n  "),
            req.soc.id,
            req.model_name(),
            names.join(",")
        );
    }

    fn refuse_stale(&self, req: &PackageRequest<'_>) -> Result<()> {
        if self.stale.is_empty() || req.allow_stale {
            return Ok(());
        }
        bail!(
            "{} of {} component(s) are stale:\n  {}\nrun `cargo xtask build-ctx --soc {} --model {} --only {}` (or pass --allow-stale)",
            self.stale.len(),
            req.comps.len(),
            self.stale_why.join("\n  "),
            req.soc.id,
            req.model_name(),
            self.stale.join(",")
        );
    }
}

/// `bundle.json`: the target and provenance of this package, every build fact from the
/// components' records.
fn bundle_info(
    req: &PackageRequest<'_>,
    stale: Vec<String>,
    components: Vec<BundleComponent>,
) -> BundleInfo {
    let (model, soc) = (req.model, &req.soc);
    BundleInfo {
        schema_version: BundleInfo::SCHEMA,
        model: req.model_name().to_string(),
        description: model.file.model.description.clone(),
        soc_id: soc.id,
        soc_chips: soc.chips.iter().map(|s| s.to_string()).collect(),
        htp_arch: soc.htp_arch,
        // What the runtime that compiled the binaries reported, never the recipe's qairt.
        built_by: BuiltBy::of_components(&components),
        toolchain: bundle_toolchain(&components),
        commit: git_commit(req.root),
        allow_stale: req.allow_stale,
        stale,
        unverified_inputs: super::provenance::note(req.root, req.model_name()),
        htp_unmeasured: Vec::new(),
        chain_unmeasured: None,
        components,
        files: Vec::new(),
    }
}

/// The files `package` writes itself besides `bundle.json` (which `assemble` writes last, to
/// bind every other file): the reports the card uses and the card.
fn generated_files(info: &BundleInfo, reports: &CardReports) -> Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    if let Some(h) = &reports.htp {
        out.push((
            format!("reports/parity-{}.json", BackendKind::Htp),
            xtask_base::record::to_json(h)?,
        ));
    }
    if let Some((b, r)) = &reports.run {
        out.push((
            format!("reports/run-{b}.json"),
            xtask_base::record::to_json(r)?,
        ));
    }
    let card = render(
        info,
        reports.htp.as_ref().map(htp_figures).as_ref(),
        reports
            .run
            .as_ref()
            .map(|(_, r)| latency_figures(r))
            .as_ref(),
    );
    out.push(("README.md".into(), card.into_bytes()));
    Ok(out)
}

/// Renames the assembled staging folder to `out` (an empty `out` is replaced).
fn move_into_place(staging: tempfile::TempDir, out: &Path) -> Result<()> {
    if out.exists() {
        std::fs::remove_dir(out).with_context(|| format!("cannot replace {}", out.display()))?;
    }
    std::fs::rename(staging.keep(), out)
        .with_context(|| format!("cannot move the bundle to {}", out.display()))
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
    xtask_base::proc::Proc::new("git")
        .args(["rev-parse", "HEAD"])
        .dir(root)
        .timeout(std::time::Duration::from_secs(30))
        .run()
        .map(|done| done.output.trim().to_string())
        .unwrap_or_else(|_| "unknown (not a git checkout)".into())
}
