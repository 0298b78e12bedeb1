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
    #[arg(
        long,
        value_enum,
        required_unless_present = "qdq",
        conflicts_with = "qdq"
    )]
    backend: Option<xtask_base::vocab::QnnBackendKind>,
    /// A quantized component: its QDQ graph (the quantize step's `ctx/<model>/<component>.qdq.onnx`)
    /// against its float graph, both on ORT's CPU EP: the operators its quantization loses most
    /// at (what `exclude` can keep in float).
    #[arg(long)]
    qdq: bool,
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
        let qdq = match self.qdq {
            true => Some(qdq_graph(ctx, &self.model, comp)?),
            false => None,
        };
        let rt = Runtime::load(ensure_runtime(&ctx.root)?)?;
        let kind = self.backend.map_or(BackendKind::Cpu, BackendKind::from);
        // On the HTP, the built binary (when there is one) is what parity measured.
        let built = match kind {
            BackendKind::Htp if !self.qdq => {
                let soc = xtask_recipe::htp_target::target_soc(&model, None)?;
                let wrapper =
                    xtask_ctx_build::artifacts::artifacts(&self.model, comp.name(), &soc).wrapper;
                ctx.root.join(&wrapper).is_file().then_some(wrapper)
            }
            _ => None,
        };
        let backend = backend_for_component(&model, comp, kind)?;
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
            qdq: qdq.as_deref(),
            built: built.as_deref(),
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

/// The QDQ graph `--qdq` bisects: the component must be quantized and its quantize step must
/// have run (exit 2 naming what to do otherwise).
fn qdq_graph(
    ctx: &Ctx,
    model: &str,
    comp: &xtask_recipe::recipe::Component,
) -> Result<std::path::PathBuf> {
    let name = comp.name();
    if !comp.precision().is_quantized() {
        bail!(
            "{name} is not quantized ({} has no [quantize] precision other than fp16): it has no QDQ graph; bisect it on a backend with `cargo xtask bisect {name} --backend htp --model {model}`",
            comp.recipe_path.display()
        );
    }
    let path = xtask_ctx_build::artifacts::qdq_path(model, name);
    if !ctx.root.join(&path).is_file() {
        bail!(
            "{} is missing: its quantize step has not run; `cargo xtask build-ctx --model {model} --only {name}` writes it",
            path.display()
        );
    }
    Ok(path)
}
