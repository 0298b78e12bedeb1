//! `cargo xtask run --backend ort|cpu|htp`: the whole chain end to end, as the robot runs it,
//! with chain parity (every boundary tensor against the golden) and latency, reported as
//! `reports/<model>/run-<backend>.{json,md,html}`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::{BackendArg, Ctx, Outcome, backend_for, require_files, select_components};
use crate::chain::pipeline::{ChainResult, load_host_inputs, run_chain};
use crate::chain::report::{BoundaryParity, LatencyStats, RunReport, write_run_report};
use crate::parity::metrics::compare;
use crate::recipe::{HostSection, Model, load_model};
use crate::runtime::bootstrap::ensure_runtime;
use crate::runtime::session::CheckedSession;
use crate::runtime::{Backend, Runtime};
use crate::tensor::Tensor;

#[derive(clap::Args)]
pub struct Run {
    #[arg(long, value_enum)]
    backend: BackendArg,
    #[arg(long, default_value = "tiny")]
    model: String,
    /// Timed chain runs.
    #[arg(long, default_value_t = 10)]
    iters: usize,
    /// Untimed chain runs before timing.
    #[arg(long, default_value_t = 2)]
    warmup: usize,
    /// Keep every session loaded (the device's mode; the default).
    #[arg(long, conflicts_with = "streaming")]
    resident: bool,
    /// Load one component at a time: memory bounded by the largest component.
    #[arg(long)]
    streaming: bool,
}

/// The sessions of a chain: all resident, or opened per call (streaming). Records timings.
struct ChainSessions<'a> {
    rt: &'a Runtime,
    model: &'a Model,
    backend: Backend,
    models: BTreeMap<String, PathBuf>,
    resident: BTreeMap<String, CheckedSession>,
    streaming: bool,
    recording: bool,
    load_ms: BTreeMap<String, Vec<f64>>,
    /// Session loads inside timed chains (streaming mode): not host work.
    timed_load_ms: f64,
    run_ms: BTreeMap<String, Vec<f64>>,
}

impl ChainSessions<'_> {
    fn open(&mut self, name: &str) -> Result<CheckedSession> {
        let path = self
            .models
            .get(name)
            .with_context(|| format!("no model file for component `{name}`"))?;
        let started = Instant::now();
        let session = self.rt.open(path, &self.backend)?;
        let took = ms(started);
        self.load_ms.entry(name.into()).or_default().push(took);
        if self.recording {
            self.timed_load_ms += took;
        }
        Ok(session)
    }

    fn load_all(&mut self) -> Result<()> {
        let names: Vec<String> = self.models.keys().cloned().collect();
        for name in names {
            let session = self.open(&name)?;
            self.resident.insert(name, session);
        }
        Ok(())
    }

    fn call(
        &mut self,
        name: &str,
        inputs: BTreeMap<String, Tensor>,
    ) -> Result<BTreeMap<String, Tensor>> {
        // On the HTP, `mask = true` inputs are clamped to fp16's range first, as on the device.
        let comp = self.model.components.iter().find(|c| c.name() == name);
        let inputs = match (&self.backend, comp) {
            (Backend::QnnHtp(_), Some(c)) => crate::fp16::clamp_masks(c, &inputs),
            _ => inputs,
        };
        let mut streamed = if self.streaming {
            Some(self.open(name)?)
        } else {
            None
        };
        let session = match streamed.as_mut() {
            Some(s) => s,
            None => self
                .resident
                .get_mut(name)
                .with_context(|| format!("component `{name}` is not loaded"))?,
        };
        let started = Instant::now();
        let out = session
            .run(&inputs)
            .with_context(|| format!("running `{name}`"))?;
        if self.recording {
            self.run_ms
                .entry(name.into())
                .or_default()
                .push(ms(started));
        }
        Ok(out)
    }
}

fn ms(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1e3
}

