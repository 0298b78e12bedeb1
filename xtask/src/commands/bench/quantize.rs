//! `cargo xtask bench quantize`: one component built and proven twice in the same run, fp16
//! and w8a16 (two fresh copies of the tiny model under `target/bench/quantize/`), each in its
//! own process: binary bytes, compile seconds (the context step's CPU seconds), HTP parity run
//! seconds and the lowest output cosine against the float golden, with the w8a16/fp16 ratios.

use std::path::Path;

use anyhow::{Context, Result};

use super::super::{Ctx, Outcome};
use super::xtask_in;
use xtask_base::vocab::{BackendKind, Precision};
use xtask_ctx_build::report::BuildReport;
use xtask_parity::parity::report::ParityReport;

#[derive(clap::Args)]
pub struct BenchQuantize {
    /// The tiny model's component to build at both precisions.
    #[arg(long, default_value = "action_step")]
    component: String,
    /// The quantized precision to compare with fp16.
    #[arg(long, default_value = "w8a16")]
    precision: Precision,
}

/// One precision's figures.
struct Figures {
    bytes: u64,
    compile_s: f64,
    htp_run_s: f64,
    cosine: f64,
}

impl BenchQuantize {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let float = self.measure(ctx, Precision::Fp16)?;
        let quant = self.measure(ctx, self.precision)?;
        let p = self.precision;
        xtask_base::outln!(
            "bench quantize: tiny `{}`, fp16 vs {p}, soc 77, same run (HTP emulated):",
            self.component
        );
        xtask_base::outln!(
            "  {:<22} {:>14} {:>14} {:>9}",
            "",
            "fp16",
            p.label(),
            "ratio"
        );
        let row = |what: &str, a: f64, b: f64, digits: usize| {
            xtask_base::outln!(
                "  {what:<22} {a:>14.digits$} {b:>14.digits$} {:>8.3}x",
                b / a
            );
        };
        row("binary bytes", float.bytes as f64, quant.bytes as f64, 0);
        row("compile CPU s", float.compile_s, quant.compile_s, 2);
        row("HTP parity run s", float.htp_run_s, quant.htp_run_s, 3);
        xtask_base::outln!(
            "  {:<22} {:>14.8} {:>14.8}   (lowest output cosine vs the float golden)",
            "cosine",
            float.cosine,
            quant.cosine
        );
        Ok(Outcome::Success)
    }

    fn measure(&self, ctx: &Ctx, p: Precision) -> Result<Figures> {
        let project = super::tiny_project(&ctx.root, &format!("quantize/{p}"))?;
        if p.is_quantized() {
            let recipe = project.join(format!("recipes/tiny/{}.toml", self.component));
            let text = std::fs::read_to_string(&recipe)
                .with_context(|| format!("no recipe {}", recipe.display()))?;
            std::fs::write(
                &recipe,
                format!("{text}\n[quantize]\nprecision = \"{p}\"\n"),
            )?;
            link_quantizer(&ctx.root, &project)?;
        }
        let c = self.component.as_str();
        xtask_in(
            &project,
            &["build-ctx", "--soc", "77", "--only", c, "--jobs", "1"],
        )?;
        let htp = BackendKind::Htp.label();
        xtask_in(&project, &["parity", "--backend", htp, "--only", c])?;
        let build = BuildReport::read(&project.join("reports/tiny/build-soc77.json"))?;
        let step = build
            .components
            .iter()
            .find(|x| x.component == c)
            .and_then(|x| x.steps.iter().find(|s| s.step == "context binary"))
            .context("the build report has no context step")?;
        let parity = ParityReport::read(&project.join("reports/tiny"), BackendKind::Htp)?
            .context("no HTP parity report")?;
        let result = parity
            .components
            .iter()
            .find(|x| x.component == c)
            .context("the HTP parity report lacks the component")?;
        Ok(Figures {
            bytes: step.outputs.iter().map(|o| o.bytes).max().unwrap_or(0),
            compile_s: step.detail.cpu_s.unwrap_or(step.seconds),
            htp_run_s: result.run_seconds,
            cosine: result
                .outputs
                .iter()
                .map(|o| o.metrics.cosine)
                // A NaN cosine stays NaN (f64::min would drop it and show a good number).
                .fold(f64::INFINITY, |a, b| {
                    if a.is_nan() || b.is_nan() {
                        f64::NAN
                    } else {
                        a.min(b)
                    }
                }),
        })
    }
}

/// The checkout's quantizer environment, linked into a bench project (made once by the
/// project's first quantize step otherwise).
fn link_quantizer(repo: &Path, project: &Path) -> Result<()> {
    let env = xtask_runtime::quantize::env::ensure(repo)?;
    let link = project.join("target/quant-venv");
    if !link.exists() {
        std::os::unix::fs::symlink(&env.dir, &link)?;
    }
    Ok(())
}
