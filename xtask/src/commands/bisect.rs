//! `cargo xtask bisect <component> --backend cpu|htp`: the first operator whose output
//! diverges between ORT's CPU EP and the QNN backend (`--threshold`), or by default the
//! operators ranked by the error they introduce (see `diagnose::bisect`, `diagnose::rank`).

use anyhow::{Result, bail};

use super::{BackendKind, Ctx, Outcome, backend_for_component, require_files};
use xtask_diagnose::diagnose::bisect::{BisectJob, bisect};
use xtask_diagnose::diagnose::bisect_report::{html, markdown, print_summary};
use xtask_parity::parity::component::load_golden;
use xtask_recipe::recipe::load_model;
use xtask_runtime::runtime::Runtime;
use xtask_runtime::runtime::bootstrap::ensure_runtime;

#[derive(clap::Args)]
pub struct Bisect {
    /// The component to bisect.
    component: String,
    /// The QNN backend compared against ORT's CPU EP.
    #[arg(long, value_enum)]
    backend: xtask_base::vocab::QnnBackendKind,
    /// The model: a folder under `recipes/`.
    #[arg(long, default_value = "tiny", value_parser = xtask_recipe::recipe::names::parse_model_name)]
    model: String,
    /// Find the first tensor whose cosine against the reference falls below this. Without
    /// it, every float tensor is measured and operators are ranked by the error they introduce.
    #[arg(long, value_parser = cosine_threshold)]
    threshold: Option<f64>,
    /// Operators listed when ranking.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Intermediate tensors exposed per round.
    #[arg(long, default_value_t = 64)]
    max_outputs: usize,
    #[command(flatten)]
    pub json: super::JsonFlag,
}

/// `--threshold`: a cosine, finite and in [0, 1] (`nan` would make every comparison false).
fn cosine_threshold(text: &str) -> std::result::Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "{text:?} is not a cosine threshold: give a finite number in [0, 1], e.g. 0.999"
        )),
    }
}

impl Bisect {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        if self.max_outputs < 2 {
            bail!("--max-outputs must be at least 2");
        }
        let model = load_model(&ctx.root, &self.model)?;
        let comp = super::find_component(&model, &self.component)?;
        require_files(ctx, &model, &[comp])?;
        let rt = Runtime::load(ensure_runtime(&ctx.root)?)?;
        let backend = backend_for_component(&model, comp, BackendKind::from(self.backend))?;
        let golden = load_golden(&ctx.root, comp)?;
        let report = bisect(&BisectJob {
            root: &ctx.root,
            model: &self.model,
            comp,
            golden: &golden,
            rt: &rt,
            backend: &backend,
            threshold: self.threshold,
            top: self.top,
            max_outputs: self.max_outputs,
        })?;
        let dir = xtask_base::project::reports_dir(&ctx.root, &self.model);
        let stem = report.stem();
        xtask_runtime::report::write_json_and_markdown(&dir, &stem, &report, &markdown(&report))?;
        xtask_base::ui::json::offer(&report);
        xtask_base::atomic::write_atomic(
            &dir.join(format!("{stem}.html")),
            html(&report).as_bytes(),
        )?;
        print_summary(
            &report,
            &xtask_base::project::rel(&ctx.root, &dir.join(format!("{stem}.html"))),
        );
        Ok(Outcome::Success)
    }
}