impl Run {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let model = load_model(&ctx.root, &self.model)?;
        let host = model.file.host.clone().with_context(|| {
            format!(
                "model `{}` has no [host] section in its model.toml: it has no chain to run",
                self.model
            )
        })?;
        let comps = select_components(&model, &[])?;
        require_files(ctx, &model, &comps)?;
        if self.iters == 0 {
            bail!("--iters must be at least 1");
        }
        let rt = Runtime::load(ensure_runtime(&ctx.root)?)?;
        let backend = backend_for(&model, self.backend);
        let inputs = load_host_inputs(&ctx.root, &model, &host)?;
        let mut sessions = ChainSessions {
            rt: &rt,
            model: &model,
            models: self.session_models(ctx, &rt, &model)?,
            backend: backend.clone(),
            resident: BTreeMap::new(),
            streaming: self.streaming,
            recording: false,
            load_ms: BTreeMap::new(),
            timed_load_ms: 0.0,
            run_ms: BTreeMap::new(),
        };
        if !self.streaming {
            sessions.load_all()?;
        }
        let mut first: Option<ChainResult> = None;
        let mut chain_ms = Vec::new();
        for i in 0..self.warmup + self.iters {
            sessions.recording = i >= self.warmup;
            let started = Instant::now();
            let result = run_chain(&host, &inputs, &mut |name, ins| sessions.call(name, ins))?;
            if sessions.recording {
                chain_ms.push(ms(started));
            }
            first.get_or_insert(result);
        }
        let result = first.context("the chain did not run")?;
        let report = self.build_report(
            ctx,
            &rt,
            &model,
            &host,
            &backend,
            &inputs.trace,
            &result,
            &sessions,
            chain_ms,
        )?;
        let dir = crate::project::reports_dir(&ctx.root, &self.model);
        write_run_report(&dir, &report)?;
        report.print(&crate::project::rel(&ctx.root, &dir));
        Ok(if report.pass {
            Outcome::Success
        } else {
            Outcome::GateFailed
        })
    }

    /// The file each component runs from: its ONNX, or on HTP its built context wrapper
    /// (refused when missing or stale).
    fn session_models(
        &self,
        ctx: &Ctx,
        rt: &Runtime,
        model: &Model,
    ) -> Result<BTreeMap<String, PathBuf>> {
        let mut out = BTreeMap::new();
        let mut problems = Vec::new();
        for comp in &model.components {
            let path = match self.backend {
                BackendArg::Htp => {
                    match crate::build::fresh::fresh_context_wrapper(&ctx.root, rt, model, comp) {
                        Ok(p) => p,
                        Err(e) => {
                            problems.push(format!("  {}: {e:#}", comp.name()));
                            continue;
                        }
                    }
                }
                _ => ctx.root.join(&comp.file.component.onnx),
            };
            out.insert(comp.name().to_string(), path);
        }
        if !problems.is_empty() {
            bail!("cannot run the chain on the HTP:\n{}", problems.join("\n"));
        }
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn build_report(
        &self,
        ctx: &Ctx,
        rt: &Runtime,
        model: &Model,
        host: &HostSection,
        backend: &Backend,
        trace: &BTreeMap<String, Tensor>,
        result: &ChainResult,
        sessions: &ChainSessions<'_>,
        chain_ms: Vec<f64>,
    ) -> Result<RunReport> {
        let expected = expected_boundaries(ctx, model, host, trace)?;
        let mut boundaries = Vec::new();
        for b in &result.boundaries {
            let want = expected.get(&b.name);
            boundaries.push(BoundaryParity::new(
                &b.name,
                &b.value,
                want,
                host.gate.min_cosine,
            ));
        }
        let per_layer = |got: &ndarray::ArrayD<f32>, key: &str| -> Vec<f64> {
            match trace.get(key) {
                Some(Tensor::F32(want)) if want.shape() == got.shape() => (0..got.shape()[0])
                    .map(|l| {
                        let g: Vec<f64> = got
                            .index_axis(ndarray::Axis(0), l)
                            .iter()
                            .map(|&v| f64::from(v))
                            .collect();
                        let w: Vec<f64> = want
                            .index_axis(ndarray::Axis(0), l)
                            .iter()
                            .map(|&v| f64::from(v))
                            .collect();
                        compare(&g, &w, 0.0, 0.0).cosine
                    })
                    .collect(),
                _ => Vec::new(),
            }
        };
        let actions_gate = host
            .gate
            .actions_max_abs
            .get(backend.label())
            .copied()
            .unwrap_or(1e-4);
        let run_total: f64 = chain_ms.iter().sum();
        let component_total: f64 = sessions.run_ms.values().flatten().sum();
        Ok(RunReport::new(crate::chain::report::RunInputs {
            model: self.model.clone(),
            backend: backend.label().into(),
            htp_emulated: matches!(backend, Backend::QnnHtp(_))
                .then(super::doctor::htp_is_emulated),
            mode: if self.streaming {
                "streaming"
            } else {
                "resident"
            }
            .into(),
            versions: crate::report::ToolVersions::of(rt),
            iters: self.iters,
            warmup: self.warmup,
            boundaries,
            keys_per_layer_cosine: per_layer(&result.keys, "keys"),
            values_per_layer_cosine: per_layer(&result.values, "values"),
            actions_max_abs_gate: actions_gate,
            latency: LatencyStats::per_component(
                &model
                    .components
                    .iter()
                    .map(|c| c.name())
                    .collect::<Vec<_>>(),
                &sessions.run_ms,
                &chain_ms,
            ),
            load_ms: sessions.load_ms.clone(),
            host_fraction: if run_total > 0.0 {
                (run_total - component_total - sessions.timed_load_ms) / run_total
            } else {
                0.0
            },
            peak_rss_mb: peak_rss_mb(),
        }))
    }
}

/// The golden value of every boundary the chain produces, from the component goldens and the
/// trace; boundaries without one are reported but not gated.
fn expected_boundaries(
    ctx: &Ctx,
    model: &Model,
    host: &HostSection,
    trace: &BTreeMap<String, Tensor>,
) -> Result<BTreeMap<String, ndarray::ArrayD<f32>>> {
    let mut out = BTreeMap::new();
    for comp in &model.components {
        let golden = crate::parity::component::load_golden(&ctx.root, comp)?;
        for (name, t) in &golden.expected {
            if let Tensor::F32(a) = t {
                out.insert(format!("{}/{name}", comp.name()), a.clone());
            }
        }
    }
    let f32_of = |k: &str| match trace.get(k) {
        Some(Tensor::F32(a)) => Some(a.clone()),
        _ => None,
    };
    if let Some(h) = f32_of("hidden_states") {
        out.insert("scatter/hidden_states".into(), h);
    }
    for (i, t) in host.timesteps.iter().enumerate() {
        if let Some(x) = f32_of(&format!("trajectory_step{i}_out")) {
            out.insert(format!("euler step {i} (t={t})/trajectory"), x);
        }
    }
    let last = host.timesteps.len() - 1;
    if let Some(x) = f32_of(&format!("trajectory_step{last}_out")) {
        out.insert(
            "normalized actions (before clipping)".into(),
            x.slice(ndarray::s![.., .., ..host.action_dim_used])
                .to_owned()
                .into_dyn(),
        );
    }
    if let Some(a) = f32_of("actions") {
        out.insert("actions".into(), a);
    }
    Ok(out)
}

/// Peak resident memory of this process (getrusage), in MB.
pub fn peak_rss_mb() -> f64 {
    // SAFETY: getrusage fills the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}
