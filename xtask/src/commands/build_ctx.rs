//! `cargo xtask build-ctx --soc 77`: per component, ONNX → DLC (QNN IR backend), QNN
//! CPU-backend parity gated on cosine, then the HTP context binary and its EPContext wrapper.
//! Plan first (fingerprints, freshness), then execute only the dirty steps.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::{Ctx, Outcome, ToolchainArg, select_components};
use crate::build::report::{
    BuildReport, ComponentBuild, OutputFile, StepOutcome, write_build_report,
};
use crate::build::fingerprint::{ComponentRecord, Freshness, StepRecord};
use crate::parity::component::{load_golden, run_component};
use crate::build::fresh::runtime_versions;
use crate::hashing::{HashMemo, sha256_file};
use crate::build::plan::{ComponentPlan, PlannedStep, StepKind, Versions, plan_component};
use crate::build::progress::Progress;
use crate::recipe::{Component, Model, load_model};
use crate::runtime::bootstrap::ensure_runtime;
use crate::runtime::{Backend, HtpTarget, Runtime};
use crate::target::soc::Soc;
use crate::toolchain::sdk::Sdk;

#[derive(clap::Args)]
pub struct BuildCtx {
    /// Target SoC: an id (77) or a chip name (QCS9075); default: the model's target.
    #[arg(long)]
    soc: Option<String>,
    #[arg(long, default_value = "tiny")]
    model: String,
    /// Only these components (comma-separated).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Components built at once.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Run every step even when fresh.
    #[arg(long)]
    force: bool,
    /// Print the plan (steps, inputs, outputs, fresh or why dirty) and run nothing.
    #[arg(long)]
    dry_run: bool,
    /// Which tools run the steps: the embedded QNN 2.47 runtime, or the QAIRT SDK's tools.
    #[arg(long, value_enum, default_value = "embedded")]
    toolchain: ToolchainArg,
    /// Use an installed QAIRT SDK whose version differs from the recipe's `qairt`.
    #[arg(long)]
    allow_sdk_version: bool,
    /// Run nothing; exit 1 unless every step is fresh (CI: gathered artifacts must be accepted).
    #[arg(long, conflicts_with = "force")]
    require_fresh: bool,
}

/// What every worker shares while executing a plan.
struct BuildEnv<'a> {
    root: &'a Path,
    model: &'a Model,
    rt: &'a Runtime,
    soc: Soc,
    memo: &'a Mutex<HashMemo>,
    progress: &'a Progress,
    /// Set when the QAIRT SDK's tools run the steps.
    sdk: Option<&'a Sdk>,
}

