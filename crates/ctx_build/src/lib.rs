//! Building a component's artifacts: the plan (pure), fingerprints, the steps and their execution,
//! the content-addressed step cache, the toolchains (embedded or SDK) and the build records that
//! every later command asks whether an artifact is fresh. It must not depend on the chain,
//! diagnostics or bundles.
//!
//! Building a component's artifacts: plan (pure), fingerprints, the steps, their execution,
//! and the freshness checks that parity, package and verify share. `build` is what
//! `cargo xtask build-ctx` runs: plan every component, then print the plan (dry run), judge it
//! (`--require-fresh`) or execute its dirty steps.

pub mod artifacts;
pub mod change;
pub mod compile_watch;
pub mod component_run;
pub mod detail;
pub mod earlier;
pub mod env;
pub mod execute;
pub mod facts;
pub mod fingerprint;
pub mod fresh;
pub mod input_checks;
pub mod plan;
pub mod print;
pub mod report;
pub mod report_files;
pub mod report_html;
pub mod report_md;
pub mod rerun;
pub mod resources;
pub mod rss;
pub mod schedule;
pub mod step_cache;
pub mod step_checks;
pub mod step_quantize;
pub mod step_run;
pub mod steps;
pub mod toolchain;

use std::path::Path;
use std::sync::Mutex;

use anyhow::{Result, bail};

use crate::step_cache::StepCache;
use crate::toolchain::Toolchain;
use crate::toolchain::embedded::Embedded;
use crate::toolchain::sdk::Sdk;
use plan::{ComponentPlan, Versions, plan_component};
use xtask_base::hashing::HashMemo;
use xtask_base::soc::Soc;
use xtask_base::vocab::{Outcome, ToolchainKind};
use xtask_recipe::recipe::{Component, Model};
use xtask_runtime::runtime::Runtime;
use xtask_runtime::runtime::bootstrap::ensure_runtime;

/// What to build and how (the flags of `build-ctx`).
pub struct BuildRequest<'a> {
    pub model: &'a Model,
    pub soc: Soc,
    pub comps: Vec<&'a Component>,
    pub jobs: usize,
    /// `--max-memory` in MB; None: `MemAvailable` when the build starts.
    pub max_memory_mb: Option<f64>,
    pub force: bool,
    pub dry_run: bool,
    /// With `dry_run`: print the plan as JSON instead of text.
    pub json: bool,
    pub require_fresh: bool,
    pub toolchain: ToolchainKind,
    pub allow_sdk_version: bool,
    pub verbose: bool,
    /// `--cache DIR` / `XTASK_CACHE_DIR`: restore steps from it, store them in it.
    pub cache: Option<StepCache>,
    /// `--cache-max-size` / `XTASK_CACHE_MAX_SIZE`: the cache's cap, applied after the build.
    pub cache_max_bytes: u64,
    /// `--print-keys`: print each selected step's key (one per line) and run nothing.
    pub print_keys: bool,
}

impl BuildRequest<'_> {
    /// Refuses what no build can do, before anything is looked at on disk.
    pub fn validate(&self) -> Result<()> {
        if self.jobs == 0 {
            bail!("--jobs must be at least 1");
        }
        if self.toolchain == ToolchainKind::Sdk {
            // Refused before anything runs: what the SDK's quantizer cannot express.
            let refused: Vec<String> = self
                .comps
                .iter()
                .filter_map(|c| crate::toolchain::sdk::quantizer::cannot_express(c))
                .collect();
            if !refused.is_empty() {
                bail!("--toolchain sdk cannot build {}", refused.join("; "));
            }
        }
        execute::refuse_weight_sharing_groups(&self.comps)
    }
}

/// Plans the request, then prints it (dry run), judges it (`--require-fresh`) or executes it.
pub fn build(root: &Path, req: &BuildRequest<'_>) -> Result<Outcome> {
    build_with(root, req, None)
}

/// `build` in a process that already holds the runtime (ORT allows one environment per
/// process): the precision search builds its configurations beside its chain runs.
pub fn build_with(root: &Path, req: &BuildRequest<'_>, rt: Option<&Runtime>) -> Result<Outcome> {
    req.validate()?;
    // What the quantize step would refuse, refused before any plan (the dry run's too).
    input_checks::refuse_unbuildable(root, &req.comps)?;
    let memo_path = xtask_base::hashing::HashMemo::path_in(root);
    // --require-fresh is a release-grade check: every file is re-hashed in full (an artifact
    // edited in place with its size and mtime restored fools the memo's shortcut).
    let mut memo = if req.require_fresh {
        HashMemo::full()
    } else {
        HashMemo::load(&memo_path)
    };
    let outcome = if req.dry_run || req.require_fresh || req.print_keys {
        show_plan(root, req, &mut memo)?
    } else {
        return execute_build(root, req, memo, &memo_path, rt);
    };
    memo.save(&memo_path)?;
    Ok(outcome)
}

