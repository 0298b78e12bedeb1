//! Bisect: the first operator (in topological order) whose output diverges between ORT's CPU
//! EP (the reference) and a QNN backend, both fed the golden inputs. When a graph has more
//! intermediate tensors than one round may expose, the search narrows in rounds to the span
//! where divergence starts (`narrow`, pure), then walks back until the divergent node's own
//! inputs are measured, so the report says whether the operator or what fed it went wrong.
//! Without a threshold it ranks instead (`rank`): every float tensor measured, operators
//! ordered by the error they introduce. Either way the untapped graph's outputs are measured
//! too, since exposing intermediates can change what the QNN backend compiles.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::bisect_report::{BisectReport, Divergence};
use super::bisect_search::{narrow, walk_back};
use super::probe::{Measured, Probe, Round, Subject};
use super::rank;
use super::tensor_point::TensorPoint;
use xtask_onnx::onnx::proto::{OnnxSummary, parse_model};
use xtask_onnx::tensor::Tensor;
use xtask_parity::parity::component::GoldenIo;
use xtask_recipe::recipe::Component;
use xtask_runtime::report::fmt_cosine;
use xtask_runtime::runtime::{Backend, Runtime};

/// What one bisect needs: the component, its golden inputs, the backend, the search settings.
pub struct BisectJob<'a> {
    pub root: &'a Path,
    pub model: &'a str,
    pub comp: &'a Component,
    pub golden: &'a GoldenIo,
    pub rt: &'a Runtime,
    pub backend: &'a Backend,
    /// Some: find the first tensor whose cosine falls below it; None: rank by error introduced.
    pub threshold: Option<f64>,
    /// Operators listed in ranking mode.
    pub top: usize,
    pub max_outputs: usize,
    /// `--qdq`: the component's QDQ graph (`ctx/<model>/<component>.qdq.onnx`), measured
    /// against its float graph, both on ORT's CPU EP: where quantization loses accuracy.
    pub qdq: Option<&'a Path>,
    /// The built context binary's wrapper (`--backend htp`, when built): the untapped outputs
    /// are measured on it, so their figure against the golden is exactly what `parity`
    /// reports for the binary; the intermediates come from graphs compiled by the bisect.
    pub built: Option<&'a Path>,
}

/// Every tensor a node writes, as (node index, tensor name), in topological order: what a
/// bisect may expose and measure.
type Candidates = Vec<(usize, String)>;

/// The bisect of one component: the graph the build gives QNN, its untapped outputs, the
/// candidate tensors measured (narrowed or all), then the report of what was found.
pub fn bisect(job: &BisectJob<'_>) -> Result<BisectReport> {
    // What the build gives QNN: the rewritten copy when the recipe asks for rewrites.
    // With --qdq the reference is the float graph as the recipe names it (the quantizer's input).
    let onnx_path = match job.qdq {
        Some(_) => job.root.join(&job.comp.file.component.onnx),
        None => xtask_parity::rewritten::onnx_for(job.root, job.model, job.comp, job.backend)?,
    };
    let bytes = std::fs::read(&onnx_path)?;
    let graph = parse_model(&bytes)?;
    let qdq_bytes = match job.qdq {
        Some(q) => std::fs::read(job.root.join(q))
            .with_context(|| format!("cannot read the QDQ graph {}", q.display()))?,
        None => Vec::new(),
    };
    let qdq_graph = match job.qdq {
        Some(_) => Some(parse_model(&qdq_bytes)?),
        None => None,
    };
    let qdq_abs = job.qdq.map(|q| job.root.join(q));
    let subject = match (&qdq_abs, &qdq_graph) {
        (Some(path), Some(graph)) => Some(Subject {
            path,
            bytes: &qdq_bytes,
            graph,
        }),
        _ => None,
    };
    // Only the tensors both graphs write can be compared.
    let candidates: Candidates = candidates(&graph)
        .into_iter()
        .filter(|(_, t)| subject.as_ref().is_none_or(|s| s.has(t)))
        .collect();
    let work = work_dir(job);
    let backend_inputs = match job.backend {
        Backend::QnnHtp(_) if job.qdq.is_none() => {
            xtask_recipe::fp16::clamp_masks(job.comp, &job.golden.inputs)
        }
        _ => job.golden.inputs.clone(),
    };
    let mut probe = Probe {
        rt: job.rt,
        backend: job.backend,
        work: &work,
        original: &onnx_path,
        bytes: &bytes,
        golden: &job.golden.inputs,
        backend_inputs: &backend_inputs,
        graph: &graph,
        rounds: 0,
        tapped_outputs: BTreeMap::new(),
        subject,
        built: job.built.map(|b| job.root.join(b)),
    };
    let (untapped, untapped_outputs) = probe.untapped()?;
    let output_vs_golden = probe.against_golden(&untapped_outputs, &job.golden.expected);
    let measured = measure_candidates(job, &graph, &candidates, &mut probe)?;
    let points = points(&graph, &candidates, &measured);
    let shapes = probe.shapes();
    let first = job
        .threshold
        .and_then(|t| points.iter().find(|p| p.cosine < t))
        .map(|p| {
            divergence(
                &graph,
                &candidates,
                p,
                &measured,
                &job.golden.inputs,
                &shapes,
            )
        });
    let exact_floor = match job.qdq {
        Some(_) => rank::EXACT_FLOOR,
        None => rank::exact_floor(job.backend, job.comp.file.context.fp16),
    };
    let ranked = match job.threshold {
        Some(_) => Vec::new(),
        None => rank::rank(
            &graph,
            &candidates,
            &measured,
            &job.golden.inputs,
            job.top,
            exact_floor,
        ),
    };
    let taps_changed_outputs = taps_changed(&untapped, &probe.tapped_outputs);
    let mut report = BisectReport {
        schema_version: <BisectReport as xtask_base::record::Versioned>::SCHEMA,
        model: job.model.to_string(),
        component: job.comp.name().into(),
        backend: job.backend.kind(),
        qdq: job.qdq.is_some(),
        exact_floor,
        threshold: job.threshold,
        ranked,
        output_cosine_untapped: untapped,
        output_vs_golden,
        output_cosine_tapped: probe.tapped_outputs.clone(),
        taps_changed_outputs,
        rounds: probe.rounds,
        tensors_compared: points.len(),
        points,
        first_divergence: first,
        verdict: None,
    };
    if report.threshold.is_none() {
        report.verdict = Some(super::verdict::judge(&report));
    }
    Ok(report)
}

