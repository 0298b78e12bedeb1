//! One component's build, step by step: a step after a failure is skipped, a fresh step is
//! kept, a dirty one is restored from the build cache when it can be, else run under the
//! memory budget. Each outcome is one row of the build report.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::env::BuildEnv;
use crate::facts::StepFacts;
use crate::fingerprint::{ComponentRecord, DirtyReasons};
use crate::plan::{ComponentPlan, PlannedStep, StepKind};
use crate::report::{ComponentBuild, StepOutcome};
use crate::rerun::run_reasons;
use crate::schedule::{self, Granted};
use crate::step_run::{self, Restored};
use crate::toolchain::QnnOnnx;
use xtask_base::ui::progress::build::Bar;
use xtask_recipe::recipe::Component;

/// Builds one component's dirty steps in order; a failure stops the component only.
pub fn build_component(
    env: &BuildEnv<'_>,
    comp: &Component,
    plan: &ComponentPlan,
    onnx_mb: f64,
    force: bool,
    verbose: bool,
) -> ComponentBuild {
    let mut run = ComponentRun::start(env, comp, plan, onnx_mb);
    for step in &plan.steps {
        run.step(step, force, verbose);
    }
    run.finish()
}

/// The state of a component's build between its steps.
struct ComponentRun<'e, 'a> {
    env: &'e BuildEnv<'a>,
    comp: &'e Component,
    plan: &'e ComponentPlan,
    onnx_mb: f64,
    record_path: PathBuf,
    record: ComponentRecord,
    bar: Bar,
    steps: Vec<StepOutcome>,
    failed: Option<String>,
    cache_refused: Vec<String>,
    upstream_ran: bool,
    /// The ONNX the QNN steps get, resolved the first time a step runs.
    onnx: Option<QnnOnnx>,
}

impl<'e, 'a> ComponentRun<'e, 'a> {
    fn start(
        env: &'e BuildEnv<'a>,
        comp: &'e Component,
        plan: &'e ComponentPlan,
        onnx_mb: f64,
    ) -> Self {
        let record_path = env.root.join(&plan.artifacts.record);
        ComponentRun {
            env,
            comp,
            plan,
            onnx_mb,
            record: ComponentRecord::load(&record_path),
            record_path,
            bar: env.progress.component(&plan.component),
            steps: Vec::new(),
            failed: None,
            cache_refused: Vec::new(),
            upstream_ran: false,
            onnx: None,
        }
    }

    /// One step: skipped after a failure, kept when fresh, else restored or run.
    fn step(&mut self, step: &PlannedStep, force: bool, verbose: bool) {
        if let Some(why) = &self.failed {
            let why = format!("not run: {why}");
            self.steps.push(StepOutcome::skipped(step, why));
            return;
        }
        let Some(reasons) = run_reasons(&step.freshness, force, self.upstream_ran) else {
            self.keep_fresh(step);
            return;
        };
        if verbose {
            let why = reasons.join("; ");
            self.note(&format!(
                "{}: {} is dirty: {why}",
                self.plan.component,
                step.kind.label()
            ));
        }
        // The cache stands in for any step that would run, except under --force: an entry
        // carries the outputs its key was computed for (a CPU-parity entry, the DLC it
        // measured), so it is as good after an earlier step ran as after it was restored.
        if !force && self.restore(step, &reasons) {
            return;
        }
        self.run(step, reasons);
    }

    fn keep_fresh(&mut self, step: &PlannedStep) {
        let rec = self.record.steps.get(&step.record_name);
        self.steps
            .push(StepOutcome::fresh(step, rec, self.env.root));
        self.line(step, "fresh", None);
    }

    /// Restores the step from the build cache; false when it must run.
    fn restore(&mut self, step: &PlannedStep, reasons: &DirtyReasons) -> bool {
        let label = step.kind.label();
        let started = Instant::now();
        match step_run::restore_step(
            self.env,
            self.comp,
            step,
            &mut self.record,
            &self.record_path,
        ) {
            Ok(Restored::Yes(outputs, detail, key)) => {
                let seconds = started.elapsed().as_secs_f64();
                let how = format!("restored from cache {}", crate::step_cache::short(&key));
                self.line(step, &how, Some(seconds));
                let rec = self.record.steps.get(&step.record_name);
                let outcome =
                    StepOutcome::restored(step, reasons.texts(), seconds, outputs, *detail, key);
                self.steps.push(outcome.with_facts(rec));
                true
            }
            Ok(Restored::Miss) => false,
            Ok(Restored::Refused(why)) => {
                let text = format!("{}: {label}: {why}; building it", self.plan.component);
                self.note(&text);
                xtask_base::ui::warnings::warn(text);
                self.cache_refused.push(why);
                false
            }
            Err(e) => {
                let note = format!("{}: {label}: not restored: {e:#}", self.plan.component);
                self.note(&note);
                false
            }
        }
    }

