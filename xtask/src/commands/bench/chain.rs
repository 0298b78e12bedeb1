//! `cargo xtask bench chain [--full-width]`: the Rust chain on ORT's CPU EP against a plain
//! Python onnxruntime chain on the same ONNX files (`xtask/scripts/chain_ort.py`, the same
//! pinned ORT library), the host share of each, and the chain against the sum of its
//! components measured alone.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{Context, Result};

use super::super::{Ctx, Outcome};
use super::{full_width_project, median, python_env, tiny_project, xtask_in};
use crate::parity::component::load_golden;
use crate::recipe::load_model;
use crate::runtime::bootstrap::ensure_runtime;
use crate::runtime::{Backend, Runtime};

#[derive(clap::Args)]
pub struct BenchChain {
    /// Use the full-width synthetic model (real tensor sizes; generated once, ~2 GB).
    #[arg(long)]
    full_width: bool,
    #[arg(long, default_value_t = 20)]
    iters: usize,
    #[arg(long, default_value_t = 3)]
    warmup: usize,
}

impl BenchChain {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let (project, model) = if self.full_width {
            (full_width_project(&ctx.root)?, "fullwidth")
        } else {
            (tiny_project(&ctx.root, "chain/tiny")?, "tiny")
        };
        let python = python_env(&ctx.root)?;
        let (iters, warmup) = (self.iters.to_string(), self.warmup.to_string());

        xtask_in(
            &project,
            &[
                "run",
                "--backend",
                "ort",
                "--model",
                model,
                "--iters",
                &iters,
                "--warmup",
                &warmup,
            ],
        )?;
        let rust: serde_json::Value = serde_json::from_slice(&std::fs::read(
            project.join(format!("reports/{model}/run-ort.json")),
        )?)?;
        let rust_p50 = rust["latency"]
            .as_array()
            .and_then(|l| l.iter().find(|x| x["name"] == "end-to-end"))
            .and_then(|x| x["p50_ms"].as_f64())
            .context("no end-to-end latency")?;
        let rust_host = rust["host_fraction"].as_f64().unwrap_or(f64::NAN);

        let python_chain = |extra: &[&str]| -> Result<(f64, f64)> {
            let out_json = project.join(format!("python-chain-{model}.json"));
            let script = ctx.root.join("xtask/scripts/chain_ort.py");
            let mut args = vec![
                script.display().to_string(),
                "--root".into(),
                project.display().to_string(),
                "--model".into(),
                model.into(),
            ];
            args.extend([
                "--iters".into(),
                iters.clone(),
                "--warmup".into(),
                warmup.clone(),
                "--out".into(),
                out_json.display().to_string(),
            ]);
            args.extend(extra.iter().map(|s| s.to_string()));
            duct::cmd(&python, &args)
                .stdout_null()
                .run()
                .context("the Python baseline chain failed")?;
            let py: serde_json::Value = serde_json::from_slice(&std::fs::read(&out_json)?)?;
            let samples = |key: &str| -> Vec<f64> {
                py[key]
                    .as_array()
                    .map(|a| a.iter().filter_map(|v| v.as_f64()).collect())
                    .unwrap_or_default()
            };
            let p50 = median(&samples("chain_ms"));
            Ok((p50, median(&samples("host_ms")) / p50))
        };
        let (py_p50, py_host) = python_chain(&[])?;
        let (py_nospin_p50, _) = python_chain(&["--no-spinning"])?;

        let alone = components_alone(ctx, &project, model, self.warmup, self.iters)?;
        crate::outln!(
            "chain on ORT CPU, model `{model}`, {} timed runs after {} warm-up (p50 / median):",
            self.iters,
            self.warmup
        );
        crate::outln!("  Rust chain (xtask run)        {rust_p50:>10.2} ms");
        crate::outln!(
            "  Python onnxruntime chain      {py_p50:>10.2} ms   Rust/Python = {:.3}   (ORT defaults)",
            rust_p50 / py_p50
        );
        crate::outln!(
            "  Python, spinning disabled     {py_nospin_p50:>10.2} ms   Rust/Python = {:.3}   (same session settings as Rust)",
            rust_p50 / py_nospin_p50
        );
        crate::outln!(
            "  host share of end-to-end      Rust {:.1}%   Python {:.1}%",
            rust_host * 100.0,
            py_host * 100.0
        );
        crate::outln!(
            "  sum of components run alone   {alone:>10.2} ms   chain/sum = {:.3}",
            rust_p50 / alone
        );
        Ok(Outcome::Success)
    }
}

/// Each component alone (only its session loaded), p50 over `iters`, summed over the calls a
/// chain makes (the action step once per timestep).
fn components_alone(
    ctx: &Ctx,
    project: &std::path::Path,
    model_name: &str,
    warmup: usize,
    iters: usize,
) -> Result<f64> {
    let rt = Runtime::load(ensure_runtime(&ctx.root)?)?;
    let model = load_model(project, model_name)?;
    let calls: BTreeMap<&str, usize> = match &model.file.host {
        Some(h) => model
            .components
            .iter()
            .map(|c| {
                (
                    c.name(),
                    if c.name() == h.action_step {
                        h.timesteps.len()
                    } else {
                        1
                    },
                )
            })
            .collect(),
        None => model.components.iter().map(|c| (c.name(), 1)).collect(),
    };
    let mut total = 0.0;
    for comp in &model.components {
        let golden = load_golden(project, comp)?;
        let mut session = rt.open(&project.join(&comp.file.component.onnx), &Backend::OrtCpu)?;
        let mut times = Vec::new();
        for i in 0..warmup + iters {
            let started = Instant::now();
            session.run(&golden.inputs)?;
            if i >= warmup {
                times.push(started.elapsed().as_secs_f64() * 1e3);
            }
        }
        total += median(&times) * calls[comp.name()] as f64;
    }
    Ok(total)
}
