//! `cargo xtask bench parity [--full-width]`: the parity engine (read every golden file,
//! compare every declared output in f64) against the same work in numpy
//! (`xtask/scripts/parity_numpy.py`), time and peak memory, each in its own process.

use std::time::Instant;

use anyhow::{Context, Result};

use super::super::{Ctx, Outcome};
use super::{full_width_project, python_env, xtask_in};
use xtask_base::vocab::BackendKind;
use xtask_parity::parity::component::load_golden;
use xtask_parity::parity::metrics::compare;
use xtask_recipe::recipe::load_model;

#[derive(clap::Args)]
pub struct BenchParity {
    /// Use the full-width synthetic model (real tensor sizes; generated once, ~2 GB).
    #[arg(long)]
    full_width: bool,
}

impl BenchParity {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let (project, model) = if self.full_width {
            (full_width_project(&ctx.root)?, "fullwidth")
        } else {
            (ctx.root.clone(), "tiny")
        };
        let python = python_env(&ctx.root)?;
        let rust: serde_json::Value = serde_json::from_str(
            xtask_in(&project, &["bench", "parity-engine-once", "--model", model])?.trim(),
        )?;
        let out_json = ctx
            .root
            .join(format!("target/bench/numpy-parity-{model}.json"));
        let script = ctx.root.join("xtask/scripts/parity_numpy.py");
        let args = [
            script.display().to_string(),
            "--root".into(),
            project.display().to_string(),
            "--model".into(),
            model.into(),
            "--out".into(),
            out_json.display().to_string(),
        ];
        duct::cmd(&python, &args)
            .stdout_null()
            .run()
            .context("the numpy baseline failed")?;
        let py: serde_json::Value = serde_json::from_slice(&std::fs::read(&out_json)?)?;
        let get = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
        xtask_base::outln!(
            "parity engine, model `{model}` ({} outputs; read golden twice + compare in f64):",
            rust["outputs"]
        );
        xtask_base::outln!(
            "  Rust   {:>8.3} s   peak RSS {:>7.0} MB",
            get(&rust, "seconds"),
            get(&rust, "peak_rss_mb")
        );
        xtask_base::outln!(
            "  numpy  {:>8.3} s   peak RSS {:>7.0} MB",
            get(&py, "seconds"),
            get(&py, "peak_rss_mb")
        );
        xtask_base::outln!(
            "  Rust/numpy: time {:.3}, peak memory {:.3}",
            get(&rust, "seconds") / get(&py, "seconds"),
            get(&rust, "peak_rss_mb") / get(&py, "peak_rss_mb")
        );
        Ok(Outcome::Success)
    }
}

#[derive(clap::Args)]
pub struct ParityEngineOnce {
    /// The model: a folder under `recipes/`.
    #[arg(long, value_parser = xtask_recipe::recipe::names::parse_model_name)]
    model: String,
}

impl ParityEngineOnce {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let model = load_model(&ctx.root, &self.model)?;
        let started = Instant::now();
        let mut outputs = 0;
        for comp in &model.components {
            let expected = load_golden(&ctx.root, comp)?;
            let actual = load_golden(&ctx.root, comp)?;
            for (name, want) in &expected.expected {
                let got = &actual.expected[name];
                let gate = comp.gate(&model.file, name, BackendKind::Ort);
                std::hint::black_box(compare(
                    &got.to_f64_vec(),
                    &want.to_f64_vec(),
                    gate.atol,
                    gate.rtol,
                ));
                outputs += 1;
            }
        }
        let seconds = started.elapsed().as_secs_f64();
        xtask_base::outln!(
            "{}",
            serde_json::json!({ "seconds": seconds, "peak_rss_mb": xtask_chain::chain::run::peak_rss_mb(), "outputs": outputs })
        );
        Ok(xtask_base::vocab::Outcome::Success)
    }
}
