//! Executing a plan: components on `--jobs` workers under the tree's build lock, each
//! component's steps in order, every step in a fresh staging folder whose outputs are hashed
//! and moved into place before its record entry is written (last).

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::ctx_build::fingerprint::{
    ComponentRecord, DirtyReason, DirtyReasons, Freshness, StepRecord,
};
use crate::ctx_build::plan::{ComponentPlan, PlannedStep, StepKind};
use crate::ctx_build::progress::Progress;
use crate::ctx_build::report::{ComponentBuild, OutputFile, StepOutcome};
use crate::ctx_build::schedule::{self, Granted, MemoryBudget};
use crate::ctx_build::steps::{self, StepRun};
use crate::hashing::{HashMemo, sha256_file};
use crate::htp_target::soc::Soc;
use crate::recipe::{Component, Model};
use crate::toolchain::{StepJob, Toolchain};

/// What every worker shares while executing a plan.
pub struct BuildEnv<'a> {
    pub root: &'a Path,
    pub model: &'a Model,
    pub soc: Soc,
    pub toolchain: &'a dyn Toolchain,
    /// The embedded runtime (loaded for every build: ORT checks rewritten graphs).
    pub rt: &'a crate::runtime::Runtime,
    pub memo: &'a Mutex<HashMemo>,
    pub progress: &'a Progress,
    /// `--max-memory`: no step starts beyond it (see `schedule`).
    pub budget: &'a MemoryBudget,
}

/// The rerun rule: why a step runs, or None when it is skipped as fresh. A dirty step runs;
/// `--force` runs everything; once a step of the component ran, every later step runs too.
pub fn run_reasons(freshness: &Freshness, force: bool, upstream_ran: bool) -> Option<DirtyReasons> {
    match freshness {
        Freshness::Dirty(reasons) => Some(reasons.clone()),
        Freshness::Fresh if upstream_ran => Some(vec![DirtyReason::EarlierStepRan].into()),
        Freshness::Fresh if force => Some(vec![DirtyReason::Forced].into()),
        Freshness::Fresh => None,
    }
}

