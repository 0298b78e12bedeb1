//! `cargo xtask precision --model M --budget E`: which components can be quantized before the
//! robot's actions change. The float chain is measured first on the chosen backend; when it
//! misses the budget the search says so and stops (exit 1), or with `--budget-from-float`
//! reads the budget as error added over it. Each configuration tried is built (`build-ctx`'s
//! steps, cached) and the whole chain run; the final actions are compared with the float
//! golden. A `--backend qdq` proposal is confirmed on the HTP before it is proposed. The
//! report, `reports/<model>/precision.{json,md,html}`, is written after every measurement
//! (in progress), at the end (complete) and when interrupted (interrupted).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::{Result, bail};

use super::{Ctx, Outcome};
use xtask_base::vocab::Precision;
use xtask_chain::precision::gates::ComponentGates;
use xtask_chain::precision::measure::ChainMeasure;
use xtask_chain::precision::outcome::{Assignment, BudgetMode, Outcome as SearchOutcome, Plan};
use xtask_chain::precision::report::{Asked, PrecisionReport, SearchBackend, Status};
use xtask_chain::precision::search::search;
use xtask_recipe::recipe::load_model;
use xtask_runtime::runtime::Runtime;
use xtask_runtime::runtime::bootstrap::ensure_runtime_rehashed;

#[derive(clap::Args)]
pub struct PrecisionCmd {
    /// The model: a folder under `recipes/`.
    #[arg(long, default_value = "tiny", value_parser = xtask_recipe::recipe::names::parse_model_name)]
    model: String,
    /// The largest absolute error of the final actions against the float golden that a
    /// proposal may cause (with --budget-from-float: the error it may add over the float
    /// chain's own).
    #[arg(long, value_parser = parse_budget)]
    budget: f64,
    /// Read the budget as error added over the float chain on the same backend: a
    /// configuration passes when its actions error <= the float chain's + budget. Without it
    /// the budget is absolute, and a float chain over it stops the search (exit 1).
    #[arg(long)]
    budget_from_float: bool,
    /// Where the chain runs: the built HTP context binaries (emulated here; the numbers that
    /// ship), or each quantized component's QDQ graph on ORT's CPU EP (the quantization
    /// error alone; fp16 components run in float there; the proposal is then confirmed by an
    /// HTP chain, backing off on the HTP when it is over).
    #[arg(long, value_enum, default_value_t = SearchBackend::Htp)]
    backend: SearchBackend,
    /// The precisions to try for each component (fp16 is always the baseline).
    #[arg(long, value_delimiter = ',', default_value = "w8a16,w4a16")]
    precisions: Vec<Precision>,
    /// Only these components (comma-separated) are searched; the others keep their recipe's.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// A quantized component that fails its own gate at the CPU stage: `enforce` leaves it
    /// unmeasured (the report says which gate and what it measured); `report` builds it with
    /// its gate at the measured value and measures it in the chain (--apply then writes that
    /// gate with the chain's error as the reason).
    #[arg(long, value_enum, default_value_t = ComponentGates::Enforce)]
    component_gates: ComponentGates,
    /// Write the proposal into the recipes (`[quantize] precision`, comments kept).
    #[arg(long)]
    apply: bool,
    /// A build cache shared by checkouts (as `build-ctx --cache`).
    #[arg(long, value_name = "DIR")]
    cache: Option<std::path::PathBuf>,
}

fn parse_budget(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!(
            "{s:?} is not a budget: a positive number, the actions' largest absolute error (e.g. 1e-2)"
        )),
    }
}

/// The latest report and whether the search was interrupted: the report is written under
/// this lock only, so the interrupt's "interrupted" is the last one written.
#[derive(Default)]
struct Latest {
    report: Option<PrecisionReport>,
    interrupted: bool,
}

/// Writes the report as the search goes, and once more as interrupted when it is.
struct Writer {
    latest: Arc<Mutex<Latest>>,
    dir: PathBuf,
    _on_interrupt: xtask_base::ui::interrupt::OnInterrupt,
}

impl Writer {
    fn new(dir: PathBuf) -> Self {
        let latest = Arc::new(Mutex::new(Latest::default()));
        let (l, d) = (latest.clone(), dir.clone());
        let on_interrupt = xtask_base::ui::interrupt::OnInterrupt::new(move || {
            let mut l = l.lock().unwrap_or_else(|e| e.into_inner());
            l.interrupted = true;
            let Some(r) = l.report.as_mut() else {
                return;
            };
            r.status = Status::Interrupted;
            r.complete = false;
            match r.write(&d) {
                Ok(()) => xtask_base::errln!(
                    "precision: the report keeps the {} configuration(s) measured, marked interrupted",
                    r.tried.len()
                ),
                Err(e) => {
                    xtask_base::errln!(
                        "precision: the report could not be marked interrupted: {e:#}"
                    )
                }
            }
        });
        Writer {
            latest,
            dir,
            _on_interrupt: on_interrupt,
        }
    }

