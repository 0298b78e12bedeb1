//! `cargo xtask run` behind the CLI: the chain run `warmup + iters` times over its sessions,
//! every boundary of the first run judged by the model's chain gate (`[host.gate]`, the same
//! `parity::gate::Gate` as a component output's), latency and memory measured, and the report
//! written as `reports/<model>/run-<backend>.{json,md,html}`.

use super::boundaries::{expected_boundaries, feed_of, judge_boundaries, per_layer_cosine};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::pipeline::{ChainResult, Feed, load_host_inputs, run_chain, run_chain_fed};
use super::report::{BoundaryParity, LatencyStats, RunInputs, RunReport};
use super::report_files::write_run_report;
use super::sessions::{ChainSessions, ms};
use super::whatif;
use crate::recipe::{HostSection, Model};
use crate::runtime::bootstrap::ensure_runtime_rehashed;
use crate::runtime::{Backend, Runtime};

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
}

/// The `[host]` section of a model, or an error saying it has no chain.
pub fn host_section(model: &Model) -> Result<HostSection> {
    model.file.host.clone().with_context(|| {
        format!(
            "model `{}` has no [host] section in its model.toml: it has no chain to run",
            model.file.model.name
        )
    })
}

/// Runs the chain, writes its report under `reports/<model>/` and prints it; the report says
/// whether every gate passed.
pub fn run_and_report(
    root: &Path,
    model: &Model,
    backend: &Backend,
    opts: &RunOptions,
) -> Result<RunReport> {
    let host = host_section(model)?;
    if opts.iters == 0 {
        bail!("--iters must be at least 1");
    }
    let fp32 = whatif::check_fp32_names(model, &opts.fp32)?;
    if (!fp32.is_empty() || opts.attribute) && backend == &Backend::OrtCpu {
        bail!(
            "--fp32 and --attribute put components on ORT's CPU EP instead of a QNN backend: use --backend cpu or htp"
        );
    }
    let rt = Runtime::load(ensure_runtime_rehashed(root)?)?;
    if backend != &Backend::OrtCpu {
        crate::recipe::target::check_qairt(model, rt.qnn_build_version().as_deref())?;
    }
    let inputs = load_host_inputs(root, model, &host)?;
    let models = session_models(root, &rt, model, backend)?;
    let mut sessions = ChainSessions::new(&rt, model, backend.clone(), models, opts.streaming);
    // The fp32 reference sessions of the what-ifs: the --fp32 set, or every component.
    let mut cpu = (!fp32.is_empty() || opts.attribute).then(|| {
        let onnx = model
            .components
            .iter()
            .filter(|c| opts.attribute || fp32.contains(c.name()))
            .map(|c| (c.name().to_string(), root.join(&c.file.component.onnx)))
            .collect();
        ChainSessions::new(&rt, model, Backend::OrtCpu, onnx, opts.streaming)
    });
    let chains = opts.warmup + opts.iters;
    let mut progress =
        super::progress::ChainProgress::start(root, &model.file.model.name, backend.kind(), chains);
    if !opts.streaming {
        progress.component(0, "(loading the sessions)");
        sessions.load_all()?;
        cpu.as_mut().map(ChainSessions::load_all).transpose()?;
    }
    let mut first: Option<ChainResult> = None;
    let mut chain_ms = Vec::new();
    let mut memo = whatif::Memo::default();
    for i in 0..opts.warmup + opts.iters {
        sessions.recording = i >= opts.warmup;
        let started = Instant::now();
        let result = run_chain(&host, &inputs, &mut |name, ins| {
            progress.component(i, name);
            let t = Instant::now();
            let out = match i {
                // The first run's outputs are remembered for the untimed passes below.
                0 => memo.call(false, &mut sessions, cpu.as_mut(), &fp32, name, ins),
                _ => whatif::dispatch(&mut sessions, cpu.as_mut(), &fp32, name, ins),
            };
            progress.component_done(i, name, ms(t));
            out
        })?;
        progress.chain_done(i);
        if sessions.recording {
            chain_ms.push(ms(started));
        }
        first.get_or_insert(result);
    }
    let result = first.context("the chain did not run")?;
    let expected = expected_boundaries(model, &host, &inputs)?;
    let htp =
        matches!(backend, Backend::QnnHtp(_)).then(|| crate::runtime::probe::HtpKind::of(&rt));
    // Once more, each component on its golden inputs: untimed, its loads not counted.
    sessions.recording = false;
    let loads = sessions.load_ms.clone();
    let feed = feed_of(&expected);
    progress.golden_pass();
    let forced = run_chain_fed(&host, &inputs, Some(&feed), &mut |name, ins| {
        progress.component(chains, name);
        memo.call(true, &mut sessions, cpu.as_mut(), &fp32, name, ins)
    })?;
    progress.golden_pass_done();
    sessions.load_ms = loads;
    if let Some(cpu) = &cpu {
        merge_timings(&mut sessions, cpu);
    }
    let mut boundaries = judge_boundaries(backend.kind(), &host, &result, &expected);
    super::introduced::attach_golden_inputs(
        &mut boundaries,
        &forced,
        &|name| feed.get(name).cloned(),
        &host.gate.boundary_gate(backend.kind()),
    );
    let attribution = match (opts.attribute, cpu.as_mut()) {
        (true, Some(cpu)) => Some(attribute(
            &host,
            &inputs,
            model,
            &boundaries,
            &feed,
            &mut sessions,
            cpu,
            &fp32,
            &mut memo,
        )?),
        _ => None,
    };
    drop(progress);
    let report = RunReport::new(RunInputs {
        model: model.file.model.name.clone(),
        backend: backend.kind(),
        htp_emulated: htp.as_ref().map(|h| h.emulated),
        htp,
        mode: if opts.streaming {
            "streaming"
        } else {
            "resident"
        }
        .into(),
        versions: crate::report::ToolVersions::of(&rt)
            .with_provenance(root, &model.file.model.name),
        layout: super::layout::ChainLayout::of(model, &host, &inputs.denorm),
        iters: opts.iters,
        warmup: opts.warmup,
        boundaries,
        fp32: model
            .components
            .iter()
            .map(|c| c.name().to_string())
            .filter(|c| fp32.contains(c))
            .collect(),
        attribution,
        keys_per_layer_cosine: per_layer_cosine(&result.keys, inputs.trace.get("keys")),
        values_per_layer_cosine: per_layer_cosine(&result.values, inputs.trace.get("values")),
        actions_max_abs_gate: host.gate.actions_gate(backend.kind()),
        min_cosine_gate: host.gate.min_cosine,
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
        host_fraction: host_fraction(&chain_ms, &sessions),
        peak_rss_mb: peak_rss_mb(),
    });
    let dir = crate::project::reports_dir(root, &model.file.model.name);
    write_run_report(&dir, &report)?;
    crate::ui::json::offer(&report);
    report.print(&crate::project::rel(root, &dir));
    Ok(report)
}

