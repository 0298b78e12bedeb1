//! `cargo xtask run` behind the CLI, the one chain runner: the chain run as its runner says
//! (`runner::ComponentRunner`: this host's sessions or a board), every boundary of the first
//! run judged by the model's chain gate (`[host.gate]`, the same `parity::gate::Gate` as a
//! component output's), the actions by the gate of the backend's type, and the report written
//! as `reports/<model>/<stem>.{json,md,html}` (`RunReport::stem`).

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};

use super::boundaries::{
    Reference, expected_boundaries, feed_of, judge_boundaries, per_layer_cosine,
};
use super::pipeline::{ChainResult, Feed, HostInputs, load_host_inputs, run_chain, run_chain_fed};
use super::report::{BoundaryParity, RunInputs, RunReport};
use super::report_files::write_run_report;
use super::runner::{ComponentRunner, Judged, Measured, Pass};
use super::sessions::ms;
use super::whatif::Attribution;
use xtask_base::vocab::BackendKind;
use xtask_recipe::recipe::{HostSection, Model};
use xtask_runtime::report::ToolVersions;
use xtask_runtime::runtime::Runtime;

/// The `[host]` section of a model, or an error saying it has no chain.
pub fn host_section(model: &Model) -> Result<HostSection> {
    model.file.host.clone().with_context(|| {
        format!(
            "model `{}` has no [host] section in its model.toml: it has no chain to run",
            model.file.model.name
        )
    })
}

/// The chain to run and what its report says about the run.
pub struct ChainRun<'a> {
    pub root: &'a Path,
    pub model: &'a Model,
    pub host: HostSection,
    pub inputs: HostInputs,
    /// `--iters` and `--warmup` as the report gives them (chains on this host, inferences per
    /// call on a board).
    pub iters: usize,
    pub warmup: usize,
    pub versions: ToolVersions,
    /// False under `--no-report`: the run is printed, no report file is written.
    pub write_report: bool,
}

impl<'a> ChainRun<'a> {
    /// Reads the chain's inputs (the vision input, the trace, every component's golden).
    pub fn prepare(
        root: &'a Path,
        model: &'a Model,
        rt: &Runtime,
        iters: usize,
        warmup: usize,
    ) -> Result<Self> {
        let host = host_section(model)?;
        let inputs = load_host_inputs(root, model, &host)?;
        Ok(ChainRun {
            root,
            model,
            host,
            inputs,
            iters,
            warmup,
            versions: ToolVersions::of(rt).with_provenance(root, &model.file.model.name),
            write_report: true,
        })
    }
}

/// Runs the chain through `runner`, judges it, writes its report under `reports/<model>/` and
/// prints it; the report says whether every gate passed.
pub fn run_and_report(chain: &ChainRun<'_>, runner: &mut dyn ComponentRunner) -> Result<RunReport> {
    xtask_base::ui::interrupt::keeps(&format!(
        "reports/{}/run-*.* as they were (a run writes its report at its end)",
        chain.model.file.model.name
    ));
    let report = run_judged(chain, runner)?;
    publish(chain.root, &report, chain.write_report)?;
    Ok(report)
}

/// Runs the chain through `runner` and judges it, writing nothing (the precision search
/// keeps its configurations' runs in its own report).
pub fn run_judged(chain: &ChainRun<'_>, runner: &mut dyn ComponentRunner) -> Result<RunReport> {
    let backend = runner.backend();
    let (first, chain_ms) = run_chains(chain, runner)?;
    let expected = expected_boundaries(chain.model, &chain.host, &chain.inputs)?;
    let feed = feed_of(&expected);
    let forced = golden_inputs_pass(chain, runner, &feed)?;
    let boundaries = judge(chain, backend, &first, &expected, forced.as_ref(), &feed);
    let attribution = runner.attribute(&Judged {
        model: chain.model,
        host: &chain.host,
        inputs: &chain.inputs,
        boundaries: &boundaries,
        feed: &feed,
    })?;
    let measured = runner.finish(&chain_ms);
    let mut report = RunReport::new(run_inputs(
        chain,
        backend,
        &first,
        boundaries,
        attribution,
        measured,
    ));
    report.next_steps = super::next_steps::next_steps(chain.model, &chain.host, &report);
    Ok(report)
}

