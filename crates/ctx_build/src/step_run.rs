//! One step, done: run through its toolchain, or restored from the build cache. Either way its
//! outputs are staged and hashed, moved into place, and its record entry written last.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::detail::StepDetail;
use crate::env::BuildEnv;
use crate::fingerprint::{ComponentRecord, StepRecord};
use crate::plan::{ComponentPlan, PlannedStep, StepKind};
use crate::report::OutputFile;
use crate::step_cache::entry::Lookup;
use crate::step_cache::names::StepNames;
use crate::steps::{self, StagedOutput, StepRun};
use crate::toolchain::{QnnOnnx, StepJob};
use xtask_recipe::recipe::Component;

/// Runs one step. Its old record entry is cleared first (except CPU parity's: it names the
/// current DLC, which a failing run keeps) and the new one written last, after every output
/// was moved into place and (for parity) the gate passed.
#[allow(clippy::too_many_arguments)]
pub fn run_step(
    env: &BuildEnv<'_>,
    comp: &Component,
    plan: &ComponentPlan,
    step: &PlannedStep,
    onnx: &QnnOnnx,
    record: &mut ComponentRecord,
    record_path: &Path,
    bar: &xtask_base::ui::progress::build::Bar,
) -> Result<(Vec<OutputFile>, StepDetail)> {
    let key = step.key.clone().context("an input file is missing")?;
    if step.kind != StepKind::CpuParity && record.steps.remove(&step.record_name).is_some() {
        record.save(record_path)?;
    }
    let started = Instant::now();
    let (staging, _partial) = staging_dir(env)?;
    let job = StepJob {
        root: env.root,
        model: env.model,
        comp,
        soc: &env.soc,
        artifacts: &plan.artifacts,
        target: &plan.target,
        rendered: &step.rendered,
        key: &key,
        versions: env.versions,
        onnx,
        staging: staging.path(),
        rt: env.rt,
    };
    let watch = compile_watch(env, comp, step, bar);
    // The compiler reports its own stages; every other step gets a pulse.
    let beat = watch.is_none().then(|| {
        let label = step.kind.label();
        xtask_base::ui::progress::Beat::start(
            env.progress.ticker(bar, label),
            env.progress.heartbeat(bar, comp.name(), label),
        )
    });
    let meter = crate::rss::StepMeter::start();
    let ran = match step.kind {
        StepKind::Quantize => crate::step_quantize::Quantize::run(&job),
        StepKind::Convert => steps::Convert::run(env.toolchain, &job),
        StepKind::CpuParity => steps::CpuParity::run(env.toolchain, &job),
        StepKind::Context => steps::Context::run(env.toolchain, &job),
    };
    let cost = meter.finish();
    drop(beat);
    let compiled = watch.map(|w| w.finish());
    let StepRun {
        outputs,
        facts,
        mut detail,
    } = ran?;
    detail.peak_rss_mb = cost.peak_rss_mb;
    detail.rss_start_mb = cost.rss_start_mb;
    detail.cpu_s = cost.cpu_s;
    detail.child_peak_rss_mb = cost.child_peak_rss_mb;
    detail.beside_other_steps = cost.beside_other_steps;
    detail.compile_stages = compiled.map(|c| c.stages);
    let outputs = outputs
        .iter()
        .map(|o| move_output(env, o))
        .collect::<Result<Vec<_>>>()?;
    let entry = StepRecord {
        key,
        outputs: outputs
            .iter()
            .map(|o| (o.path.clone(), o.sha256.clone()))
            .collect(),
        finished_unix: xtask_runtime::report::now_unix(),
        seconds: started.elapsed().as_secs_f64(),
        facts,
        restored_from_cache: None,
        detail: detail.clone(),
    };
    record.steps.insert(step.record_name.clone(), entry.clone());
    record.save(record_path)?;
    store_in_cache(env, comp, step, &entry);
    Ok((outputs, detail))
}

/// The compiler's stages as progress and heartbeats (context steps compile for minutes).
fn compile_watch(
    env: &BuildEnv<'_>,
    comp: &Component,
    step: &PlannedStep,
    bar: &xtask_base::ui::progress::build::Bar,
) -> Option<crate::compile_watch::CompileWatch> {
    (step.kind == StepKind::Context).then(|| {
        let label = step.kind.label();
        crate::compile_watch::CompileWatch::start(
            &xtask_base::ui::stdio::native_log()
                .map(std::path::Path::to_path_buf)
                .unwrap_or_else(|| xtask_base::project::scratch_dir(env.root, "xtask-native.log")),
            xtask_base::project::reports_dir(env.root, &env.model.file.model.name)
                .join("logs")
                .join(format!("{}-context.log", comp.name())),
            env.progress.ticker(bar, label),
            env.progress.heartbeat(bar, comp.name(), label),
        )
    })
}