/// A build that runs nothing: the plan printed (text, JSON or keys), or judged fresh.
fn show_plan(root: &Path, req: &BuildRequest<'_>, memo: &mut HashMemo) -> Result<Outcome> {
    // The keys printed for CI must be those the build computes: the real runtime's versions.
    let rt = if req.require_fresh || req.print_keys {
        Some(Runtime::load(ensure_runtime(root)?)?)
    } else {
        None
    };
    let mut versions = match &rt {
        Some(rt) => fresh::runtime_versions(rt)?,
        None => versions_for_dry_run(root),
    };
    let toolchain = planning_toolchain(req);
    versions.toolchain = toolchain.used();
    let mut plans = plan_all(root, req, &versions, memo)?;
    if req.dry_run && req.cache.is_none() {
        rerun::as_the_build_runs(&mut plans, req.force);
    }
    if req.print_keys {
        print::print_keys(&plans)?;
    } else if req.json {
        let doc = print::plan_json(req.model, &req.soc, &versions, toolchain.label(), &plans);
        xtask_base::outln!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print::print_plan(req.model, &plans, &versions, &req.soc, req.verbose);
        print::print_commands(&toolchain.describe(), req.model, &plans);
    }
    let dirty = plans
        .iter()
        .flat_map(|p| &p.steps)
        .filter(|s| !s.is_fresh())
        .count();
    if req.require_fresh && dirty > 0 {
        xtask_base::outln!("--require-fresh: {dirty} step(s) are not fresh");
        return Ok(Outcome::GateFailed);
    }
    Ok(Outcome::Success)
}

/// The build itself, as named steps: lock the model's folder, load the runtime and the
/// toolchain, plan, check memory and disk, execute the dirty steps, write the report.
fn execute_build(
    root: &Path,
    req: &BuildRequest<'_>,
    memo: HashMemo,
    memo_path: &Path,
    rt: Option<&Runtime>,
) -> Result<Outcome> {
    let name = &req.model.file.model.name;
    let ctx_dir = xtask_base::project::ctx_dir(root, name);
    let _lock = execute::lock_build_dir(&ctx_dir)?;
    xtask_base::ui::interrupt::keeps(
        "every step that finished (recorded: it stays fresh); the running steps start again next time",
    );
    execute::remove_stale_staging(&ctx_dir)?;
    let loaded;
    let rt = match rt {
        Some(rt) => rt,
        None => {
            loaded = Runtime::load(ensure_runtime(root)?)?;
            &loaded
        }
    };
    let mut versions = fresh::runtime_versions(rt)?;
    let sdk;
    let toolchain: &dyn Toolchain = match req.toolchain {
        ToolchainKind::Embedded => {
            xtask_recipe::recipe::target::check_qairt(req.model, Some(&versions.qnn))?;
            &Embedded
        }
        ToolchainKind::Sdk => {
            sdk = Sdk::detect()?;
            sdk.check_version(&req.model.file.target.qairt, req.allow_sdk_version)?;
            &sdk
        }
    };
    versions.toolchain = toolchain.used();
    let mut memo = memo;
    let plans = plan_all(root, req, &versions, &mut memo)?;
    let limit_mb = memory_limit_mb(req.max_memory_mb)?;
    check_resources(root, req, &plans, &ctx_dir, limit_mb)?;
    let memo = Mutex::new(memo);
    let progress = xtask_base::ui::progress::build::Progress::new();
    let budget = schedule::MemoryBudget::new(limit_mb);
    let env = execute::BuildEnv {
        root,
        model: req.model,
        soc: req.soc,
        toolchain,
        rt,
        memo: &memo,
        progress: &progress,
        budget: &budget,
        versions: &versions,
        cache: req.cache.as_ref(),
        force: req.force,
    };
    let results =
        execute::execute_plans(&env, &req.comps, &plans, req.force, req.jobs, req.verbose);
    progress.clear();
    memo.into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .save(memo_path)?;
    let report = write_report(root, req, rt, &versions, results)?;
    if let Some(cache) = &req.cache {
        cap_cache(cache, req.cache_max_bytes);
    }
    Ok(if report.pass {
        Outcome::Success
    } else {
        Outcome::GateFailed
    })
}