/// The warm-up and timed chains; returns the first chain's result (the one judged) and the
/// timed chains' wall times in ms.
fn run_chains(
    chain: &ChainRun<'_>,
    runner: &mut dyn ComponentRunner,
) -> Result<(ChainResult, Vec<f64>)> {
    let runs = runner.chain_runs();
    let mut first: Option<ChainResult> = None;
    let mut chain_ms = Vec::new();
    for index in 0..runs.warmup + runs.timed {
        let pass = Pass::Chain {
            index,
            timed: index >= runs.warmup,
        };
        runner.starting(pass);
        let started = Instant::now();
        let result = run_chain(&chain.host, &chain.inputs, &mut |name, ins| {
            runner.call(pass, name, ins)
        })?;
        runner.done(pass);
        if index >= runs.warmup {
            chain_ms.push(ms(started));
        }
        first.get_or_insert(result);
    }
    Ok((first.context("the chain did not run")?, chain_ms))
}

/// Once more, each component on its golden inputs (untimed), when the runner does that pass.
fn golden_inputs_pass(
    chain: &ChainRun<'_>,
    runner: &mut dyn ComponentRunner,
    feed: &Feed,
) -> Result<Option<ChainResult>> {
    if !runner.golden_inputs_pass() {
        return Ok(None);
    }
    runner.starting(Pass::GoldenInputs);
    let forced = run_chain_fed(&chain.host, &chain.inputs, Some(feed), &mut |name, ins| {
        runner.call(Pass::GoldenInputs, name, ins)
    })?;
    runner.done(Pass::GoldenInputs);
    Ok(Some(forced))
}

/// Every boundary of the first chain against its golden, by the chain gate of `backend`; with
/// the teacher-forced pass, each beside its golden-inputs measurement.
fn judge(
    chain: &ChainRun<'_>,
    backend: BackendKind,
    first: &ChainResult,
    expected: &std::collections::BTreeMap<String, Reference>,
    forced: Option<&ChainResult>,
    feed: &Feed,
) -> Vec<BoundaryParity> {
    let mut boundaries = judge_boundaries(backend, chain.model, &chain.host, first, expected);
    if let Some(forced) = forced {
        super::introduced::attach_golden_inputs(&mut boundaries, forced, &|name| {
            feed.get(name).cloned()
        });
    }
    boundaries
}

/// What the run measured, with the gates it is judged by: the actions' from the recipe's gate
/// type for `backend` only.
fn run_inputs(
    chain: &ChainRun<'_>,
    backend: BackendKind,
    first: &ChainResult,
    boundaries: Vec<BoundaryParity>,
    attribution: Option<Attribution>,
    measured: Measured,
) -> RunInputs {
    let (host, trace) = (&chain.host, &chain.inputs.trace);
    RunInputs {
        model: chain.model.file.model.name.clone(),
        backend,
        htp_emulated: measured.htp.as_ref().map(|h| h.emulated),
        htp: measured.htp,
        mode: measured.mode,
        versions: chain.versions.clone(),
        layout: super::layout::ChainLayout::of(chain.model, host, &chain.inputs.denorm),
        iters: chain.iters,
        warmup: chain.warmup,
        boundaries,
        fp32: measured.fp32,
        precisions: chain
            .model
            .components
            .iter()
            .filter(|c| c.precision().is_quantized())
            .map(|c| (c.name().to_string(), c.precision()))
            .collect(),
        attribution,
        keys_per_layer_cosine: per_layer_cosine(&first.keys, trace.get("keys")),
        values_per_layer_cosine: per_layer_cosine(&first.values, trace.get("values")),
        actions_max_abs_gate: host.gate.actions_gate(backend),
        min_cosine_gate: host.gate.min_cosine,
        latency: measured.latency,
        load_ms: measured.load_ms,
        host_fraction: measured.host_fraction,
        peak_rss_mb: peak_rss_mb(),
        device: measured.device,
    }
}

/// Writes the report's files (unless `--no-report`), hands it to `--json` and prints it.
fn publish(root: &Path, report: &RunReport, write: bool) -> Result<()> {
    let dir = xtask_base::project::reports_dir(root, &report.run.model);
    if write {
        write_run_report(&dir, report)?;
    }
    xtask_base::ui::json::offer(report);
    let shown = xtask_base::project::rel(root, &dir);
    report.print(write.then_some(shown.as_str()));
    Ok(())
}

/// Peak resident memory of this process (getrusage), in MB.
pub fn peak_rss_mb() -> f64 {
    // SAFETY: getrusage fills the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}
