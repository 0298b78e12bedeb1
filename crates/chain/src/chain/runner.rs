//! Where a chain's components run. `run::run_and_report` is the one chain runner: it runs the
//! chain (`pipeline::run_chain`), judges every boundary (`boundaries::judge_boundaries`), takes
//! the actions' gate from the recipe's gate type and concludes pass or fail (`RunReport::new`)
//! for every backend and place alike. A `ComponentRunner` only calls components (this host's
//! sessions, `chain::host`; a board over ssh, `device::chain`) and says what it measured doing
//! so; it has no gate and no verdict of its own.

use std::collections::BTreeMap;

use anyhow::Result;

use super::pipeline::{Feed, HostInputs};
use super::report::{BoundaryParity, LatencyStats};
use super::whatif::Attribution;
use crate::chain::device_figures::DeviceFigures;
use xtask_base::vocab::BackendKind;
use xtask_onnx::tensor::Tensor;
use xtask_recipe::recipe::{HostSection, Model};
use xtask_runtime::runtime::probe::HtpKind;

/// Named tensors in and out of a component.
pub type Tensors = BTreeMap<String, Tensor>;

/// Which pass over the chain a component call belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// Chain run `index` (0-based, warm-up first); `timed` once the warm-up is over.
    Chain { index: usize, timed: bool },
    /// Once more teacher-forced: each component on its golden inputs, untimed.
    GoldenInputs,
}

/// How many times the chain runs: `warmup` untimed, then `timed`.
#[derive(Debug, Clone, Copy)]
pub struct ChainRuns {
    pub warmup: usize,
    pub timed: usize,
}

/// The judged chain, as a runner's what-ifs need it (`--attribute` ranks by a boundary's
/// error and reruns the chain against the golden values).
pub struct Judged<'a> {
    pub model: &'a Model,
    pub host: &'a HostSection,
    pub inputs: &'a HostInputs,
    pub boundaries: &'a [BoundaryParity],
    pub feed: &'a Feed,
}

/// What a runner measured and how it ran, as the report carries it.
pub struct Measured {
    /// `resident`, `streaming` or `device`.
    pub mode: String,
    /// For this host's HTP: emulator or NPU (None elsewhere, on a board too: its figures say
    /// where they come from).
    pub htp: Option<HtpKind>,
    /// Components that ran in fp32 on ORT's CPU EP instead (`--fp32`), in chain order.
    pub fp32: Vec<String>,
    /// Wall-clock latency per component and end to end (empty when not measured here).
    pub latency: Vec<LatencyStats>,
    pub load_ms: BTreeMap<String, Vec<f64>>,
    /// NaN when not measured.
    pub host_fraction: f64,
    /// The board's own execute times (`run --device`).
    pub device: Option<DeviceFigures>,
}

/// Calls a chain's components somewhere, and measures them.
pub trait ComponentRunner {
    /// The backend the components run on: names the report and picks the gate.
    fn backend(&self) -> BackendKind;

    /// How many chains to run.
    fn chain_runs(&self) -> ChainRuns;

    /// Whether the chain runs once more teacher-forced (introduced vs inherited error).
    fn golden_inputs_pass(&self) -> bool;

    /// Runs component `name` on `inputs`.
    fn call(&mut self, pass: Pass, name: &str, inputs: &Tensors) -> Result<Tensors>;

    /// A pass over the chain is about to start.
    fn starting(&mut self, _pass: Pass) {}

    /// A pass over the chain ended.
    fn done(&mut self, _pass: Pass) {}

    /// The what-ifs of `--attribute`, once the boundaries are judged (None: not asked for, or
    /// not something this runner does).
    fn attribute(&mut self, _judged: &Judged<'_>) -> Result<Option<Attribution>> {
        Ok(None)
    }

    /// Every call made: what was measured (`chain_ms`: the timed chains' wall times).
    fn finish(&mut self, chain_ms: &[f64]) -> Measured;
}