impl BuildCtx {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let model = load_model(&ctx.root, &self.model)?;
        let soc = super::target_soc(&model, self.soc.as_deref())?;
        let comps = select_components(&model, &self.only)?;
        if self.jobs == 0 {
            bail!("--jobs must be at least 1");
        }
        refuse_weight_sharing_groups(&comps)?;
        let memo_path = ctx.root.join("target/xtask-hash-memo.json");
        let mut memo = HashMemo::load(&memo_path);
        if self.dry_run || self.require_fresh {
            let mut versions = if self.require_fresh {
                runtime_versions(&Runtime::load(ensure_runtime(&ctx.root)?)?)?
            } else {
                versions_for_dry_run(ctx)
            };
            let sdk = self.sdk_for_plan(&model)?;
            if let Some(sdk) = &sdk {
                versions.toolchain = format!("qairt-sdk {}", sdk.version);
            }
            let plans = plan_all(ctx, &model, &comps, &soc, &versions, &mut memo)?;
            print_plan(&model, &plans, &versions, &soc, ctx.verbose);
            if let Some(sdk) = &sdk {
                print_sdk_commands(sdk, &model, &comps, &plans, &soc);
            }
            memo.save(&memo_path)?;
            let dirty = plans
                .iter()
                .flat_map(|p| &p.steps)
                .filter(|s| !s.is_fresh())
                .count();
            if self.require_fresh && dirty > 0 {
                crate::outln!("--require-fresh: {dirty} step(s) are not fresh");
                return Ok(Outcome::GateFailed);
            }
            return Ok(Outcome::Success);
        }
        super::require_files(ctx, &model, &comps)?;
        let ctx_dir = crate::project::ctx_dir(&ctx.root, &self.model);
        let _lock = lock_build_dir(&ctx_dir)?;
        remove_stale_staging(&ctx_dir)?;
        let rt = Runtime::load(ensure_runtime(&ctx.root)?)?;
        let mut versions = runtime_versions(&rt)?;
        let sdk = match self.toolchain {
            ToolchainArg::Embedded => None,
            ToolchainArg::Sdk => {
                let sdk = Sdk::detect()?;
                sdk.check_version(&model.file.target.qairt, self.allow_sdk_version)?;
                versions.toolchain = format!("qairt-sdk {}", sdk.version);
                Some(sdk)
            }
        };
        let plans = plan_all(ctx, &model, &comps, &soc, &versions, &mut memo)?;
        let memo = Mutex::new(memo);
        let progress = Progress::new();
        let env = BuildEnv {
            root: &ctx.root,
            model: &model,
            rt: &rt,
            soc,
            memo: &memo,
            progress: &progress,
            sdk: sdk.as_ref(),
        };
        let results = execute_plans(&env, &comps, &plans, self.force, self.jobs, ctx.verbose);
        progress.clear();
        memo.into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .save(&memo_path)?;
        let report = BuildReport::new(&self.model, &soc, &rt, &versions, results);
        let dir = crate::project::reports_dir(&ctx.root, &self.model);
        write_build_report(&dir, &report)?;
        report.print_summary(&crate::project::rel(&ctx.root, &dir));
        Ok(if report.pass {
            Outcome::Success
        } else {
            Outcome::GateFailed
        })
    }
}

impl BuildCtx {
    /// The SDK a dry run describes: the installed one, else a placeholder root.
    fn sdk_for_plan(&self, model: &Model) -> Result<Option<Sdk>> {
        if self.toolchain == ToolchainArg::Embedded {
            return Ok(None);
        }
        Ok(Some(Sdk::detect().unwrap_or_else(|_| Sdk {
            root: "$QAIRT_SDK_ROOT".into(),
            version: model.file.target.qairt.clone(),
        })))
    }
}

/// The exact commands and config files the SDK toolchain runs for each component.
fn print_sdk_commands(
    sdk: &Sdk,
    model: &Model,
    comps: &[&Component],
    plans: &[ComponentPlan],
    soc: &Soc,
) {
    crate::outln!(
        "QAIRT SDK {} at {}: commands (run from the project root; STAGING = ctx/{}/.staging-<id>)",
        sdk.version,
        sdk.root.display(),
        model.file.model.name
    );
    for (comp, plan) in comps.iter().zip(plans) {
        let staging = Path::new("STAGING");
        let dlc = &plan.artifacts.dlc;
        let bin_name = plan.artifacts.bin_name();
        let tool = |name: &str| {
            sdk.root
                .join("bin")
                .join(crate::toolchain::sdk::HOST)
                .join(name)
                .display()
                .to_string()
        };
        crate::outln!("{}", comp.name());
        let convert = crate::toolchain::sdk::converter_args(
            comp,
            &comp.file.component.onnx,
            &staging.join(format!("{}.dlc", comp.name())),
        );
        crate::outln!(
            "  convert:     {} {}",
            tool("qairt-converter"),
            convert.join(" ")
        );
        let run = crate::toolchain::sdk::net_run_args(
            sdk,
            "libQnnCpu.so",
            dlc,
            &staging.join("input_list.txt"),
            &staging.join("output"),
        );
        crate::outln!("  cpu parity:  {} {}", tool("qnn-net-run"), run.join(" "));
        let configs = crate::toolchain::sdk::steps::context_configs(sdk, comp, soc, staging);
        let generate = crate::toolchain::sdk::context_generator_args(
            sdk,
            dlc,
            bin_name.trim_end_matches(".bin"),
            staging,
            &configs[1].0,
        );
        crate::outln!(
            "  context:     {} {}",
            tool("qnn-context-binary-generator"),
            generate.join(" ")
        );
        crate::outln!(
            "               {} --context_binary STAGING/{bin_name} --json_file STAGING/{}.json",
            tool("qnn-context-binary-utility"),
            bin_name.trim_end_matches(".bin")
        );
        for (path, json) in &configs {
            crate::outln!("  {}: {}", path.display(), json);
        }
    }
}

