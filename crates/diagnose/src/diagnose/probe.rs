//! Running a graph with intermediate tensors exposed: a copy of the ONNX with extra graph
//! outputs (the user's file is never edited), run on ORT's CPU EP (the reference) and on a QNN
//! backend with the same inputs; shared by `bisect` and `lint-fp16`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use xtask_onnx::onnx::proto::OnnxSummary;
use xtask_onnx::onnx::rewrite::add_graph_outputs;
use xtask_onnx::tensor::Tensor;
use xtask_parity::parity::metrics::compare;
use xtask_runtime::runtime::{Backend, Runtime};

pub struct Probe<'a> {
    pub rt: &'a Runtime,
    pub backend: &'a Backend,
    pub work: &'a Path,
    pub original: &'a Path,
    pub bytes: &'a [u8],
    pub golden: &'a BTreeMap<String, Tensor>,
    pub graph: &'a OnnxSummary,
    pub rounds: usize,
    /// The worst cosine of each graph output over the rounds, with intermediates exposed
    /// (exposing them can change what the QNN backend compiles, so it is kept apart from
    /// `untapped`).
    pub tapped_outputs: BTreeMap<String, f64>,
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
        let actual = self
            .rt
            .open(&copy, self.backend)
            .with_context(
                || "the QNN backend refused the graph with its intermediate tensors exposed",
            )?
            .run(self.golden)?;
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
    /// the cosine of each graph output.
    pub fn untapped(&self) -> Result<BTreeMap<String, f64>> {
        let reference = self
            .rt
            .open(self.original, &Backend::OrtCpu)?
            .run(self.golden)
            .context("reference run of the untapped graph")?;
        let actual = self
            .rt
            .open(self.original, self.backend)?
            .run(self.golden)
            .context("the untapped graph on the backend")?;
        Ok(self
            .graph
            .graph_outputs
            .iter()
            .filter_map(|o| measure(&reference, &actual, o).map(|m| (o.clone(), m.0)))
            .collect())
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
