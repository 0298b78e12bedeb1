//! `run --backend htp --device ssh://…`: the chain orchestrated from this host, each component
//! call run on the device (`Device::run_component`: one profiled `qnn-net-run` per call, its
//! `warmup + iters` inferences inside), the host steps (scatter, the Euler loop,
//! de-normalisation) on this host. The chain, its judgement and its verdict are
//! `chain::run::run_and_report`'s, as for every backend: `OnBoard` only calls components and
//! adds the device's figures (`figures::DeviceFigures`). Report:
//! `reports/<model>/run-htp-device.{json,md,html}`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::Device;
use crate::chain::device_figures::{DeviceComponentTimes, DeviceFigures};
use crate::chain::report::RunReport;
use crate::chain::run::{ChainRun, run_and_report};
use crate::chain::runner::{ChainRuns, ComponentRunner, Measured, Pass, Tensors};
use xtask_base::vocab::BackendKind;
use xtask_ctx_build::toolchain::sdk::profile::TIMING_SOURCE;
use xtask_recipe::recipe::Model;
use xtask_runtime::report::latency::ExecuteStats;
use xtask_runtime::runtime::Runtime;

/// `run --device`: connects, checks the board can run this model, runs the chain there and
/// reports it.
pub fn connect_and_run(
    root: &Path,
    model: &Model,
    url: &str,
    iters: usize,
    warmup: usize,
) -> Result<RunReport> {
    if iters == 0 {
        bail!("--iters must be at least 1");
    }
    let rt = Runtime::load(xtask_runtime::runtime::bootstrap::ensure_runtime(root)?)?;
    let device = Device::connect(url, xtask_recipe::htp_target::target_soc(model, None)?)?;
    device.require_runnable(&model.file.target.qairt)?;
    let chain = ChainRun::prepare(root, model, &rt, iters, warmup)?;
    let mut runner = OnBoard::new(root, &rt, model, &device, iters, warmup)?;
    xtask_base::outln!("chain on the device {}:", device.info.label());
    run_and_report(&chain, &mut runner)
}

/// A board as a chain's component runner: one chain, each call one `qnn-net-run` there.
struct OnBoard<'a> {
    root: &'a Path,
    model: &'a Model,
    device: &'a Device,
    /// Each component's context binary on this host (fresh: checked before the chain).
    bins: BTreeMap<String, PathBuf>,
    iters: usize,
    warmup: usize,
    /// Calls per component so far (the chain runs once: calls per chain).
    calls: BTreeMap<String, usize>,
    /// Every timed inference's device execute time per component, µs.
    samples_us: BTreeMap<String, Vec<f64>>,
}

impl<'a> OnBoard<'a> {
    /// Refuses missing or stale context binaries before anything runs.
    fn new(
        root: &'a Path,
        rt: &Runtime,
        model: &'a Model,
        device: &'a Device,
        iters: usize,
        warmup: usize,
    ) -> Result<Self> {
        let soc = xtask_recipe::htp_target::target_soc(model, None)?;
        let comps: Vec<&xtask_recipe::recipe::Component> = model.components.iter().collect();
        xtask_ctx_build::fresh::fresh_context_wrappers(root, rt, model, &comps)
            .context("cannot run the chain on the device")?;
        let bins = model
            .components
            .iter()
            .map(|c| {
                let art = xtask_ctx_build::plan::artifacts(&model.file.model.name, c.name(), &soc);
                (c.name().to_string(), root.join(art.bin))
            })
            .collect();
        Ok(OnBoard {
            root,
            model,
            device,
            bins,
            iters,
            warmup,
            calls: BTreeMap::new(),
            samples_us: BTreeMap::new(),
        })
    }

    /// Per component in chain order: its calls and device execute times.
    fn component_times(&self) -> Vec<DeviceComponentTimes> {
        self.model
            .components
            .iter()
            .filter_map(|c| {
                let samples = self.samples_us.get(c.name())?;
                let execute = ExecuteStats::of(TIMING_SOURCE, samples);
                let calls = self.calls.get(c.name()).copied().unwrap_or(0);
                Some(DeviceComponentTimes {
                    component: c.name().into(),
                    calls_per_chain: calls,
                    per_chain_us: calls as f64 * execute.p50_us,
                    execute,
                })
            })
            .collect()
    }
}

impl ComponentRunner for OnBoard<'_> {
    fn backend(&self) -> BackendKind {
        BackendKind::Htp
    }

    /// One chain: the repetitions are the inferences inside each `qnn-net-run` call.
    fn chain_runs(&self) -> ChainRuns {
        ChainRuns {
            warmup: 0,
            timed: 1,
        }
    }

    /// Not on a board: it would be every call again over ssh, for a figure the host's HTP
    /// run already gives.
    fn golden_inputs_pass(&self) -> bool {
        false
    }

    fn call(&mut self, _pass: Pass, name: &str, inputs: &Tensors) -> Result<Tensors> {
        let comp = self
            .model
            .components
            .iter()
            .find(|c| c.name() == name)
            .with_context(|| format!("no component `{name}`"))?;
        // As on every HTP run: `mask = true` inputs clamped to fp16's range first.
        let inputs = xtask_recipe::fp16::clamp_masks(comp, inputs);
        let n = self.calls.entry(name.to_string()).or_default();
        *n += 1;
        let log = xtask_ctx_build::toolchain::sdk::steps::log_path(
            self.root,
            &self.model.file.model.name,
            name,
            &format!("device-run-{n}"),
        );
        let bin = self
            .bins
            .get(name)
            .with_context(|| format!("no context binary for `{name}`"))?;
        let run = self
            .device
            .run_component(comp, bin, &inputs, self.warmup, self.iters, &log)?;
        xtask_base::outln!(
            "  {name:<16} device execute p50 {:>10.1} µs ({} samples)",
            run.stats.p50_us,
            run.stats.samples
        );
        self.samples_us
            .entry(name.to_string())
            .or_default()
            .extend(run.samples_us);
        Ok(run.outputs)
    }

    /// The device's figures only: this host's wall-clock times of the calls would be ssh
    /// copies more than execution, so none are reported as latency.
    fn finish(&mut self, _chain_ms: &[f64]) -> Measured {
        Measured {
            mode: "device".into(),
            htp: None,
            fp32: Vec::new(),
            latency: Vec::new(),
            load_ms: BTreeMap::new(),
            host_fraction: f64::NAN,
            device: Some(DeviceFigures::new(
                &self.device.info,
                self.component_times(),
                self.device.uploads(),
            )),
        }
    }
}