fn plan_all(
    ctx: &Ctx,
    model: &Model,
    comps: &[&Component],
    soc: &Soc,
    versions: &Versions,
    memo: &mut HashMemo,
) -> Result<Vec<ComponentPlan>> {
    comps
        .iter()
        .map(|c| plan_component(&ctx.root, model, c, soc, versions, memo))
        .collect()
}

/// A dry run never downloads: it uses the runtime if it is already here, else the pins.
fn versions_for_dry_run(ctx: &Ctx) -> Versions {
    let here = crate::runtime::bootstrap::runtime_if_present(&ctx.root);
    if let Some(v) = here
        .and_then(|libs| Runtime::load(libs).ok())
        .and_then(|rt| runtime_versions(&rt).ok())
    {
        return v;
    }
    Versions {
        onnxruntime: format!(
            "{} (pinned; runtime not fetched yet)",
            crate::runtime::bootstrap::PINNED_ORT_VERSION
        ),
        qnn: format!(
            "{} (pinned; runtime not fetched yet)",
            crate::runtime::bootstrap::PINNED_QNN_VERSION
        ),
        toolchain: "embedded".into(),
    }
}

fn print_plan(
    model: &Model,
    plans: &[ComponentPlan],
    versions: &Versions,
    soc: &Soc,
    verbose: bool,
) {
    crate::outln!(
        "plan: soc {} ({}, v{}), onnxruntime {}, QNN {}",
        soc.id,
        soc.chips.join("/"),
        soc.htp_arch,
        versions.onnxruntime,
        versions.qnn
    );
    let mut all_missing = Vec::new();
    for plan in plans {
        crate::outln!("{}", plan.component);
        for step in &plan.steps {
            let state = match &step.freshness {
                Freshness::Fresh => "fresh".to_string(),
                Freshness::Dirty(reasons) => format!("dirty: {}", reasons.join("; ")),
            };
            crate::outln!("  {:<15} {state}", step.kind.label());
            crate::outln!("      inputs:  {}", step.inputs.join(", "));
            if !step.outputs.is_empty() {
                crate::outln!("      outputs: {}", step.outputs.join(", "));
            }
            if verbose && let Some(key) = &step.key {
                crate::outln!("      key:     {}", key.key);
            }
        }
        for m in &plan.missing {
            crate::outln!("  MISSING {m}");
            all_missing.push(m.clone());
        }
    }
    if all_missing.is_empty() {
        crate::outln!("dry run: nothing was run");
    } else {
        crate::outln!(
            "dry run: nothing was run; {} input file(s) are missing (listed above)",
            all_missing.len()
        );
        let hint = model
            .file
            .model
            .obtain
            .as_deref()
            .unwrap_or("see the model's recipes");
        crate::outln!("how to obtain them: {hint}");
    }
}

