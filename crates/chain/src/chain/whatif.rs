//! What-if chains: some components on ORT's CPU EP in fp32, the rest on the chosen backend
//! (`run --fp32 a,b`), and the attribution (`run --attribute`) that reruns the chain once per
//! component with only that one in fp32 and ranks the components by how much of the
//! normalized-actions error each removes: which component to fix first. Both call through the
//! sessions the run loaded, so a what-if costs chain runs, not session loads.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use ndarray::ArrayD;
use serde::Serialize;

use super::pipeline::{HostInputs, run_chain};
use super::sessions::{ChainSessions, ms};
use xtask_onnx::tensor::Tensor;
use xtask_parity::parity::metrics::{Metrics, compare};
use xtask_recipe::recipe::{HostSection, Model};

/// The boundary the attribution ranks by: the actions before clipping, so clipping to [-1, 1]
/// cannot hide an error.
pub const RANKED_BOUNDARY: &str = "normalized actions (before clipping)";

/// Checks the `--fp32` names against the model's components (refused with the valid names).
pub fn check_fp32_names(model: &Model, names: &[String]) -> Result<BTreeSet<String>> {
    let known: Vec<&str> = model.components.iter().map(|c| c.name()).collect();
    let unknown: Vec<&String> = names
        .iter()
        .filter(|n| !known.contains(&n.as_str()))
        .collect();
    if !unknown.is_empty() {
        bail!(
            "--fp32 names no component {unknown:?} of model `{}` (its components: {})",
            model.file.model.name,
            known.join(", ")
        );
    }
    Ok(names.iter().cloned().collect())
}

/// Calls `name` on the fp32 reference sessions when it is in `fp32`, else on the backend's.
pub fn dispatch(
    backend: &mut ChainSessions<'_>,
    fp32_sessions: Option<&mut ChainSessions<'_>>,
    fp32: &BTreeSet<String>,
    name: &str,
    inputs: &BTreeMap<String, Tensor>,
) -> Result<BTreeMap<String, Tensor>> {
    match fp32_sessions {
        Some(cpu) if fp32.contains(name) => {
            cpu.recording = backend.recording;
            cpu.call(name, inputs)
                .with_context(|| format!("`{name}` in fp32 on ORT's CPU EP"))
        }
        _ => backend.call(name, inputs),
    }
}

/// Outputs of untimed component calls by (component, ran in fp32, digest of its inputs): a
/// component fed the same inputs on the same session computes the same outputs, so the
/// teacher-forced pass and the what-if chains only run what their change reaches (the
/// components upstream of the one put in fp32 are looked up, not rerun).
#[derive(Default)]
pub struct Memo {
    outputs: BTreeMap<(String, bool, String), BTreeMap<String, Tensor>>,
    /// Calls answered from the memo.
    pub hits: usize,
}

impl Memo {
    /// `dispatch`, answered from the memo when these inputs were seen; `lookup` false only
    /// records (a timed run must really run).
    pub fn call(
        &mut self,
        lookup: bool,
        backend: &mut ChainSessions<'_>,
        fp32_sessions: Option<&mut ChainSessions<'_>>,
        fp32: &BTreeSet<String>,
        name: &str,
        inputs: &BTreeMap<String, Tensor>,
    ) -> Result<BTreeMap<String, Tensor>> {
        let on_fp32 = fp32_sessions.is_some() && fp32.contains(name);
        let key = (name.to_string(), on_fp32, digest(inputs));
        if lookup && let Some(out) = self.outputs.get(&key) {
            self.hits += 1;
            return Ok(out.clone());
        }
        let out = dispatch(backend, fp32_sessions, fp32, name, inputs)?;
        self.outputs.insert(key, out.clone());
        Ok(out)
    }
}

/// sha256 over every input's name, dtype, shape and bytes.
fn digest(inputs: &BTreeMap<String, Tensor>) -> String {
    let mut bytes = Vec::new();
    for (name, t) in inputs {
        bytes.extend(format!("{name}:{}:{:?};", t.dtype(), t.shape()).bytes());
        bytes.extend(t.to_le_bytes());
    }
    xtask_base::hashing::sha256_bytes(&bytes)
}

/// One component's what-if: the chain with it (and the `--fp32` set) in fp32.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct AttributionRow {
    pub component: String,
    /// The ranked boundary against its golden with this component in fp32.
    pub metrics: Metrics,
    /// `(base rel-L2 - rel-L2 with it in fp32) / base rel-L2`: 1 = running this component
    /// exactly removes all of the error, 0 = none, negative = the error grows.
    #[serde(deserialize_with = "xtask_recipe::recipe::gate::f64_or_nan")]
    pub removed: f64,
}