fn candidates(graph: &OnnxSummary) -> Candidates {
    graph
        .nodes
        .iter()
        .enumerate()
        .flat_map(|(i, n)| {
            n.outputs
                .iter()
                .filter(|o| !o.is_empty())
                .map(move |o| (i, o.clone()))
        })
        .collect()
}

/// The scratch folder of this bisect's exposed copies (one per model and component).
fn work_dir(job: &BisectJob<'_>) -> PathBuf {
    xtask_base::project::scratch_dir(job.root, "bisect").join(format!(
        "{}-{}{}",
        job.model,
        job.comp.name(),
        if job.qdq.is_some() { "-qdq" } else { "" }
    ))
}

/// Measures the candidates in rounds, each round a progress step: with a threshold, narrowed
/// to where divergence starts and walked back over the divergent node's inputs; without one,
/// every candidate (the ranking needs them all).
fn measure_candidates(
    job: &BisectJob<'_>,
    graph: &OnnxSummary,
    candidates: &Candidates,
    probe: &mut Probe<'_>,
) -> Result<Measured> {
    // Ranking measures every tensor in rounds of max_outputs; narrowing takes fewer (a guess).
    let rounds = candidates.len().div_ceil(job.max_outputs.max(1)).max(1);
    let task = xtask_base::ui::progress::Task::new(
        &format!("bisect {} {}", job.comp.name(), job.backend.label()),
        rounds,
    );
    let mut measure = |picked: &[usize]| -> Round {
        let names: Vec<String> = picked.iter().map(|&i| candidates[i].1.clone()).collect();
        task.working_on(&format!("{} tensor(s)", names.len()));
        let round = probe.compare(&names);
        task.step_done("a round", true);
        round
    };
    let Some(threshold) = job.threshold else {
        return rank::measure_all(candidates.len(), job.max_outputs, &mut measure);
    };
    let mut measured = narrow(candidates.len(), job.max_outputs, threshold, &mut measure)?;
    let inputs_of = |bad: usize| -> Vec<usize> {
        graph.nodes[candidates[bad].0]
            .inputs
            .iter()
            .filter_map(|inp| candidates.iter().position(|(_, n)| n == inp))
            .collect()
    };
    walk_back(&mut measured, threshold, inputs_of, &mut measure)?;
    Ok(measured)
}

/// The measured candidates as the report's points, with the node that wrote each.
fn points(graph: &OnnxSummary, candidates: &Candidates, measured: &Measured) -> Vec<TensorPoint> {
    measured
        .iter()
        .map(|(&i, &(cosine, max_abs_err, rel_l2_err))| {
            let node = &graph.nodes[candidates[i].0];
            TensorPoint {
                index: i,
                tensor: candidates[i].1.clone(),
                node: node.name.clone(),
                op_type: node.op_type.clone(),
                cosine,
                max_abs_err,
                rel_l2_err,
            }
        })
        .collect()
}

/// Whether exposing intermediates moved a graph output's cosine by more than 1e-9.
fn taps_changed(untapped: &BTreeMap<String, f64>, tapped: &BTreeMap<String, f64>) -> bool {
    untapped
        .iter()
        .any(|(name, u)| tapped.get(name).is_some_and(|t| (t - u).abs() > 1e-9))
}

/// The first divergent tensor's node, with its attributes and what is known of each input.
fn divergence(
    graph: &OnnxSummary,
    candidates: &[(usize, String)],
    p: &TensorPoint,
    measured: &Measured,
    golden: &BTreeMap<String, Tensor>,
    shapes: &BTreeMap<String, Vec<usize>>,
) -> Divergence {
    let node = &graph.nodes[candidates[p.index].0];
    let state_of = |name: &str| -> String {
        if golden.contains_key(name) {
            return "graph input".into();
        }
        if graph.initializers.iter().any(|w| w == name) {
            return "weight".into();
        }
        candidates
            .iter()
            .position(|(_, n)| n == name)
            .and_then(|i| measured.get(&i))
            .map_or("not compared".into(), |m| {
                format!("cosine {}", fmt_cosine(m.0))
            })
    };
    let shape_of = |name: &str| {
        golden
            .get(name)
            .map(|t| t.shape())
            .or_else(|| shapes.get(name).cloned())
            .unwrap_or_default()
    };
    Divergence {
        node: node.name.clone(),
        op_type: node.op_type.clone(),
        attributes: node
            .attributes
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect(),
        output: p.tensor.clone(),
        cosine: p.cosine,
        inputs: node
            .inputs
            .iter()
            .filter(|i| !i.is_empty())
            .map(|i| (i.clone(), shape_of(i), state_of(i)))
            .collect(),
    }
}
