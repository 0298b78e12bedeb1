//! The chain on this host: `cargo xtask run --backend B` without `--device`. Its components
//! run on sessions of the embedded runtime (`sessions`: ORT's CPU EP, QNN's CPU backend, or
//! the built HTP context wrappers), `warmup + iters` times, then once more on golden inputs;
//! the what-ifs (`--fp32`, `--attribute`) run chosen components on fp32 reference sessions.
//! Judging and reporting are `run::run_and_report`'s, as for a board.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::progress::ChainProgress;
use super::report::{LatencyStats, RunReport};
use super::run::{ChainRun, host_section, run_and_report};
use super::runner::{ChainRuns, ComponentRunner, Judged, Measured, Pass, Tensors};
use super::sessions::{ChainSessions, ms};
use super::whatif;
use xtask_base::vocab::BackendKind;
use xtask_recipe::recipe::Model;
use xtask_runtime::runtime::bootstrap::ensure_runtime_rehashed;
use xtask_runtime::runtime::probe::HtpKind;
use xtask_runtime::runtime::{Backend, Runtime};

/// How to run the chain (the CLI's options).
pub struct RunOptions {
    /// Timed chain runs (at least 1).
    pub iters: usize,
    /// Untimed chain runs before timing.
    pub warmup: usize,
    /// Load one component at a time instead of keeping every session resident.
    pub streaming: bool,
    /// Components run on ORT's CPU EP in fp32 instead of the backend (what-if).
    pub fp32: Vec<String>,
    /// Rerun the chain once per component with only it in fp32 and rank them.
    pub attribute: bool,
    /// Write no report file (`--no-report`).
    pub no_report: bool,
}

/// Runs the chain on this host, writes its report under `reports/<model>/` and prints it.
pub fn run_on_host(
    root: &Path,
    model: &Model,
    backend: &Backend,
    opts: &RunOptions,
) -> Result<RunReport> {
    host_section(model)?;
    let fp32 = check_options(model, backend, opts)?;
    let per_chain = ChainProgress::announce(
        root,
        &model.file.model.name,
        backend.kind(),
        opts.warmup + opts.iters,
    );
    let rt = Runtime::load(ensure_runtime_rehashed(root)?)?;
    if backend != &Backend::OrtCpu {
        xtask_recipe::recipe::target::check_qairt(model, rt.qnn_build_version().as_deref())?;
    }
    let mut chain = ChainRun::prepare(root, model, &rt, opts.iters, opts.warmup)?;
    chain.write_report = !opts.no_report;
    let mut runner = OnHost::start(root, &rt, model, backend, opts, fp32, per_chain)?;
    run_and_report(&chain, &mut runner)
}

/// Refuses options that cannot run; returns the `--fp32` set.
fn check_options(model: &Model, backend: &Backend, opts: &RunOptions) -> Result<BTreeSet<String>> {
    if opts.iters == 0 {
        bail!("--iters must be at least 1");
    }
    let fp32 = whatif::check_fp32_names(model, &opts.fp32)?;
    if (!fp32.is_empty() || opts.attribute) && backend == &Backend::OrtCpu {
        bail!(
            "--fp32 and --attribute put components on ORT's CPU EP instead of a QNN backend: use --backend cpu or htp"
        );
    }
    Ok(fp32)
}

/// The host's sessions, what-if sessions and progress, as a chain's component runner.
struct OnHost<'a> {
    model: &'a Model,
    backend: BackendKind,
    opts: &'a RunOptions,
    sessions: ChainSessions<'a>,
    /// The fp32 reference sessions of the what-ifs: the `--fp32` set, or every component.
    fp32_sessions: Option<ChainSessions<'a>>,
    fp32: BTreeSet<String>,
    memo: whatif::Memo,
    progress: Option<ChainProgress>,
    htp: Option<HtpKind>,
    /// Session loads before the golden-inputs pass (that pass's loads are not counted).
    loads_before_golden: BTreeMap<String, Vec<f64>>,
}