/// Ranks the components by the normalized-actions error each removes when run in fp32.
#[allow(clippy::too_many_arguments)]
fn attribute<'a>(
    host: &HostSection,
    inputs: &super::pipeline::HostInputs,
    model: &Model,
    boundaries: &[BoundaryParity],
    feed: &Feed,
    sessions: &mut ChainSessions<'a>,
    cpu: &mut ChainSessions<'a>,
    fp32: &std::collections::BTreeSet<String>,
    memo: &mut whatif::Memo,
) -> Result<whatif::Attribution> {
    let ranked = whatif::RANKED_BOUNDARY;
    let base = boundaries
        .iter()
        .find(|b| b.name == ranked)
        .and_then(|b| b.metrics.clone())
        .with_context(|| format!("--attribute ranks by `{ranked}`, which was not compared"))?;
    let want = feed
        .get(ranked)
        .with_context(|| format!("--attribute: no golden `{ranked}`"))?;
    let names: Vec<String> = model.components.iter().map(|c| c.name().into()).collect();
    whatif::WhatIf {
        host,
        inputs,
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
        let comps: Vec<&crate::recipe::Component> = model.components.iter().collect();
        return crate::ctx_build::fresh::fresh_context_wrappers(root, rt, model, &comps)
            .context("cannot run the chain on the HTP");
    }
    let mut out = BTreeMap::new();
    for comp in &model.components {
        // QNN's CPU backend runs what the build converts: the rewritten copy, if any.
        let path = crate::rewritten::onnx_for(root, &model.file.model.name, comp, backend)?;
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

/// Peak resident memory of this process (getrusage), in MB.
pub fn peak_rss_mb() -> f64 {
    // SAFETY: getrusage fills the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}