/// Weight-sharing groups (several graphs in one context) are not built: the QNN 2.47 plugin
/// generates such a context (`ep.share_ep_contexts`), but the x86_64 HTP emulator refuses to
/// load it (`QNN_COMMON_ERROR_NOT_SUPPORTED`), so its HTP parity could never be proven here.
/// A recipe asking for one gets this explanation instead of a silently unshared build.
fn refuse_weight_sharing_groups(comps: &[&Component]) -> Result<()> {
    let grouped: Vec<String> = comps
        .iter()
        .filter_map(|c| {
            c.file
                .context
                .weight_sharing_group
                .as_ref()
                .map(|g| format!("{} (group `{g}`, {})", c.name(), c.recipe_path.display()))
        })
        .collect();
    if grouped.is_empty() {
        return Ok(());
    }
    bail!(
        "weight-sharing groups are not supported by the embedded toolchain: {}\n\
         QNN 2.47 through onnxruntime-qnn 2.3.0 writes a shared multi-graph context \
         (ep.share_ep_contexts=1), but its emulated HTP refuses to load it (\"Failed to create \
         context from binary ... QNN_COMMON_ERROR_NOT_SUPPORTED\"), with or without \
         ep.share_ep_contexts / enable_htp_weight_sharing, so its parity cannot be checked. \
         Remove `weight_sharing_group` to build one context per component.",
        grouped.join(", ")
    )
}

/// Staging folders left by an interrupted build (the lock is held, so none is in use).
fn remove_stale_staging(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir)?.flatten() {
        if entry.file_name().to_string_lossy().starts_with(".staging-") {
            std::fs::remove_dir_all(entry.path())
                .with_context(|| format!("cannot remove {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// Takes the tree's build lock; a second build waits, saying why.
fn lock_build_dir(dir: &Path) -> Result<std::fs::File> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(".build.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => {
            eprintln!(
                "another build-ctx holds {}; waiting for it to finish ...",
                path.display()
            );
            file.lock()
                .with_context(|| format!("cannot lock {}", path.display()))?;
            Ok(file)
        }
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("cannot lock {}", path.display()))
        }
    }
}