impl<'a> OnHost<'a> {
    /// Opens the sessions (all of them now unless streaming) with the progress started.
    fn start(
        root: &Path,
        rt: &'a Runtime,
        model: &'a Model,
        backend: &Backend,
        opts: &'a RunOptions,
        fp32: BTreeSet<String>,
        per_chain: Option<f64>,
    ) -> Result<Self> {
        let models = session_models(root, rt, model, backend)?;
        let mut sessions = ChainSessions::new(rt, model, backend.clone(), models, opts.streaming);
        if backend == &Backend::QnnCpu {
            for comp in model
                .components
                .iter()
                .filter(|c| c.precision().is_quantized())
            {
                sessions = sessions.with_backend_for(comp.name(), Backend::OrtCpu);
            }
        }
        let mut fp32_sessions = (!fp32.is_empty() || opts.attribute).then(|| {
            let keep = |name: &str| opts.attribute || fp32.contains(name);
            ChainSessions::fp32_on_cpu(rt, model, root, keep, opts.streaming)
        });
        let chains = opts.warmup + opts.iters;
        let progress = ChainProgress::start(per_chain, backend.kind(), chains);
        if !opts.streaming {
            progress.component(0, "(loading the sessions)");
            sessions.load_all()?;
            fp32_sessions
                .as_mut()
                .map(ChainSessions::load_all)
                .transpose()?;
        }
        Ok(OnHost {
            model,
            backend: backend.kind(),
            opts,
            sessions,
            fp32_sessions,
            fp32,
            memo: whatif::Memo::default(),
            progress: Some(progress),
            htp: matches!(backend, Backend::QnnHtp(_)).then(|| HtpKind::of(rt)),
            loads_before_golden: BTreeMap::new(),
        })
    }

    fn progress(&self, f: impl FnOnce(&ChainProgress)) {
        if let Some(p) = &self.progress {
            f(p);
        }
    }
}

impl ComponentRunner for OnHost<'_> {
    fn backend(&self) -> BackendKind {
        self.backend
    }

    fn chain_runs(&self) -> ChainRuns {
        ChainRuns {
            warmup: self.opts.warmup,
            timed: self.opts.iters,
        }
    }

    fn golden_inputs_pass(&self) -> bool {
        true
    }

    fn call(&mut self, pass: Pass, name: &str, inputs: &Tensors) -> Result<Tensors> {
        let index = match pass {
            Pass::Chain { index, .. } => index,
            // The progress names the pass after the last chain the golden-inputs pass.
            Pass::GoldenInputs => self.opts.warmup + self.opts.iters,
        };
        let progress = self.progress.as_ref();
        let (sessions, cpu, fp32) = (&mut self.sessions, self.fp32_sessions.as_mut(), &self.fp32);
        if let Some(p) = progress {
            p.component(index, name);
        }
        let t = Instant::now();
        let out = match pass {
            // The first run's outputs are remembered for the untimed passes after it.
            Pass::Chain { index: 0, .. } => {
                self.memo.call(false, sessions, cpu, fp32, name, inputs)
            }
            Pass::Chain { .. } => whatif::dispatch(sessions, cpu, fp32, name, inputs),
            Pass::GoldenInputs => return self.memo.call(true, sessions, cpu, fp32, name, inputs),
        };
        if let Some(p) = progress {
            p.component_done(index, name, ms(t));
        }
        out
    }

    fn starting(&mut self, pass: Pass) {
        match pass {
            Pass::Chain { timed, .. } => self.sessions.recording = timed,
            Pass::GoldenInputs => {
                self.sessions.recording = false;
                self.loads_before_golden = self.sessions.load_ms.clone();
                self.progress(ChainProgress::golden_pass);
            }
        }
    }

    fn done(&mut self, pass: Pass) {
        match pass {
            Pass::Chain { index, .. } => {
                if let Some(p) = self.progress.as_mut() {
                    p.chain_done(index);
                }
            }
            Pass::GoldenInputs => {
                self.progress(ChainProgress::golden_pass_done);
                self.sessions.load_ms = std::mem::take(&mut self.loads_before_golden);
                if let Some(cpu) = &self.fp32_sessions {
                    merge_timings(&mut self.sessions, cpu);
                }
            }
        }
    }

    fn attribute(&mut self, judged: &Judged<'_>) -> Result<Option<whatif::Attribution>> {
        match (self.opts.attribute, self.fp32_sessions.as_mut()) {
            (true, Some(cpu)) => Ok(Some(attribute(
                judged,
                &mut self.sessions,
                cpu,
                &self.fp32,
                &mut self.memo,
            )?)),
            _ => Ok(None),
        }
    }

    fn finish(&mut self, chain_ms: &[f64]) -> Measured {
        // The progress ends before the report is printed.
        self.progress = None;
        let order: Vec<&str> = self.model.components.iter().map(|c| c.name()).collect();
        Measured {
            mode: if self.opts.streaming {
                "streaming"
            } else {
                "resident"
            }
            .into(),
            htp: self.htp.clone(),
            fp32: order
                .iter()
                .filter(|c| self.fp32.contains(**c))
                .map(|c| c.to_string())
                .collect(),
            latency: LatencyStats::per_component(&order, &self.sessions.run_ms, chain_ms),
            load_ms: self.sessions.load_ms.clone(),
            host_fraction: host_fraction(chain_ms, &self.sessions),
            device: None,
        }
    }
}