    fn write(&self, report: PrecisionReport) -> Result<()> {
        let mut l = self.latest.lock().unwrap_or_else(|e| e.into_inner());
        if l.interrupted {
            return Ok(());
        }
        report.write(&self.dir)?;
        l.report = Some(report);
        Ok(())
    }
}

impl PrecisionCmd {
    /// The quantized precisions to try, each once.
    fn precisions(&self) -> Result<Vec<Precision>> {
        let mut precisions: Vec<Precision> = Vec::new();
        for p in self.precisions.iter().copied().filter(|p| p.is_quantized()) {
            if !precisions.contains(&p) {
                precisions.push(p);
            }
        }
        if precisions.is_empty() {
            bail!("--precisions names no quantized precision to try (fp16 is the baseline)");
        }
        Ok(precisions)
    }

    fn asked(&self, model: &str, precisions: &[Precision], names: &[String]) -> Asked {
        Asked {
            model: model.to_string(),
            backend: self.backend,
            budget: self.budget,
            budget_mode: if self.budget_from_float {
                BudgetMode::FromFloat
            } else {
                BudgetMode::Absolute
            },
            component_gates: self.component_gates,
            precisions: precisions.to_vec(),
            components: names.to_vec(),
        }
    }

    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let model = load_model(&ctx.root, &self.model)?;
        xtask_chain::chain::run::host_section(&model)?;
        let comps = super::select_components(&model, &self.only)?;
        super::require_files(ctx, &model, &comps)?;
        let names: Vec<String> = comps.iter().map(|c| c.name().to_string()).collect();
        let precisions = self.precisions()?;
        let rt = Runtime::load(ensure_runtime_rehashed(&ctx.root)?)?;
        xtask_recipe::recipe::target::check_qairt(&model, rt.qnn_build_version().as_deref())?;
        let versions = xtask_runtime::report::ToolVersions::of(&rt)
            .with_provenance(&ctx.root, &model.file.model.name);
        let cache =
            xtask_ctx_build::step_cache::StepCache::from_flag_or_env(self.cache.as_deref())?;
        let asked = self.asked(&model.file.model.name, &precisions, &names);
        let plan = Plan {
            components: names,
            precisions: precisions.clone(),
            budget: self.budget,
            mode: asked.budget_mode,
            confirm_on_htp: self.backend == SearchBackend::Qdq,
        };
        let mut measure = ChainMeasure::new(
            &ctx.root,
            &model,
            &rt,
            self.backend,
            &precisions,
            cache,
            self.component_gates,
        )?;
        let dir = xtask_base::project::reports_dir(&ctx.root, &model.file.model.name);
        let dir_rel = xtask_base::project::rel(&ctx.root, &dir);
        measure.keeps(&format!(
            "{dir_rel}/precision.* with every configuration measured so far, marked interrupted"
        ));
        let report_of = |o: &SearchOutcome, status| {
            PrecisionReport::of(&model, &asked, versions.clone(), o, status)
        };
        let writer = Writer::new(dir);
        let (mut write_error, mut said_float) = (None, false);
        let outcome = search(&plan, &mut measure, &mut |o| {
            // Every measurement lands on disk at once: an interrupted search keeps it.
            let report = report_of(o, Status::InProgress);
            if let (Some(note), false) = (&report.float_note, said_float) {
                said_float = true;
                xtask_base::errln!("precision: {note}");
            }
            if let Err(e) = writer.write(report) {
                write_error.get_or_insert(e);
            }
        })?;
        if let Some(e) = write_error {
            return Err(e.context("cannot write the precision report"));
        }
        let report = report_of(&outcome, Status::Complete);
        writer.write(report.clone())?;
        report.print(&dir_rel);
        match &outcome.proposal {
            None => Ok(Outcome::GateFailed),
            Some(proposal) if self.apply => {
                let gates = xtask_chain::precision::report::gate_lines(&asked, &outcome);
                apply(ctx, &model, proposal, &gates)?;
                Ok(Outcome::Success)
            }
            Some(_) => Ok(Outcome::Success),
        }
    }
}

/// `--apply`: the proposal (and the gates measured past) into the recipes.
fn apply(
    ctx: &Ctx,
    model: &xtask_recipe::recipe::Model,
    proposal: &Assignment,
    gates: &std::collections::BTreeMap<String, xtask_chain::precision::apply::GateLine>,
) -> Result<()> {
    let changed = xtask_chain::precision::apply::apply(&ctx.root, model, proposal, gates)?;
    match changed.as_slice() {
        [] => xtask_base::outln!("--apply: the recipes already say the proposal"),
        _ => xtask_base::outln!(
            "--apply: wrote [quantize] into {} recipe(s) ({}); build them with `cargo xtask build-ctx --soc {} --model {}`",
            changed.len(),
            changed.join(", "),
            model.file.target.soc,
            model.file.model.name
        ),
    }
    Ok(())
}
