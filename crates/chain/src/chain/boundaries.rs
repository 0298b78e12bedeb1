//! The chain's boundaries judged: every boundary tensor's reference (component goldens and
//! the host trace), the gate each is judged by, and the per-layer K/V cosines.

use super::pipeline::{ChainResult, Feed};
use super::report::BoundaryParity;
use anyhow::{Context, Result};
use ndarray::{ArrayD, Axis};
use std::collections::BTreeMap;
use xtask_base::vocab::BackendKind;
use xtask_onnx::tensor::Tensor;
use xtask_parity::parity::metrics::compare;
use xtask_recipe::recipe::{HostSection, Model};

/// A boundary's golden value, or why there is none (the boundary is then listed as ungated).
pub(crate) type Reference = Result<ArrayD<f32>, String>;

pub(crate) fn judge_boundaries(
    backend: BackendKind,
    host: &HostSection,
    result: &ChainResult,
    expected: &BTreeMap<String, Reference>,
) -> Vec<BoundaryParity> {
    let gate = host.gate.boundary_gate(backend);
    result
        .boundaries
        .iter()
        .map(|b| {
            let want = match expected.get(&b.name) {
                Some(Ok(w)) => Ok(w),
                Some(Err(reason)) => Err(reason.clone()),
                None => Err(format!(
                    "no reference: neither a component golden nor the trace ({}) holds it",
                    host.trace.display()
                )),
            };
            BoundaryParity::new(&b.name, &b.value, want, &gate)
        })
        .collect()
}

/// The golden value of every boundary the chain produces, from the component goldens and the
/// trace; a boundary whose reference is absent or unusable gets the reason instead.
pub(crate) fn expected_boundaries(
    model: &Model,
    host: &HostSection,
    inputs: &super::pipeline::HostInputs,
) -> Result<BTreeMap<String, Reference>> {
    let trace = &inputs.trace;
    let mut out = BTreeMap::new();
    for comp in &model.components {
        let golden = inputs
            .goldens
            .get(comp.name())
            .context("component golden")?;
        for (name, t) in &golden.expected {
            let reference = as_f32(t).ok_or_else(|| {
                format!(
                    "the golden {} holds `{name}` as {}, not a float tensor",
                    comp.file.golden.file.display(),
                    t.dtype()
                )
            });
            out.insert(format!("{}/{name}", comp.name()), reference);
        }
    }
    let from_trace = |key: &str| -> Reference {
        match trace.get(key) {
            Some(t) => as_f32(t).ok_or_else(|| {
                format!("trace tensor `{key}` is {}, not a float tensor", t.dtype())
            }),
            None => Err(format!("the trace has no tensor `{key}`")),
        }
    };
    out.insert("scatter/hidden_states".into(), from_trace("hidden_states"));
    for (i, t) in host.timesteps.iter().enumerate() {
        out.insert(
            format!("euler step {i} (t={t})/trajectory"),
            from_trace(&super::trace::step_out_key(i)),
        );
    }
    let last_key = super::trace::step_out_key(host.timesteps.len().saturating_sub(1));
    let used = host.action_dim_used;
    let normalized = from_trace(&last_key).and_then(|x| match x.shape() {
        [_, _, dims] if *dims >= used => {
            Ok(x.slice(ndarray::s![.., .., ..used]).to_owned().into_dyn())
        }
        shape => Err(format!(
            "trace tensor `{last_key}` has shape {shape:?}: no first {used} action dims to take"
        )),
    });
    out.insert("normalized actions (before clipping)".into(), normalized);
    out.insert("actions".into(), from_trace("actions"));
    Ok(out)
}

/// The golden value of every boundary that has one.
pub(crate) fn feed_of(expected: &BTreeMap<String, Reference>) -> Feed {
    expected
        .iter()
        .filter_map(|(k, v)| v.as_ref().ok().map(|a| (k.clone(), a.clone())))
        .collect()
}

pub(crate) fn as_f32(t: &Tensor) -> Option<ArrayD<f32>> {
    match t {
        Tensor::F32(a) => Some(a.clone()),
        Tensor::F16(a) => Some(a.mapv(f32::from)),
        _ => None,
    }
}

/// Cosine of each layer (axis 0) of the collected K or V against the trace's; empty when the
/// trace holds none of that shape.
pub(crate) fn per_layer_cosine(got: &ArrayD<f32>, want: Option<&Tensor>) -> Vec<f64> {
    let Some(Tensor::F32(want)) = want else {
        return Vec::new();
    };
    if want.shape() != got.shape() || got.ndim() == 0 {
        return Vec::new();
    }
    let layer = |a: &ArrayD<f32>, l: usize| -> Vec<f64> {
        a.index_axis(Axis(0), l)
            .iter()
            .map(|&v| f64::from(v))
            .collect()
    };
    (0..got.shape()[0])
        .map(|l| compare(&layer(got, l), &layer(want, l), 0.0, 0.0).cosine)
        .collect()
}
