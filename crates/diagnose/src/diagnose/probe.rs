//! Running a graph with intermediate tensors exposed: a copy of the ONNX with extra graph
//! outputs (the user's file is never edited), run on ORT's CPU EP (the reference) and on a QNN
//! backend with the same inputs; shared by `bisect` and `lint-fp16`. With a `subject` (a
//! quantized component's QDQ graph) the float graph on ORT's CPU EP is the reference and the
//! subject, also on ORT's CPU EP, is what is measured, tensor by tensor under the same names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use xtask_onnx::onnx::proto::OnnxSummary;
use xtask_onnx::onnx::rewrite::add_graph_outputs;
use xtask_onnx::tensor::Tensor;
use xtask_parity::parity::metrics::compare;
use xtask_runtime::runtime::{Backend, Runtime};

/// Another graph measured against the reference graph (`bisect --qdq`: the QDQ graph of a
/// quantized component, whose operators write the float graph's tensor names).
pub struct Subject<'a> {
    pub path: &'a Path,
    pub bytes: &'a [u8],
    pub graph: &'a OnnxSummary,
}

impl Subject<'_> {
    /// Whether the subject graph writes `tensor` too.
    pub fn has(&self, tensor: &str) -> bool {
        self.graph
            .nodes
            .iter()
            .any(|n| n.outputs.iter().any(|o| o == tensor))
    }
}

pub struct Probe<'a> {
    pub rt: &'a Runtime,
    pub backend: &'a Backend,
    pub work: &'a Path,
    pub original: &'a Path,
    pub bytes: &'a [u8],
    pub golden: &'a BTreeMap<String, Tensor>,
    /// The inputs the QNN backend gets: the golden's, with the recipe's masks clamped to fp16's
    /// range on the HTP, exactly as `parity` feeds it (so the untapped figures are parity's).
    pub backend_inputs: &'a BTreeMap<String, Tensor>,
    pub graph: &'a OnnxSummary,
    pub rounds: usize,
    /// The worst cosine of each graph output over the rounds, with intermediates exposed
    /// (exposing them can change what the QNN backend compiles, so it is kept apart from
    /// `untapped`).
    pub tapped_outputs: BTreeMap<String, f64>,
    /// Some: this graph (on ORT's CPU EP) is measured instead of `original` on `backend`.
    pub subject: Option<Subject<'a>>,
    /// The built binary's wrapper: the untapped graph on the backend is that binary.
    pub built: Option<PathBuf>,
}

/// (cosine, max abs error, relative L2 error) of one tensor against the reference.
pub type Measure = (f64, f64, f64);

/// The measure of each measured candidate tensor, by candidate index (what `bisect` narrows
/// and `rank` ranks).
pub type Measured = BTreeMap<usize, Measure>;

/// One round's result: a measure per picked tensor, None where not comparable.
pub type Round = Result<Vec<Option<Measure>>>;

