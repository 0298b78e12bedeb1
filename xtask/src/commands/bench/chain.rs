//! `cargo xtask bench chain [--full-width]`: the Rust chain on ORT's CPU EP against a plain
//! Python onnxruntime chain on the same ONNX files (`xtask/scripts/chain_ort.py`, the same
//! pinned ORT library), the host share of each, and the chain against the sum of its
//! components measured alone.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{Context, Result};

use super::super::{Ctx, Outcome};
use super::{full_width_project, median, python_env, tiny_project, xtask_in};
use xtask_parity::parity::component::load_golden;
use xtask_recipe::recipe::load_model;
use xtask_runtime::runtime::bootstrap::ensure_runtime;
use xtask_runtime::runtime::{Backend, Runtime};

#[derive(clap::Args)]
pub struct BenchChain {
    /// Use the full-width synthetic model (real tensor sizes; generated once, ~2 GB).
    #[arg(long)]
    full_width: bool,
    /// Timed chain runs.
    #[arg(long, default_value_t = 20)]
    iters: usize,
    /// Untimed chain runs before timing.
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// Interleaved rounds of Rust, Python and Python-without-spinning; ratios are per round,
    /// then the median is reported (a shared 2-core machine drifts by 10-20% between minutes).
    #[arg(long, default_value_t = 1)]
    rounds: usize,
}

impl BenchChain {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let (project, model) = if self.full_width {
            (full_width_project(&ctx.root)?, "fullwidth")
        } else {
            (tiny_project(&ctx.root, "chain/tiny")?, "tiny")
        };
        let python = python_env(&ctx.root)?;
        let timing = Timing {
            iters: self.iters,
            warmup: self.warmup,
        };

        // Rounds interleave the three chains so that a slow minute of a shared machine falls
        // on all of them, not on whichever ran then; the ratio is taken per round.
        let mut rounds = Vec::new();
        for round in 1..=self.rounds.max(1) {
            let rust = rust_chain(&project, model, &timing)?;
            let py = python_chain(ctx, &python, &project, model, &timing, &[])?;
            let py_nospin =
                python_chain(ctx, &python, &project, model, &timing, &["--no-spinning"])?;
            if self.rounds > 1 {
                xtask_base::outln!(
                    "  round {round}: Rust {:.2} ms, Python {:.2} ms ({:.3}), Python no-spin {:.2} ms ({:.3})",
                    rust.p50_ms,
                    py.p50_ms,
                    rust.p50_ms / py.p50_ms,
                    py_nospin.p50_ms,
                    rust.p50_ms / py_nospin.p50_ms
                );
            }
            rounds.push((rust, py, py_nospin));
        }
        let med = |f: &dyn Fn(&(ChainTime, ChainTime, ChainTime)) -> f64| {
            median(&rounds.iter().map(f).collect::<Vec<_>>())
        };
        let rust_p50 = med(&|r| r.0.p50_ms);
        let py_p50 = med(&|r| r.1.p50_ms);
        let py_nospin_p50 = med(&|r| r.2.p50_ms);
        let ratio_py = med(&|r| r.0.p50_ms / r.1.p50_ms);
        let ratio_nospin = med(&|r| r.0.p50_ms / r.2.p50_ms);
        let rust_host = med(&|r| r.0.host_fraction);
        let py_host = med(&|r| r.1.host_fraction);

        let alone = components_alone(ctx, &project, model, self.warmup, self.iters)?;
        xtask_base::outln!(
            "chain on ORT CPU, model `{model}`, {} round(s) of {} timed runs after {} warm-up (p50, median over rounds):",
            rounds.len(),
            self.iters,
            self.warmup
        );
        xtask_base::outln!("  Rust chain (xtask run)        {rust_p50:>10.2} ms");
        xtask_base::outln!(
            "  Python onnxruntime chain      {py_p50:>10.2} ms   Rust/Python = {ratio_py:.3}   (ORT defaults)"
        );
        xtask_base::outln!(
            "  Python, spinning disabled     {py_nospin_p50:>10.2} ms   Rust/Python = {ratio_nospin:.3}   (same session settings as Rust)"
        );
        xtask_base::outln!(
            "  host share of end-to-end      Rust {:.1}%   Python {:.1}%",
            rust_host * 100.0,
            py_host * 100.0
        );
        xtask_base::outln!(
            "  sum of components run alone   {alone:>10.2} ms   chain/sum = {:.3}",
            rust_p50 / alone
        );
        Ok(Outcome::Success)
    }
}

struct Timing {
    iters: usize,
    warmup: usize,
}

/// One chain's p50 end-to-end latency and the share of it spent on the host.
struct ChainTime {
    p50_ms: f64,
    host_fraction: f64,
}

/// `xtask run --backend ort` in the project, read back from its JSON report.
fn rust_chain(project: &std::path::Path, model: &str, timing: &Timing) -> Result<ChainTime> {
    let (iters, warmup) = (timing.iters.to_string(), timing.warmup.to_string());
    xtask_in(
        project,
        &[
            "run",
            "--backend",
            xtask_base::vocab::BackendKind::Ort.label(),
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
    let p50_ms = rust["latency"]
        .as_array()
        .and_then(|l| l.iter().find(|x| x["name"] == "end-to-end"))
        .and_then(|x| x["p50_ms"].as_f64())
        .context("no end-to-end latency")?;
    Ok(ChainTime {
        p50_ms,
        host_fraction: rust["host_fraction"].as_f64().unwrap_or(f64::NAN),
    })
}

/// The plain Python onnxruntime chain (`xtask/scripts/chain_ort.py`) on the same ONNX files.
fn python_chain(
    ctx: &Ctx,
    python: &std::path::Path,
    project: &std::path::Path,
    model: &str,
    timing: &Timing,
    extra: &[&str],
) -> Result<ChainTime> {
    let out_json = project.join(format!("python-chain-{model}.json"));
    let script = ctx.root.join("xtask/scripts/chain_ort.py");
    let mut args = vec![
        script.display().to_string(),
        "--root".into(),
        project.display().to_string(),
        "--model".into(),
        model.into(),
        "--iters".into(),
        timing.iters.to_string(),
        "--warmup".into(),
        timing.warmup.to_string(),
        "--out".into(),
        out_json.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    duct::cmd(python, &args)
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
    let p50_ms = median(&samples("chain_ms"));
    Ok(ChainTime {
        p50_ms,
        host_fraction: median(&samples("host_ms")) / p50_ms,
    })
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