/// Weight-sharing groups (several graphs in one context) are not built: the QNN 2.47 plugin
/// generates such a context (`ep.share_ep_contexts`), but the x86_64 HTP emulator refuses to
/// load it (`QNN_COMMON_ERROR_NOT_SUPPORTED`), so its HTP parity could never be proven here.
/// A recipe asking for one gets this explanation instead of a silently unshared build.
pub fn refuse_weight_sharing_groups(comps: &[&Component]) -> Result<()> {
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
pub fn remove_stale_staging(dir: &Path) -> Result<()> {
    for left in crate::atomic::remove_leftovers(dir, ".staging-")? {
        eprintln!("removed {left}, left behind by an interrupted build");
    }
    Ok(())
}

/// Takes the tree's build lock; a second build waits, saying why.
pub fn lock_build_dir(dir: &Path) -> Result<std::fs::File> {
    crate::atomic::lock_file(&dir.join(".build.lock"), "build-ctx")
}

/// Runs the plans on `jobs` workers, longest component first; each component's steps run in
/// order, failures stop only that component. Results come back in the plans' order.
pub fn execute_plans(
    env: &BuildEnv<'_>,
    comps: &[&Component],
    plans: &[ComponentPlan],
    force: bool,
    jobs: usize,
    verbose: bool,
) -> Vec<ComponentBuild> {
    let lengths: Vec<(Option<f64>, f64)> = plans
        .iter()
        .map(|p| {
            let record = ComponentRecord::load(&env.root.join(&p.artifacts.record));
            (
                schedule::last_seconds(&record, p),
                schedule::onnx_mb(env.root, p),
            )
        })
        .collect();
    let order = schedule::longest_first(&lengths);
    let queue = Mutex::new(order.into_iter().collect::<VecDeque<_>>());
    let results = Mutex::new(BTreeMap::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(plans.len()).max(1) {
            scope.spawn(|| {
                loop {
                    // Its own statement: in a `while let` scrutinee the guard would live
                    // through the body and serialise the workers (it did: `--jobs 2` ran
                    // one component at a time until the full-width bench showed it).
                    let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
                    let Some(i) = next else { break };
                    let onnx_mb = lengths[i].1;
                    let built = build_component(env, comps[i], &plans[i], onnx_mb, force, verbose);
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
    onnx_mb: f64,
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
        let label = step.kind.label();
        if let Some(why) = &failed {
            steps.push(StepOutcome::skipped(step, format!("not run: {why}")));
            continue;
        }
        let Some(reasons) = run_reasons(&step.freshness, force, upstream_ran) else {
            let rec = record.steps.get(&step.record_name);
            steps.push(StepOutcome::fresh(step, rec, env.root));
            env.progress
                .step_line(&bar, &plan.component, label, "fresh", None);
            continue;
        };
        if verbose {
            let note = format!(
                "{}: {label} is dirty: {}",
                plan.component,
                reasons.join("; ")
            );
            env.progress.note(&bar, &note);
        }
        let need = schedule::estimate(
            step.kind,
            onnx_mb,
            schedule::last_increase_mb(&record, &step.record_name),
        );
        let (_reserved, granted) = env.budget.reserve(need.mb, |in_use| {
            let note = format!(
                "{}: {label} waits for memory: needs ~{:.0} MB ({}), {in_use:.0} of {:.0} MB reserved by running steps",
                plan.component, need.mb, need.basis, env.budget.limit_mb
            );
            env.progress.note(&bar, &note);
        });
        if granted == Granted::Alone {
            let note = format!(
                "{}: {label} is estimated at ~{:.0} MB ({}), over the {:.0} MB memory budget: it runs with nothing beside it",
                plan.component, need.mb, need.basis, env.budget.limit_mb
            );
            env.progress.note(&bar, &note);
        }
        env.progress.step_started(&bar, &plan.component, label);
        let started = Instant::now();
        let started_unix_ms = crate::report::now_unix_ms();
        let outcome = run_step(env, comp, plan, step, &mut record, &record_path, &bar);
        let seconds = started.elapsed().as_secs_f64();
        match outcome {
            Ok((outputs, mut detail)) => {
                detail["memory_estimate_mb"] = serde_json::json!(need.mb);
                // When it ran, to see what overlapped with `--jobs` (and prove that it did).
                detail["started_unix_ms"] = serde_json::json!(started_unix_ms);
                detail["finished_unix_ms"] = serde_json::json!(crate::report::now_unix_ms());
                if let Granted::AfterWaiting(s) = granted {
                    detail["waited_for_memory_seconds"] = serde_json::json!(s);
                }
                env.progress
                    .step_line(&bar, &plan.component, label, "ran", Some(seconds));
                let texts = reasons.texts();
                steps.push(StepOutcome::ran(step, texts, seconds, outputs, detail));
                upstream_ran = true;
            }
            Err(err) => {
                let msg = crate::project::scrub(env.root, &format!("{err:#}"));
                env.progress
                    .step_line(&bar, &plan.component, label, "FAILED", Some(seconds));
                failed = Some(format!("{label} failed"));
                steps.push(StepOutcome::failed(step, reasons.texts(), seconds, msg));
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

/// Runs one step. Its old record entry is cleared first and the new one written last, after
/// every output was moved into place and (for parity) the gate passed.
fn run_step(
    env: &BuildEnv<'_>,
    comp: &Component,
    plan: &ComponentPlan,
    step: &PlannedStep,
    record: &mut ComponentRecord,
    record_path: &Path,
    bar: &crate::ctx_build::progress::Bar,
) -> Result<(Vec<OutputFile>, serde_json::Value)> {
    let key = step.key.clone().context("an input file is missing")?;
    if record.steps.remove(&step.record_name).is_some() {
        record.save(record_path)?;
    }
    let started = Instant::now();
    let staging = staging_dir(env)?;
    let job = StepJob {
        root: env.root,
        model: env.model,
        comp,
        soc: &env.soc,
        artifacts: &plan.artifacts,
        staging: staging.path(),
        rt: env.rt,
    };
    // The compiler's stages as progress and heartbeats (context steps compile for minutes).
    let watch = (step.kind == StepKind::Context).then(|| {
        let label = step.kind.label();
        crate::ctx_build::compile_watch::CompileWatch::start(
            &env.root.join("target/xtask-native-stdout.log"),
            crate::project::reports_dir(env.root, &env.model.file.model.name)
                .join("logs")
                .join(format!("{}-context.log", comp.name())),
            env.progress.ticker(bar, label),
            env.progress.heartbeat(bar, comp.name(), label),
        )
    });
    let rss_start_mb = crate::ctx_build::rss::current_mb();
    crate::ctx_build::rss::reset_peak();
    let ran = match step.kind {
        StepKind::Convert => steps::Convert::run(env.toolchain, &job),
        StepKind::CpuParity => steps::CpuParity::run(env.toolchain, &job),
        StepKind::Context => steps::Context::run(env.toolchain, &job),
    };
    let peak_rss_mb = crate::ctx_build::rss::peak_mb();
    let compiled = watch.map(|w| w.finish());
    let StepRun { moves, mut detail } = ran?;
    if !detail.is_object() {
        detail = serde_json::json!({ "value": detail });
    }
    detail["peak_rss_mb"] = serde_json::json!(peak_rss_mb);
    detail["rss_start_mb"] = serde_json::json!(rss_start_mb);
    if let Some(c) = compiled {
        detail["compile_stages"] = serde_json::json!(c.stages);
    }
    let outputs = moves
        .iter()
        .map(|(from, to)| move_output(env, from, to))
        .collect::<Result<Vec<_>>>()?;
    record.steps.insert(
        step.record_name.clone(),
        StepRecord {
            key,
            outputs: outputs
                .iter()
                .map(|o| (o.path.clone(), o.sha256.clone()))
                .collect(),
            finished_unix: crate::report::now_unix(),
            seconds: started.elapsed().as_secs_f64(),
            detail: detail.clone(),
        },
    );
    record.save(record_path)?;
    Ok((outputs, detail))
}

fn staging_dir(env: &BuildEnv<'_>) -> Result<tempfile::TempDir> {
    let dir = crate::project::ctx_dir(env.root, &env.model.file.model.name);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(&dir)
        .with_context(|| format!("cannot create a staging folder in {}", dir.display()))
}

/// Hashes a finished file, then renames it onto its stable name (same filesystem, one step).
fn move_output(env: &BuildEnv<'_>, from: &Path, to_rel: &Path) -> Result<OutputFile> {
    let sha256 = sha256_file(from)?;
    let bytes = std::fs::metadata(from)
        .with_context(|| format!("cannot stat {}", from.display()))?
        .len();
    let to = env.root.join(to_rel);
    crate::atomic::move_into_place(from, &to)?;
    let _ = env.memo.lock().map(|mut m| m.sha256(&to));
    Ok(OutputFile {
        path: to_rel.display().to_string(),
        bytes,
        sha256,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rerun_rule() {
        let fresh = Freshness::Fresh;
        let dirty = Freshness::dirty(DirtyReason::NeverBuilt);
        assert_eq!(run_reasons(&fresh, false, false), None);
        assert_eq!(
            run_reasons(&fresh, false, true),
            Some(vec![DirtyReason::EarlierStepRan].into())
        );
        assert_eq!(
            run_reasons(&fresh, true, false),
            Some(vec![DirtyReason::Forced].into())
        );
        assert_eq!(
            run_reasons(&fresh, true, true),
            Some(vec![DirtyReason::EarlierStepRan].into())
        );
        for (force, upstream) in [(false, false), (true, false), (false, true), (true, true)] {
            assert_eq!(
                run_reasons(&dirty, force, upstream),
                Some(vec![DirtyReason::NeverBuilt].into()),
                "a dirty step runs for its own reasons"
            );
        }
    }
}