/// `run --attribute`: the ranked what-ifs, best first.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Attribution {
    pub boundary: String,
    /// The ranked boundary of the run itself (only the `--fp32` set in fp32).
    pub base: Metrics,
    pub rows: Vec<AttributionRow>,
    /// Wall time of all the what-if chains (sessions already loaded).
    pub took_ms: f64,
    /// Component calls of the what-if chains answered from the memo (same inputs seen before).
    pub memo_hits: usize,
}

/// The sessions and settings a what-if chain runs with.
pub struct WhatIf<'s, 'a> {
    pub host: &'s HostSection,
    pub inputs: &'s HostInputs,
    pub backend: &'s mut ChainSessions<'a>,
    pub fp32_sessions: &'s mut ChainSessions<'a>,
    pub fp32: &'s BTreeSet<String>,
    pub memo: &'s mut Memo,
}

impl WhatIf<'_, '_> {
    /// Reruns the chain once per component (in chain order) with it added to the fp32 set;
    /// `base` is the run's own measurement of the ranked boundary, `want` its golden.
    pub fn attribute(
        &mut self,
        components: &[String],
        base: &Metrics,
        want: &ArrayD<f32>,
    ) -> Result<Attribution> {
        let (started, hits_before) = (Instant::now(), self.memo.hits);
        self.backend.recording = false;
        let mut rows = Vec::new();
        for comp in components {
            let mut fp32 = self.fp32.clone();
            fp32.insert(comp.clone());
            let (backend, cpu, memo) = (
                &mut *self.backend,
                &mut *self.fp32_sessions,
                &mut *self.memo,
            );
            let result = run_chain(self.host, self.inputs, &mut |name, ins| {
                memo.call(true, backend, Some(cpu), &fp32, name, ins)
            })
            .with_context(|| format!("the what-if chain with `{comp}` in fp32"))?;
            let got = result
                .boundaries
                .iter()
                .find(|b| b.name == RANKED_BOUNDARY)
                .context("the chain has no normalized actions")?;
            if got.value.shape() != want.shape() {
                bail!(
                    "{RANKED_BOUNDARY}: shape {:?}, golden {:?}",
                    got.value.shape(),
                    want.shape()
                );
            }
            let metrics = compare(&f64s(&got.value), &f64s(want), 0.0, 0.0);
            let removed = if base.rel_l2_err > 0.0 {
                (base.rel_l2_err - metrics.rel_l2_err) / base.rel_l2_err
            } else {
                0.0
            };
            rows.push(AttributionRow {
                component: comp.clone(),
                metrics,
                removed,
            });
        }
        // NaN sorts last: a what-if that produced NaN removes nothing we can rank.
        rows.sort_by(|a, b| {
            let key = |r: &AttributionRow| {
                if r.removed.is_nan() {
                    f64::NEG_INFINITY
                } else {
                    r.removed
                }
            };
            key(b).total_cmp(&key(a))
        });
        let memo_hits = self.memo.hits - hits_before;
        Ok(Attribution {
            memo_hits,
            boundary: RANKED_BOUNDARY.into(),
            base: base.clone(),
            rows,
            took_ms: ms(started),
        })
    }
}

fn f64s(a: &ArrayD<f32>) -> Vec<f64> {
    a.iter().map(|&v| f64::from(v)).collect()
}

/// The Markdown section of the attribution.
pub fn markdown(a: &Attribution, backend: xtask_base::vocab::BackendKind) -> String {
    let mut md = format!(
        "\n## Which component to fix first\n\n\
         The chain rerun once per component with only that component on ORT's CPU EP in fp32 \
         (the rest on `{backend}`), ranked by how much of the error of *{}* it removes \
         (base rel-L2 {:.3e}, cosine {}). {} what-if chains took {:.0} ms ({} component calls with inputs seen before were \
         reused, not rerun).\n\n\
         | rank | component in fp32 | rel L2 | cosine | error removed |\n|---|---|---|---|---|\n",
        a.boundary,
        a.base.rel_l2_err,
        a.base.shown_cosine(),
        a.rows.len(),
        a.took_ms,
        a.memo_hits
    );
    for (i, r) in a.rows.iter().enumerate() {
        let _ = writeln!(
            md,
            "| {} | {} | {:.3e} | {} | {:.1}% |",
            i + 1,
            r.component,
            r.metrics.rel_l2_err,
            r.metrics.shown_cosine(),
            r.removed * 100.0
        );
    }
    md
}