/// Keeps the cache under its cap after a build (least recently used entries first); a failure
/// is a warning, the build's result stands.
fn cap_cache(cache: &StepCache, max_bytes: u64) {
    use crate::step_cache::gc::human_bytes;
    match cache.gc(max_bytes) {
        Ok((0, _, _)) => {}
        Ok((removed, freed, kept)) => xtask_base::errln!(
            "build cache: {removed} least recently used entr{} removed ({}) to stay under {} \
             ({} kept)",
            if removed == 1 { "y" } else { "ies" },
            human_bytes(freed),
            human_bytes(max_bytes),
            human_bytes(kept)
        ),
        Err(e) => xtask_base::ui::warnings::warn(format!(
            "the build cache {} was not trimmed to its size cap: {e:#}",
            cache.dir().display()
        )),
    }
}

/// Memory and disk for the dirty steps, checked before any of them starts.
fn check_resources(
    root: &Path,
    req: &BuildRequest<'_>,
    plans: &[ComponentPlan],
    ctx_dir: &Path,
    limit_mb: f64,
) -> Result<()> {
    let mut disks = vec![(ctx_dir.to_path_buf(), xtask_base::disk::free_bytes(ctx_dir))];
    if let Some(cache) = &req.cache {
        disks.push((
            cache.dir().to_path_buf(),
            xtask_base::disk::free_bytes(cache.dir()),
        ));
    }
    let disks: Vec<_> = disks.iter().map(|(d, f)| (d.as_path(), *f)).collect();
    resources::check(
        &resources::needs(root, plans, req.force),
        limit_mb,
        if req.max_memory_mb.is_some() {
            "--max-memory"
        } else {
            "MemAvailable"
        },
        &disks,
    )
}

/// The build report of this run (with the components it left alone), written and summarised.
fn write_report(
    root: &Path,
    req: &BuildRequest<'_>,
    rt: &Runtime,
    versions: &Versions,
    results: Vec<report::ComponentBuild>,
) -> Result<report::BuildReport> {
    let name = &req.model.file.model.name;
    let cache = req.cache.as_ref().map(|c| c.dir().display().to_string());
    let mut report = report::BuildReport::new(name, &req.soc, rt, versions, cache, results)
        .with_earlier(
            earlier::earlier_builds(root, req.model, &req.comps, &req.soc),
            req.model,
        );
    report.unverified_inputs = xtask_runtime::report::provenance::note(root, name);
    report.versions = report.versions.with_provenance(root, name);
    let dir = xtask_base::project::reports_dir(root, name);
    report_files::write_build_report(&dir, &report)?;
    report.print_summary(&xtask_base::project::rel(root, &dir));
    Ok(report)
}

/// The memory budget: `--max-memory`, else what the kernel says is available now.
fn memory_limit_mb(asked: Option<f64>) -> Result<f64> {
    match asked.or_else(schedule::available_mb) {
        Some(mb) => Ok(mb),
        None => bail!(
            "cannot read MemAvailable from /proc/meminfo to size the memory budget: give --max-memory"
        ),
    }
}

/// The toolchain a plan that runs nothing describes: the installed SDK, else one at the
/// `$QAIRT_SDK_ROOT` placeholder of the recipe's version; or the embedded runtime, unloaded.
fn planning_toolchain(req: &BuildRequest<'_>) -> Box<dyn Toolchain> {
    match req.toolchain {
        ToolchainKind::Embedded => Box::new(Embedded),
        ToolchainKind::Sdk => Box::new(
            Sdk::detect().unwrap_or_else(|_| Sdk::placeholder(&req.model.file.target.qairt)),
        ),
    }
}

fn plan_all(
    root: &Path,
    req: &BuildRequest<'_>,
    versions: &Versions,
    memo: &mut HashMemo,
) -> Result<Vec<ComponentPlan>> {
    req.comps
        .iter()
        .map(|c| plan_component(root, req.model, c, &req.soc, versions, memo))
        .collect()
}

/// A dry run never downloads: it uses the runtime if it is already here, else the pins, marked
/// so that a recorded version of the same release is not told as a change.
fn versions_for_dry_run(root: &Path) -> Versions {
    let here = xtask_runtime::runtime::bootstrap::runtime_if_present(root);
    if let Some(v) = here
        .and_then(|libs| Runtime::load(libs).ok())
        .and_then(|rt| fresh::runtime_versions(&rt).ok())
    {
        return v;
    }
    Versions {
        onnxruntime: format!(
            "{}{}",
            xtask_base::vocab::PINNED_ORT_VERSION,
            fingerprint::NOT_FETCHED_MARK
        ),
        qnn: format!(
            "{}{}",
            xtask_base::vocab::PINNED_QNN_VERSION,
            fingerprint::NOT_FETCHED_MARK
        ),
        toolchain: facts::ToolchainUsed::embedded(),
        xtask: xtask_base::identity::xtask_id().into(),
        libraries: fingerprint::LIBRARIES_NOT_FETCHED.into(),
    }
}