impl Probe<'_> {
    /// One round: a copy of the graph exposing `names`, run on the reference and the backend;
    /// (cosine, max abs error, rel-L2) per name, None for non-float tensors.
    pub fn compare(&mut self, names: &[String]) -> Result<Vec<Option<Measure>>> {
        self.rounds += 1;
        // Graph outputs are returned anyway; only intermediate tensors are added.
        let extra: Vec<String> = names
            .iter()
            .filter(|n| !self.graph.graph_outputs.contains(n))
            .cloned()
            .collect();
        let copy = self.write_copy(&extra)?;
        let reference = self
            .rt
            .open(&copy, &Backend::OrtCpu)?
            .run(self.golden)
            .context("reference run")?;
        let actual = match &self.subject {
            Some(s) => {
                let theirs: Vec<String> = extra.iter().filter(|n| s.has(n)).cloned().collect();
                let copy = write_exposed_copy(
                    &self.work.join("subject"),
                    s.path,
                    s.bytes,
                    s.graph,
                    &theirs,
                )?;
                self.rt
                    .open(&copy, &Backend::OrtCpu)?
                    .run(self.golden)
                    .context("the QDQ graph with its intermediate tensors exposed")?
            }
            None => self
                .rt
                .open(&copy, self.backend)
                .with_context(
                    || "the QNN backend refused the graph with its intermediate tensors exposed",
                )?
                .run(self.backend_inputs)?,
        };
        std::fs::create_dir_all(self.work)?;
        let shapes: BTreeMap<String, Vec<usize>> = reference
            .iter()
            .map(|(k, t)| (k.clone(), t.shape()))
            .collect();
        std::fs::write(self.work.join("shapes.json"), serde_json::to_vec(&shapes)?)?;
        for out in &self.graph.graph_outputs {
            if let Some((cos, _, _)) = measure(&reference, &actual, out) {
                let worst = self.tapped_outputs.entry(out.clone()).or_insert(cos);
                *worst = worst.min(cos);
            }
        }
        Ok(names
            .iter()
            .map(|n| measure(&reference, &actual, n))
            .collect())
    }

    /// The graph as the user wrote it (nothing exposed) on the reference and the backend:
    /// the cosine of each graph output against the reference, and the backend's outputs.
    pub fn untapped(&self) -> Result<(BTreeMap<String, f64>, BTreeMap<String, Tensor>)> {
        let reference = self
            .rt
            .open(self.original, &Backend::OrtCpu)?
            .run(self.golden)
            .context("reference run of the untapped graph")?;
        let actual = match &self.subject {
            Some(s) => self
                .rt
                .open(s.path, &Backend::OrtCpu)?
                .run(self.golden)
                .context("the untapped QDQ graph on ORT's CPU EP")?,
            None => self
                .rt
                .open(self.built.as_deref().unwrap_or(self.original), self.backend)?
                .run(self.backend_inputs)
                .context("the untapped graph on the backend")?,
        };
        let cosines = self
            .graph
            .graph_outputs
            .iter()
            .filter_map(|o| measure(&reference, &actual, o).map(|m| (o.clone(), m.0)))
            .collect();
        Ok((cosines, actual))
    }

    /// Each graph output of `actual` against the golden's expected value: (cosine, rel-L2),
    /// the figures `parity` reports for the same binary and inputs.
    pub fn against_golden(
        &self,
        actual: &BTreeMap<String, Tensor>,
        expected: &BTreeMap<String, Tensor>,
    ) -> BTreeMap<String, GoldenFigure> {
        self.graph
            .graph_outputs
            .iter()
            .filter_map(|o| {
                measure(expected, actual, o).map(|m| {
                    let figure = GoldenFigure {
                        cosine: m.0,
                        rel_l2: m.2,
                    };
                    (o.clone(), figure)
                })
            })
            .collect()
    }

    fn write_copy(&self, names: &[String]) -> Result<PathBuf> {
        write_exposed_copy(self.work, self.original, self.bytes, self.graph, names)
    }

    pub fn shapes(&self) -> BTreeMap<String, Vec<usize>> {
        std::fs::read(self.work.join("shapes.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }
}

/// One tensor of two runs compared: None when it is not a float tensor in both, same shape.
fn measure(
    reference: &BTreeMap<String, Tensor>,
    actual: &BTreeMap<String, Tensor>,
    name: &str,
) -> Option<Measure> {
    match (reference.get(name), actual.get(name)) {
        (Some(r @ (Tensor::F32(_) | Tensor::F16(_))), Some(a)) if r.shape() == a.shape() => {
            let m = compare(&a.to_f64_vec(), &r.to_f64_vec(), 0.0, 0.0);
            Some((m.cosine, m.max_abs_err, m.rel_l2_err))
        }
        _ => None,
    }
}

/// A copy of the graph exposing `names` as outputs, in `work` with the original's external
/// data linked beside it (the user's file is never edited).
pub fn write_exposed_copy(
    work: &Path,
    original: &Path,
    bytes: &[u8],
    graph: &OnnxSummary,
    names: &[String],
) -> Result<PathBuf> {
    if work.exists() {
        std::fs::remove_dir_all(work)?;
    }
    std::fs::create_dir_all(work)?;
    for loc in &graph.external_data {
        xtask_onnx::onnx::link_external_data(&original.with_file_name(loc), &work.join(loc))
            .with_context(|| format!("cannot copy external data {loc}"))?;
    }
    let copy = work.join(original.file_name().context("onnx name")?);
    std::fs::write(&copy, add_graph_outputs(bytes, names)?)?;
    Ok(copy)
}

/// A graph output against the golden, as `bisect` measures it on the built wrapper (NaN
/// figures are written as null).
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct GoldenFigure {
    #[serde(deserialize_with = "xtask_recipe::recipe::gate::f64_or_nan")]
    pub cosine: f64,
    #[serde(deserialize_with = "xtask_recipe::recipe::gate::f64_or_nan")]
    pub rel_l2: f64,
}
