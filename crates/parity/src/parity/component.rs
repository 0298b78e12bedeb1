//! Runs one component on one backend with its golden inputs and judges every output: the
//! shared core of `parity` (all backends) and of `build-ctx`'s *cpu parity* step.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::parity::gate::{Gate, Judgement, judge};
use crate::parity::metrics::{Metrics, compare, unravel};
use xtask_base::hashing::sha256_bytes;
use xtask_base::vocab::BackendKind;
use xtask_onnx::tensor::Tensor;
pub use xtask_recipe::golden::{GoldenIo, load_golden};
use xtask_recipe::recipe::{Component, Model, check_graph_contract};
use xtask_runtime::runtime::session::Placement;
use xtask_runtime::runtime::{Backend, Runtime};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OutputResult {
    pub name: String,
    pub shape: Vec<usize>,
    pub gate: Gate,
    pub metrics: Metrics,
    /// `max_abs_index` unravelled to the output's shape.
    pub max_abs_at: Vec<usize>,
    pub verdict: Judgement,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ComponentResult {
    pub component: String,
    pub backend: BackendKind,
    /// The model file the session ran (the ONNX, or the EPContext wrapper on HTP).
    pub session_model: String,
    /// sha256 of each input tensor's little-endian bytes, by tensor name.
    pub input_sha256: BTreeMap<String, String>,
    pub golden_sha256: String,
    pub placement: Option<Placement>,
    pub run_seconds: f64,
    /// The execute-time distribution of a profiled QAIRT SDK HTP run (`--toolchain sdk`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<xtask_runtime::report::latency::ExecuteStats>,
    pub outputs: Vec<OutputResult>,
    pub pass: bool,
    /// Set when the component could not be run at all.
    pub error: Option<String>,
    /// When this component was measured (a report merges results of several runs).
    #[serde(default)]
    pub measured_unix: u64,
    /// Kept from an earlier run by an `--only` run that did not measure it (shown as such).
    #[serde(default)]
    pub from_earlier_run: bool,
    /// A quantized component's precision (its figures are against the float golden, by the
    /// precision's gate); absent for a float component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<xtask_base::vocab::Precision>,
    /// What stood in for the backend, when something did: a quantized component's CPU stage
    /// is its QDQ graph on ORT's CPU EP (`QDQ_SIMULATION`), since QNN's CPU backend does not
    /// execute QDQ graphs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
}

/// How every report names the CPU stage of a quantized component.
pub const QDQ_SIMULATION: &str = "QDQ simulation (ORT CPU EP)";

/// A quantized component's CPU stage: its QDQ ONNX on ORT's CPU EP, judged against the float
/// golden by the precision's gate and labelled a QDQ simulation.
pub fn run_qdq_simulation(
    rt: &Runtime,
    model: &Model,
    comp: &Component,
    golden: &GoldenIo,
    qdq: &Path,
) -> Result<ComponentResult> {
    let mut session = rt.open(qdq, &Backend::OrtCpu)?;
    check_graph_contract(comp, &session.input_contract(), &session.output_contract())?;
    let started = std::time::Instant::now();
    let actual = session.run(&golden.inputs)?;
    let run_seconds = started.elapsed().as_secs_f64();
    let mut result = judge_outputs(model, comp, golden, &actual, BackendKind::Cpu)?;
    result.session_model = qdq.display().to_string();
    result.run_seconds = run_seconds;
    result.stage = Some(QDQ_SIMULATION.into());
    Ok(result)
}

/// Runs `session_model` on `backend` and compares every declared output with the golden.
pub fn run_component(
    rt: &Runtime,
    model: &Model,
    comp: &Component,
    golden: &GoldenIo,
    session_model: &Path,
    backend: &Backend,
    clamp_masks: bool,
) -> Result<ComponentResult> {
    let mut session = rt.open(session_model, backend)?;
    check_graph_contract(comp, &session.input_contract(), &session.output_contract())?;
    let started = std::time::Instant::now();
    // The HTP runs fp16: masks the recipe marks are clamped to -65504 first (unless disabled
    // to demonstrate why), as the host pipeline does on the device.
    let actual = match backend {
        Backend::QnnHtp(_) if clamp_masks => {
            session.run(&xtask_recipe::fp16::clamp_masks(comp, &golden.inputs))?
        }
        _ => session.run(&golden.inputs)?,
    };
    let run_seconds = started.elapsed().as_secs_f64();
    let mut result = judge_outputs(model, comp, golden, &actual, backend.kind())?;
    result.session_model = session_model.display().to_string();
    result.placement = (backend != &Backend::OrtCpu).then(|| session.placement.clone());
    result.run_seconds = run_seconds;
    Ok(result)
}

/// Compares a component's outputs (however they were produced) with the golden, gate by gate.
pub fn judge_outputs(
    model: &Model,
    comp: &Component,
    golden: &GoldenIo,
    actual: &BTreeMap<String, Tensor>,
    backend: BackendKind,
) -> Result<ComponentResult> {
    let mut outputs = Vec::new();
    for spec in &comp.file.outputs {
        let name = spec.name.get_ref();
        let got = actual
            .get(name)
            .with_context(|| format!("the session produced no output `{name}`"))?;
        let want = &golden.expected[name];
        if got.shape() != want.shape() {
            bail!(
                "output `{name}`: the session produced shape {:?}, the golden holds {:?}",
                got.shape(),
                want.shape()
            );
        }
        let gate = comp.gate(&model.file, name, backend);
        let metrics = compare(&got.to_f64_vec(), &want.to_f64_vec(), gate.atol, gate.rtol);
        let verdict = judge(&metrics, &gate);
        outputs.push(OutputResult {
            name: name.clone(),
            shape: want.shape(),
            max_abs_at: unravel(metrics.max_abs_index, &want.shape()),
            gate,
            metrics,
            verdict,
        });
    }
    let pass = outputs.iter().all(|o| o.verdict.pass);
    let precision = comp.precision();
    Ok(ComponentResult {
        precision: (precision.is_quantized() && backend.is_qnn()).then_some(precision),
        stage: None,
        component: comp.name().to_string(),
        backend,
        session_model: String::new(),
        input_sha256: golden
            .inputs
            .iter()
            .map(|(k, t)| (k.clone(), sha256_bytes(&t.to_le_bytes())))
            .collect(),
        golden_sha256: golden.sha256.clone(),
        placement: None,
        run_seconds: 0.0,
        latency: None,
        outputs,
        pass,
        error: None,
        measured_unix: xtask_runtime::report::now_unix(),
        from_earlier_run: false,
    })
}

/// A result for a component that could not run; it fails the command and the report says why.
pub fn failed_component(
    root: &Path,
    comp: &str,
    backend: BackendKind,
    err: &anyhow::Error,
) -> ComponentResult {
    ComponentResult {
        component: comp.to_string(),
        backend,
        session_model: String::new(),
        input_sha256: BTreeMap::new(),
        golden_sha256: String::new(),
        placement: None,
        run_seconds: 0.0,
        latency: None,
        outputs: Vec::new(),
        pass: false,
        error: Some(xtask_base::project::scrub(root, &format!("{err:#}"))),
        measured_unix: xtask_runtime::report::now_unix(),
        from_earlier_run: false,
        precision: None,
        stage: None,
    }
}