/// Runs the plans on `jobs` workers; each component's steps run in order, failures stop only
/// that component.
fn execute_plans(
    env: &BuildEnv<'_>,
    comps: &[&Component],
    plans: &[ComponentPlan],
    force: bool,
    jobs: usize,
    verbose: bool,
) -> Vec<ComponentBuild> {
    let queue = Mutex::new((0..plans.len()).collect::<VecDeque<_>>());
    let results = Mutex::new(BTreeMap::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(plans.len()).max(1) {
            scope.spawn(|| {
                while let Some(i) = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front() {
                    let built = build_component(env, comps[i], &plans[i], force, verbose);
                    results
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(i, built);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_values()
        .collect()
}

fn build_component(
    env: &BuildEnv<'_>,
    comp: &Component,
    plan: &ComponentPlan,
    force: bool,
    verbose: bool,
) -> ComponentBuild {
    let record_path = env.root.join(&plan.artifacts.record);
    let mut record = ComponentRecord::load(&record_path);
    let bar = env.progress.component(&plan.component);
    let mut steps = Vec::new();
    let mut failed: Option<String> = None;
    let mut upstream_ran = false;
    for step in &plan.steps {
        if let Some(why) = &failed {
            steps.push(StepOutcome::skipped(step, format!("not run: {why}")));
            continue;
        }
        if step.is_fresh() && !force && !upstream_ran {
            let rec = record.steps.get(&step.record_name);
            steps.push(StepOutcome::fresh(step, rec, env.root));
            env.progress
                .step_line(&bar, &plan.component, step.kind.label(), "fresh", None);
            continue;
        }
        let mut reasons = match &step.freshness {
            Freshness::Dirty(r) => r.clone(),
            Freshness::Fresh if upstream_ran => {
                vec!["an earlier step of this component re-ran".into()]
            }
            Freshness::Fresh => vec!["--force".into()],
        };
        if upstream_ran && step.is_fresh() && !force {
            reasons = vec!["an earlier step of this component re-ran".into()];
        }
        if verbose {
            env.progress.note(
                &bar,
                &format!(
                    "{}: {} is dirty: {}",
                    plan.component,
                    step.kind.label(),
                    reasons.join("; ")
                ),
            );
        }
        env.progress
            .step_started(&bar, &plan.component, step.kind.label());
        let started = Instant::now();
        let outcome = run_step(env, comp, plan, step, &mut record, &record_path);
        let seconds = started.elapsed().as_secs_f64();
        match outcome {
            Ok(done) => {
                env.progress.step_line(
                    &bar,
                    &plan.component,
                    step.kind.label(),
                    "ran",
                    Some(seconds),
                );
                steps.push(StepOutcome::ran(
                    step,
                    reasons,
                    seconds,
                    done.outputs,
                    done.detail,
                ));
                upstream_ran = true;
            }
            Err(err) => {
                let msg = crate::project::scrub(env.root, &format!("{err:#}"));
                env.progress.step_line(
                    &bar,
                    &plan.component,
                    step.kind.label(),
                    "FAILED",
                    Some(seconds),
                );
                failed = Some(format!("{} failed", step.kind.label()));
                steps.push(StepOutcome::failed(step, reasons, seconds, msg));
            }
        }
    }
    env.progress.finish(&bar, &plan.component, failed.is_none());
    ComponentBuild {
        component: plan.component.clone(),
        pass: failed.is_none(),
        steps,
    }
}

struct StepDone {
    outputs: Vec<OutputFile>,
    detail: serde_json::Value,
}

/// Runs one step. Its old record entry is cleared first and the new one written last, after
/// every output was moved into place and (for parity) the gate passed.
fn run_step(
    env: &BuildEnv<'_>,
    comp: &Component,
    plan: &ComponentPlan,
    step: &PlannedStep,
    record: &mut ComponentRecord,
    record_path: &Path,
) -> Result<StepDone> {
    let key = step.key.clone().context("an input file is missing")?;
    if record.steps.remove(&step.record_name).is_some() {
        record.save(record_path)?;
    }
    let started = Instant::now();
    let done = match step.kind {
        StepKind::Convert => convert_step(env, comp, plan)?,
        StepKind::CpuParity => cpu_parity_step(env, comp, plan)?,
        StepKind::Context => context_step(env, comp, plan)?,
    };
    let outputs = done
        .outputs
        .iter()
        .map(|o| (o.path.clone(), o.sha256.clone()))
        .collect();
    record.steps.insert(
        step.record_name.clone(),
        StepRecord {
            key,
            outputs,
            finished_unix: crate::report::now_unix(),
            seconds: started.elapsed().as_secs_f64(),
            detail: done.detail.clone(),
        },
    );
    record.save(record_path)?;
    Ok(done)
}

fn staging_dir(env: &BuildEnv<'_>) -> Result<tempfile::TempDir> {
    let dir = crate::project::ctx_dir(env.root, &env.model.file.model.name);
    std::fs::create_dir_all(&dir)?;
    Ok(tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(&dir)?)
}

/// ONNX → DLC through the QNN IR backend; the DLC gets its stable name only once complete.
fn convert_step(env: &BuildEnv<'_>, comp: &Component, plan: &ComponentPlan) -> Result<StepDone> {
    let staging = staging_dir(env)?;
    if let Some(sdk) = env.sdk {
        let job = sdk_job(env, sdk, comp, staging.path());
        let dlc = crate::toolchain::sdk::steps::convert(&job)?;
        check_dlc(&dlc)?;
        let out = move_output(env, &dlc, &plan.artifacts.dlc)?;
        return Ok(StepDone {
            outputs: vec![out],
            detail: serde_json::json!({ "toolchain": format!("qairt-sdk {}", sdk.version) }),
        });
    }
    let onnx = env.root.join(&comp.file.component.onnx);
    let (dlc, placement) = env.rt.dump_dlc(&onnx, staging.path())?;
    check_dlc(&dlc)?;
    let out = move_output(env, &dlc, &plan.artifacts.dlc)?;
    Ok(StepDone {
        outputs: vec![out],
        detail: serde_json::json!({ "placement": placement, "dlc_from": dlc.file_name().map(|n| n.to_string_lossy().into_owned()) }),
    })
}

/// A QNN IR DLC is a zip holding at least the `model` member; anything else is not a DLC.
fn check_dlc(path: &Path) -> Result<()> {
    let file = std::fs::File::open(path)?;
    let zip = zip::ZipArchive::new(file)
        .with_context(|| format!("{} is not a DLC (not a zip archive)", path.display()))?;
    if !zip.file_names().any(|n| n == "model") {
        bail!("{} is not a QNN DLC: no `model` member", path.display());
    }
    Ok(())
}

/// The ONNX on the QNN CPU backend with the golden inputs, gated exactly like `parity`.
fn cpu_parity_step(env: &BuildEnv<'_>, comp: &Component, plan: &ComponentPlan) -> Result<StepDone> {
    let golden = load_golden(env.root, comp)?;
    let onnx = env.root.join(&comp.file.component.onnx);
    let result = match env.sdk {
        Some(sdk) => {
            let staging = staging_dir(env)?;
            let dlc = env.root.join(&plan.artifacts.dlc);
            let job = sdk_job(env, sdk, comp, staging.path());
            let actual = crate::toolchain::sdk::steps::cpu_run(&job, &dlc, &golden.inputs)?;
            let mut result =
                crate::parity::component::judge_outputs(env.model, comp, &golden, &actual, "cpu")?;
            result.session_model = crate::project::rel(env.root, &dlc);
            result
        }
        None => {
            let mut result = run_component(
                env.rt,
                env.model,
                comp,
                &golden,
                &onnx,
                &Backend::QnnCpu,
                true,
            )?;
            result.session_model = crate::project::rel(env.root, &onnx);
            result
        }
    };
    let figures: Vec<String> = result
        .outputs
        .iter()
        .map(|o| {
            format!(
                "{} cosine {}",
                o.name,
                crate::report::fmt_cosine(o.metrics.cosine)
            )
        })
        .collect();
    if !result.pass {
        let reasons: Vec<String> = result
            .outputs
            .iter()
            .filter(|o| !o.verdict.pass)
            .map(|o| {
                format!(
                    "{} {}: {}",
                    comp.name(),
                    o.name,
                    o.verdict.reasons.join("; ")
                )
            })
            .collect();
        bail!(
            "CPU-backend parity gate failed: {} (hint: `{}`)",
            reasons.join(" | "),
            super::bisect_hint(&env.model.file.model.name, comp, "cpu")
        );
    }
    Ok(StepDone {
        outputs: vec![],
        detail: serde_json::json!({ "summary": figures.join(", "), "result": result }),
    })
}

/// HTP context binary + EPContext wrapper, both checked before they replace anything.
fn context_step(env: &BuildEnv<'_>, comp: &Component, plan: &ComponentPlan) -> Result<StepDone> {
    require_fp16_safe_golden(env, comp)?;
    let staging = staging_dir(env)?;
    if let Some(sdk) = env.sdk {
        return sdk_context_step(env, sdk, comp, plan, staging.path());
    }
    let onnx = env.root.join(&comp.file.component.onnx);
    let stem = plan.artifacts.wrapper_stem();
    let staged_wrapper = staging.path().join(format!("{stem}.onnx"));
    let target = htp_target(&env.soc, comp);
    env.rt.compile_context(&onnx, &target, &staged_wrapper)?;
    let staged_bin = staging.path().join(format!("{stem}_qnn.bin"));
    let bin_name = plan.artifacts.bin_name();
    let info =
        crate::onnx::epcontext::check_and_retarget_wrapper(&staged_wrapper, &staged_bin, &bin_name)?;
    let bin = move_output(env, &staged_bin, &plan.artifacts.bin)?;
    let wrapper = move_output(env, &staged_wrapper, &plan.artifacts.wrapper)?;
    Ok(StepDone {
        outputs: vec![bin, wrapper],
        detail: serde_json::to_value(info)?,
    })
}

fn sdk_job<'a>(
    env: &'a BuildEnv<'_>,
    sdk: &'a Sdk,
    comp: &'a Component,
    staging: &'a Path,
) -> crate::toolchain::sdk::steps::Job<'a> {
    crate::toolchain::sdk::steps::Job {
        sdk,
        root: env.root,
        model: &env.model.file.model.name,
        comp,
        staging,
    }
}

/// The SDK's context binary and the wrapper made from `qnn-context-binary-utility`'s JSON.
fn sdk_context_step(
    env: &BuildEnv<'_>,
    sdk: &Sdk,
    comp: &Component,
    plan: &ComponentPlan,
    staging: &Path,
) -> Result<StepDone> {
    let bin_name = plan.artifacts.bin_name();
    let stem = plan.artifacts.wrapper_stem();
    let dlc = env.root.join(&plan.artifacts.dlc);
    let job = sdk_job(env, sdk, comp, staging);
    let made = crate::toolchain::sdk::steps::context(&job, &env.soc, &dlc, &stem, &bin_name)?;
    let summary = crate::onnx::proto::read_summary(&made.wrapper)?;
    if summary.nodes.len() != 1
        || summary.nodes[0].attr_str("ep_cache_context") != Some(bin_name.as_str())
    {
        bail!("the generated EPContext wrapper does not point at {bin_name}");
    }
    let bin = move_output(env, &made.bin, &plan.artifacts.bin)?;
    let wrapper = move_output(env, &made.wrapper, &plan.artifacts.wrapper)?;
    Ok(StepDone {
        outputs: vec![bin, wrapper],
        detail: serde_json::json!({ "graph_name": made.graph_name, "ep_sdk_version": made.build_id, "bin_file": bin_name, "toolchain": format!("qairt-sdk {}", sdk.version) }),
    })
}

/// Before the HTP (fp16) sees a component: no golden tensor beyond fp16's range unless it is a
/// mask the recipe marks for clamping.
fn require_fp16_safe_golden(env: &BuildEnv<'_>, comp: &Component) -> Result<()> {
    let golden = load_golden(env.root, comp)?;
    let offenders: Vec<String> = crate::fp16::scan_golden(comp, &golden.inputs, &golden.expected)
        .into_iter()
        .filter(|f| f.offender)
        .map(|f| {
            format!(
                "{} {} (max |x| {:.3e}, min {:.3e}): {}",
                f.kind, f.tensor, f.max_abs, f.min, f.status
            )
        })
        .collect();
    if !offenders.is_empty() {
        bail!(
            "fp16 hazard before the HTP: {} (see `cargo xtask lint-fp16 --model {}`)",
            offenders.join("; "),
            env.model.file.model.name
        );
    }
    Ok(())
}

pub fn htp_target(soc: &Soc, comp: &Component) -> HtpTarget {
    HtpTarget::from_recipe(soc, &comp.file.context)
}

/// Hashes a finished file, then renames it onto its stable name (same filesystem, one step).
fn move_output(env: &BuildEnv<'_>, from: &Path, to_rel: &Path) -> Result<OutputFile> {
    let sha256 = sha256_file(from)?;
    let bytes = std::fs::metadata(from)?.len();
    let to = env.root.join(to_rel);
    crate::atomic::move_into_place(from, &to)?;
    let _ = env.memo.lock().map(|mut m| m.sha256(&to));
    Ok(OutputFile {
        path: to_rel.display().to_string(),
        bytes,
        sha256,
    })
}