/// Stores a finished step in the build cache; a failure to store (a full disk, a read-only
/// cache, a link in the way) is a warning, never a failure of the step: the cache is an
/// optimisation and the build's result stands. `--force` replaces the entry.
fn store_in_cache(env: &BuildEnv<'_>, comp: &Component, step: &PlannedStep, entry: &StepRecord) {
    if let Some(cache) = env.cache
        && let Err(e) = cache.store(env.root, &step_names(env, comp, step), entry, env.force)
    {
        xtask_base::ui::warnings::warn(format!(
            "{}: {} was built but not cached: {e:#}",
            comp.name(),
            step.kind.label()
        ));
    }
}

/// The names and paths of a step, as the cache maps them (never part of its key).
pub fn step_names(env: &BuildEnv<'_>, comp: &Component, step: &PlannedStep) -> StepNames {
    StepNames {
        model: env.model.file.model.name.clone(),
        component: comp.name().to_string(),
        step: step.record_name.clone(),
        inputs: step.inputs.clone(),
        outputs: step.outputs.clone(),
    }
}

/// What a cache lookup did for a step.
pub enum Restored {
    /// Restored: its outputs in place, its record written (the cache key).
    Yes(Vec<OutputFile>, Box<StepDetail>, String),
    Miss,
    /// The entry was unusable (why); the step must run.
    Refused(String),
}

/// Restores a step from the build cache when its key is there: every file re-hashed while
/// it is copied into a staging folder, moved into place, the record entry written last.
pub fn restore_step(
    env: &BuildEnv<'_>,
    comp: &Component,
    step: &PlannedStep,
    record: &mut ComponentRecord,
    record_path: &Path,
) -> Result<Restored> {
    let (Some(cache), Some(key)) = (env.cache, &step.key) else {
        return Ok(Restored::Miss);
    };
    let (staging, _partial) = staging_dir(env)?;
    let names = step_names(env, comp, step);
    let (entry_record, staged) = match cache.lookup(&key.key, &names, staging.path()) {
        Lookup::Miss => return Ok(Restored::Miss),
        Lookup::Refused(why) => return Ok(Restored::Refused(why)),
        Lookup::Hit { record, staged } => (record, staged),
    };
    if entry_record.key != *key {
        return Ok(Restored::Refused(format!(
            "cache entry {} refused: its key parts differ from this build's",
            crate::step_cache::short(&key.key)
        )));
    }
    if record.steps.remove(&step.record_name).is_some() {
        record.save(record_path)?;
    }
    let outputs = staged
        .iter()
        .map(|(from, artifact, sha256)| {
            move_output(
                env,
                &StagedOutput {
                    staged: from.clone(),
                    artifact: artifact.into(),
                    sha256: sha256.clone(),
                },
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let mut restored = (*entry_record).clone();
    restored.finished_unix = xtask_runtime::report::now_unix();
    restored.restored_from_cache = Some(key.key.clone());
    let detail = StepDetail {
        summary: Some(restored.facts.summary()),
        restored_from_cache: Some(key.key.clone()),
        built_seconds: Some(entry_record.seconds),
        ..StepDetail::default()
    };
    record.steps.insert(step.record_name.clone(), restored);
    record.save(record_path)?;
    Ok(Restored::Yes(outputs, Box::new(detail), key.key.clone()))
}

/// A step's staging folder, removed if the tool is interrupted while the step runs.
fn staging_dir(
    env: &BuildEnv<'_>,
) -> Result<(tempfile::TempDir, xtask_base::ui::interrupt::Partial)> {
    let dir = xtask_base::project::ctx_dir(env.root, &env.model.file.model.name);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    xtask_base::ui::interrupt::Partial::staging(&dir, ".staging-")
        .with_context(|| format!("cannot create a staging folder in {}", dir.display()))
}

/// Renames a finished, hashed file onto its stable name (same filesystem, one step).
fn move_output(env: &BuildEnv<'_>, out: &StagedOutput) -> Result<OutputFile> {
    let bytes = std::fs::metadata(&out.staged)
        .with_context(|| format!("cannot stat {}", out.staged.display()))?
        .len();
    let to = env.root.join(&out.artifact);
    xtask_base::atomic::move_into_place(&out.staged, &to)?;
    let _ = env.memo.lock().map(|mut m| m.sha256(&to));
    Ok(OutputFile {
        path: out.artifact.display().to_string(),
        bytes,
        sha256: out.sha256.clone(),
    })
}