    /// Runs the step once the memory budget grants its estimate, and records its outcome.
    fn run(&mut self, step: &PlannedStep, reasons: DirtyReasons) {
        let label = step.kind.label();
        let need = schedule::estimate(
            step.kind,
            self.onnx_mb,
            schedule::last_increase_mb(&self.record, &step.record_name),
        );
        let (_reserved, granted) = self.reserve(label, &need);
        self.env
            .progress
            .step_started(&self.bar, &self.plan.component, label);
        let started = Instant::now();
        let started_unix_ms = xtask_runtime::report::now_unix_ms();
        let outcome = self.run_step(step);
        let seconds = started.elapsed().as_secs_f64();
        match outcome {
            Ok((outputs, mut detail)) => {
                detail.memory_estimate_mb = Some(need.mb);
                // When it ran, to see what overlapped with `--jobs` (and prove that it did).
                detail.started_unix_ms = Some(started_unix_ms);
                detail.finished_unix_ms = Some(xtask_runtime::report::now_unix_ms());
                if let Granted::AfterWaiting(s) = granted {
                    detail.waited_for_memory_seconds = Some(s);
                }
                self.line(step, "ran", Some(seconds));
                let rec = self.record.steps.get(&step.record_name);
                // The record's time, so a later no-op build restores exactly this figure.
                let took = rec.map_or(seconds, |r| r.seconds);
                let outcome = StepOutcome::ran(step, reasons.texts(), took, outputs, detail);
                self.steps.push(outcome.with_facts(rec));
                self.upstream_ran = true;
            }
            Err(err) => {
                let mut msg = xtask_base::project::scrub(self.env.root, &format!("{err:#}"));
                if let Some(kept) = kept_dlc(step, &self.record) {
                    msg.push_str(&format!("; {kept}"));
                }
                self.line(step, "FAILED", Some(seconds));
                self.failed = Some(format!("{label} failed"));
                self.steps
                    .push(StepOutcome::failed(step, reasons.texts(), seconds, msg));
            }
        }
    }

    /// Waits until the memory budget grants the step's estimate, saying why it waits.
    fn reserve(
        &self,
        label: &str,
        need: &schedule::Estimate,
    ) -> (schedule::Reservation<'e>, Granted) {
        let (env, component) = (self.env, &self.plan.component);
        let (reserved, granted) = env.budget.reserve(need.mb, |in_use| {
            let note = format!(
                "{component}: {label} waits for memory: needs ~{:.0} MB ({}), {in_use:.0} of {:.0} MB reserved by running steps",
                need.mb, need.basis, env.budget.limit_mb
            );
            env.progress.note(&self.bar, &note);
        });
        if granted == Granted::Alone {
            let note = format!(
                "{component}: {label} is estimated at ~{:.0} MB ({}), over the {:.0} MB memory budget: it runs with nothing beside it",
                need.mb, need.basis, env.budget.limit_mb
            );
            self.note(&note);
        }
        (reserved, granted)
    }

    fn run_step(
        &mut self,
        step: &PlannedStep,
    ) -> Result<(Vec<crate::report::OutputFile>, crate::detail::StepDetail)> {
        let model = &self.env.model.file.model.name;
        // The quantize step reads the float ONNX; the steps after it what QNN gets (for a
        // quantized component the QDQ ONNX, which exists only once quantize ran).
        let float;
        let onnx = if step.kind == StepKind::Quantize {
            float = QnnOnnx::float(self.env.root, model, self.comp)?;
            &float
        } else {
            if self.onnx.is_none() {
                self.onnx = Some(QnnOnnx::resolve(self.env.root, model, self.comp)?);
            }
            self.onnx
                .as_ref()
                .context("internal: the QNN ONNX was not resolved")?
        };
        step_run::run_step(
            self.env,
            self.comp,
            self.plan,
            step,
            onnx,
            &mut self.record,
            &self.record_path,
            &self.bar,
        )
    }

    fn line(&self, step: &PlannedStep, what: &str, seconds: Option<f64>) {
        self.env.progress.step_line(
            &self.bar,
            &self.plan.component,
            step.kind.label(),
            what,
            seconds,
        );
    }

    fn note(&self, text: &str) {
        self.env.progress.note(&self.bar, text);
    }

    fn finish(self) -> ComponentBuild {
        let pass = self.failed.is_none();
        self.env
            .progress
            .finish(&self.bar, &self.plan.component, pass);
        ComponentBuild {
            component: self.plan.component.clone(),
            pass,
            steps: self.steps,
            cache_refused: self.cache_refused,
        }
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
