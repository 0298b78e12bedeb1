//! Executing a plan: components on `--jobs` workers under the tree's build lock, each
//! component's steps in order; a dirty step is restored from the build cache when its key is
//! there, else run (`step_run`): its outputs staged, hashed and moved into place before its
//! record entry is written (last).

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::ctx_build::facts::StepFacts;
use crate::ctx_build::fingerprint::{ComponentRecord, DirtyReason, DirtyReasons, Freshness};
use crate::ctx_build::plan::{ComponentPlan, PlannedStep, StepKind, Versions};
use crate::ctx_build::report::{ComponentBuild, StepOutcome};
use crate::ctx_build::schedule::{self, Granted, MemoryBudget};
use crate::ctx_build::step_cache::StepCache;
use crate::ctx_build::step_run::{self, Restored};
use crate::ctx_build::toolchain::{QnnOnnx, Toolchain};
use crate::hashing::HashMemo;
use crate::recipe::{Component, Model};
use crate::soc::Soc;
use crate::ui::progress::build::Progress;

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
    /// The tool versions in every key (and every step's facts).
    pub versions: &'a Versions,
    /// `--cache` / `XTASK_CACHE_DIR`: steps are restored from it and stored in it.
    pub cache: Option<&'a StepCache>,
}

/// The plan as the build will run it: a fresh step after one that runs re-runs too (the
/// build's `upstream_ran`), and `--force` runs every step. Without a cache (a step restored
/// from one does not make the next re-run), the dry run then names exactly the steps the build
/// runs, also after an interrupted build left a component half done.
pub fn as_the_build_runs(plans: &mut [crate::ctx_build::plan::ComponentPlan], force: bool) {
    for plan in plans {
        for (i, reasons) in steps_to_run(plan, force) {
            plan.steps[i].freshness = Freshness::Dirty(reasons);
        }
    }
}

/// The steps of `plan` a build runs (by index) and why, in order (`run_reasons` applied along
/// the component): what the dry run marks and what the up-front resource check counts.
pub fn steps_to_run(
    plan: &crate::ctx_build::plan::ComponentPlan,
    force: bool,
) -> Vec<(usize, DirtyReasons)> {
    let mut upstream_ran = false;
    let mut out = Vec::new();
    for (i, step) in plan.steps.iter().enumerate() {
        if let Some(reasons) = run_reasons(&step.freshness, force, upstream_ran) {
            upstream_ran = true;
            out.push((i, reasons));
        }
    }
    out
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
        crate::errln!("removed {left}, left behind by an interrupted build");
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
    let mut cache_refused = Vec::new();
    let mut upstream_ran = false;
    let mut onnx: Option<QnnOnnx> = None;
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
        // The cache stands in for any step that would run, except under --force: an entry
        // carries the outputs its key was computed for (a CPU-parity entry, the DLC it
        // measured), so it is as good after an earlier step ran as after it was restored.
        if !force {
            let started = Instant::now();
            match step_run::restore_step(env, step, &mut record, &record_path) {
                Ok(Restored::Yes(outputs, detail, key)) => {
                    let seconds = started.elapsed().as_secs_f64();
                    let how = format!(
                        "restored from cache {}",
                        crate::ctx_build::step_cache::short(&key)
                    );
                    env.progress
                        .step_line(&bar, &plan.component, label, &how, Some(seconds));
                    let texts = reasons.texts();
                    let rec = record.steps.get(&step.record_name);
                    steps.push(
                        StepOutcome::restored(step, texts, seconds, outputs, detail, key)
                            .with_facts(rec),
                    );
                    continue;
                }
                Ok(Restored::Miss) => {}
                Ok(Restored::Refused(why)) => {
                    let note = format!("{}: {label}: {why}; building it", plan.component);
                    env.progress.note(&bar, &note);
                    cache_refused.push(why);
                }
                Err(e) => {
                    let note = format!("{}: {label}: not restored: {e:#}", plan.component);
                    env.progress.note(&bar, &note);
                }
            }
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
        let outcome = qnn_onnx(&mut onnx, env, comp).and_then(|onnx| {
            step_run::run_step(env, comp, plan, step, onnx, &mut record, &record_path, &bar)
        });
        let seconds = started.elapsed().as_secs_f64();
        match outcome {
            Ok((outputs, mut detail)) => {
                detail.memory_estimate_mb = Some(need.mb);
                // When it ran, to see what overlapped with `--jobs` (and prove that it did).
                detail.started_unix_ms = Some(started_unix_ms);
                detail.finished_unix_ms = Some(crate::report::now_unix_ms());
                if let Granted::AfterWaiting(s) = granted {
                    detail.waited_for_memory_seconds = Some(s);
                }
                env.progress
                    .step_line(&bar, &plan.component, label, "ran", Some(seconds));
                let texts = reasons.texts();
                let rec = record.steps.get(&step.record_name);
                steps.push(StepOutcome::ran(step, texts, seconds, outputs, detail).with_facts(rec));
                upstream_ran = true;
            }
            Err(err) => {
                let mut msg = crate::project::scrub(env.root, &format!("{err:#}"));
                if let Some(kept) = kept_dlc(step, &record) {
                    msg.push_str(&format!("; {kept}"));
                }
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
        cache_refused,
    }
}

/// After a failed CPU parity: which DLC stays current (the last one that passed), if any.
fn kept_dlc(step: &PlannedStep, record: &ComponentRecord) -> Option<String> {
    if step.kind != StepKind::CpuParity {
        return None;
    }
    match &record.steps.get(&step.record_name)?.facts {
        StepFacts::CpuParity(f) => Some(format!(
            "the current DLC stays {} (sha256 {}, the last one that passed)",
            f.current_dlc.path,
            &f.current_dlc.sha256[..12.min(f.current_dlc.sha256.len())]
        )),
        _ => None,
    }
}

/// The ONNX the QNN steps of `comp` get, resolved the first time a step of it runs.
fn qnn_onnx<'a>(
    slot: &'a mut Option<QnnOnnx>,
    env: &BuildEnv<'_>,
    comp: &Component,
) -> Result<&'a QnnOnnx> {
    if slot.is_none() {
        *slot = Some(QnnOnnx::resolve(
            env.root,
            &env.model.file.model.name,
            comp,
        )?);
    }
    slot.as_ref()
        .context("internal: the QNN ONNX was not resolved")
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
