//! `cargo xtask precision --model M --budget E`: which components can be quantized before the
//! robot's actions change. Each configuration tried is built (`build-ctx`'s steps, cached) and
//! the whole chain run; the final actions are compared with the float golden. The report,
//! `reports/<model>/precision.{json,md,html}`, is written after every measurement.

use anyhow::{Result, bail};

use super::{Ctx, Outcome};
use xtask_base::vocab::Precision;
use xtask_chain::precision::measure::ChainMeasure;
use xtask_chain::precision::report::{PrecisionReport, SearchBackend};
use xtask_chain::precision::search::{Outcome as SearchOutcome, search};
use xtask_recipe::recipe::load_model;
use xtask_runtime::runtime::Runtime;
use xtask_runtime::runtime::bootstrap::ensure_runtime_rehashed;

#[derive(clap::Args)]
pub struct PrecisionCmd {
    /// The model: a folder under `recipes/`.
    #[arg(long, default_value = "tiny", value_parser = xtask_recipe::recipe::names::parse_model_name)]
    model: String,
    /// The largest absolute error of the final actions against the float golden that a
    /// proposal may cause.
    #[arg(long, value_parser = parse_budget)]
    budget: f64,
    /// Where the chain runs: the built HTP context binaries (emulated here; the numbers that
    /// ship), or each quantized component's QDQ graph on ORT's CPU EP (the quantization
    /// error alone; fp16 components run in float there).
    #[arg(long, value_enum, default_value_t = SearchBackend::Htp)]
    backend: SearchBackend,
    /// The precisions to try for each component (fp16 is always the baseline).
    #[arg(long, value_delimiter = ',', default_value = "w8a16,w4a16")]
    precisions: Vec<Precision>,
    /// Only these components (comma-separated) are searched; the others keep their recipe's.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
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

impl PrecisionCmd {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let model = load_model(&ctx.root, &self.model)?;
        xtask_chain::chain::run::host_section(&model)?;
        let comps = super::select_components(&model, &self.only)?;
        super::require_files(ctx, &model, &comps)?;
        let names: Vec<String> = comps.iter().map(|c| c.name().to_string()).collect();
        let mut precisions: Vec<Precision> = Vec::new();
        for p in self.precisions.iter().copied().filter(|p| p.is_quantized()) {
            if !precisions.contains(&p) {
                precisions.push(p);
            }
        }
        if precisions.is_empty() {
            bail!("--precisions names no quantized precision to try (fp16 is the baseline)");
        }
        let rt = Runtime::load(ensure_runtime_rehashed(&ctx.root)?)?;
        xtask_recipe::recipe::target::check_qairt(&model, rt.qnn_build_version().as_deref())?;
        let versions = xtask_runtime::report::ToolVersions::of(&rt)
            .with_provenance(&ctx.root, &model.file.model.name);
        let cache =
            xtask_ctx_build::step_cache::StepCache::from_flag_or_env(self.cache.as_deref())?;
        let mut measure =
            ChainMeasure::new(&ctx.root, &model, &rt, self.backend, &precisions, cache)?;
        let dir = xtask_base::project::reports_dir(&ctx.root, &model.file.model.name);
        let report_of = |o: &SearchOutcome, complete| {
            PrecisionReport::of(
                &model,
                self.backend,
                self.budget,
                &precisions,
                &names,
                versions.clone(),
                o,
                complete,
            )
        };
        let mut write_error = None;
        let outcome = search(&names, &precisions, self.budget, &mut measure, &mut |o| {
            // Every measurement lands on disk at once: an interrupted search keeps it.
            if let Err(e) = report_of(o, false).write(&dir) {
                write_error.get_or_insert(e);
            }
        })?;
        if let Some(e) = write_error {
            return Err(e.context("cannot write the precision report"));
        }
        let report = report_of(&outcome, true);
        report.write(&dir)?;
        report.print(&xtask_base::project::rel(&ctx.root, &dir));
        let Some(proposal) = &outcome.proposal else {
            return Ok(Outcome::GateFailed);
        };
        if self.apply {
            let changed = xtask_chain::precision::apply::apply(&ctx.root, &model, proposal)?;
            match changed.as_slice() {
                [] => xtask_base::outln!("--apply: the recipes already say the proposal"),
                _ => xtask_base::outln!(
                    "--apply: wrote [quantize] precision into {} recipe(s) ({}); build them with `cargo xtask build-ctx --soc {} --model {}`",
                    changed.len(),
                    changed.join(", "),
                    model.file.target.soc,
                    model.file.model.name
                ),
            }
        }
        Ok(Outcome::Success)
    }
}