/// Ranks the components by the normalized-actions error each removes when run in fp32 (`run
/// --attribute`, and the precision search's attribution of a chain over its budget).
pub fn attribute<'a>(
    judged: &Judged<'_>,
    sessions: &mut ChainSessions<'a>,
    cpu: &mut ChainSessions<'a>,
    fp32: &BTreeSet<String>,
    memo: &mut whatif::Memo,
) -> Result<whatif::Attribution> {
    let ranked = whatif::RANKED_BOUNDARY;
    let base = judged
        .boundaries
        .iter()
        .find(|b| b.name == ranked)
        .and_then(|b| b.metrics.clone())
        .with_context(|| format!("the attribution ranks by `{ranked}`, which was not compared"))?;
    let want = judged
        .feed
        .get(ranked)
        .with_context(|| format!("the attribution: no golden `{ranked}`"))?;
    let names: Vec<String> = judged
        .model
        .components
        .iter()
        .map(|c| c.name().into())
        .collect();
    whatif::WhatIf {
        host: judged.host,
        inputs: judged.inputs,
        backend: sessions,
        fp32_sessions: cpu,
        fp32,
        memo,
    }
    .attribute(&names, &base, want)
}

/// The fp32 sessions' timings counted with the backend's (latency is per component).
fn merge_timings(sessions: &mut ChainSessions<'_>, cpu: &ChainSessions<'_>) {
    for (name, v) in &cpu.run_ms {
        sessions.run_ms.entry(name.clone()).or_default().extend(v);
    }
    for (name, v) in &cpu.load_ms {
        sessions.load_ms.entry(name.clone()).or_default().extend(v);
    }
    sessions.timed_load_ms += cpu.timed_load_ms;
}

/// The file each component runs from: its ONNX, or on HTP its built context wrapper
/// (refused when missing or stale).
fn session_models(
    root: &Path,
    rt: &Runtime,
    model: &Model,
    backend: &Backend,
) -> Result<BTreeMap<String, PathBuf>> {
    if let Backend::QnnHtp(_) = backend {
        let comps: Vec<&xtask_recipe::recipe::Component> = model.components.iter().collect();
        return xtask_ctx_build::fresh::fresh_context_wrappers(root, rt, model, &comps)
            .context("cannot run the chain on the HTP");
    }
    let mut out = BTreeMap::new();
    for comp in &model.components {
        if backend == &Backend::QnnCpu && comp.precision().is_quantized() {
            out.insert(
                comp.name().to_string(),
                xtask_ctx_build::fresh::fresh_qdq_model(root, rt, model, comp)?,
            );
            continue;
        }
        // QNN's CPU backend runs what the build converts: the rewritten copy, if any.
        let path = xtask_parity::rewritten::onnx_for(root, &model.file.model.name, comp, backend)?;
        out.insert(comp.name().to_string(), path);
    }
    Ok(out)
}

/// Share of the timed end-to-end time spent outside model runs and session loads.
fn host_fraction(chain_ms: &[f64], sessions: &ChainSessions<'_>) -> f64 {
    let run_total: f64 = chain_ms.iter().sum();
    let component_total: f64 = sessions.run_ms.values().flatten().sum();
    if run_total > 0.0 {
        (run_total - component_total - sessions.timed_load_ms) / run_total
    } else {
        0.0
    }
}
