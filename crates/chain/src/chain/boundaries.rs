//! The chain's boundaries judged: every boundary tensor's reference (component goldens and
//! the host trace), the gate each is judged by, and the per-layer K/V cosines.

use super::pipeline::{ChainResult, Feed};
use super::report::{ActionsGate, BoundaryParity};
use anyhow::{Context, Result};
use ndarray::{ArrayD, Axis};
use std::collections::BTreeMap;
use xtask_base::vocab::BackendKind;
use xtask_onnx::tensor::Tensor;
use xtask_parity::parity::metrics::compare;
use xtask_recipe::recipe::Gate;
use xtask_recipe::recipe::{HostSection, Model};

/// A boundary's golden value, or why there is none (the boundary is then listed as ungated).
pub(crate) type Reference = Result<ArrayD<f32>, String>;

pub(crate) fn judge_boundaries(
    backend: BackendKind,
    model: &Model,
    host: &HostSection,
    result: &ChainResult,
    expected: &BTreeMap<String, Reference>,
) -> Vec<BoundaryParity> {
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
            let gate = boundary_gate(model, host, backend, &b.name);
            let mut judged = BoundaryParity::new(&b.name, &b.value, want, &gate);
            if b.name == ACTIONS {
                judged.judge_max_abs(actions_gate(model, host, backend));
            }
            judged
        })
        .collect()
}

/// The boundary the actions' max-abs gate applies to.
pub const ACTIONS: &str = "actions";

/// The gate one boundary is judged by: a quantized component's outputs (and, for the action
/// step, the Euler steps it produces) on a QNN backend by the component's precision gate,
/// exactly as `parity` judges that component; every other boundary by the chain's
/// `[host.gate]`. The gate carries where it came from.
pub fn boundary_gate(
    model: &Model,
    host: &HostSection,
    backend: BackendKind,
    boundary: &str,
) -> Gate {
    let component_output = match boundary.split_once('/') {
        Some((comp, out)) if model.components.iter().any(|c| c.name() == comp) => {
            Some((comp.to_string(), out.to_string()))
        }
        _ if boundary.starts_with("euler step ") => {
            let step = model
                .components
                .iter()
                .find(|c| c.name() == host.action_step);
            step.and_then(|c| c.file.outputs.first())
                .map(|o| (host.action_step.clone(), o.name.to_string()))
        }
        _ => None,
    };
    if let Some((comp, out)) = component_output
        && let Some(c) = model.components.iter().find(|c| c.name() == comp)
        && c.precision().is_quantized()
        && backend.is_qnn()
    {
        return c.gate(&model.file, &out, backend);
    }
    let mut gate = host.gate.boundary_gate(backend);
    gate.source = format!("{} [host.gate]", model.recipe_path.display());
    gate
}

/// The actions' max-abs gate on `backend` and where it was set.
pub fn actions_gate(model: &Model, host: &HostSection, backend: BackendKind) -> ActionsGate {
    let max_abs = host.gate.actions_gate(backend);
    let source = match host.gate.actions_max_abs.get(backend.label()) {
        Some(_) => format!(
            "{} [host.gate] actions_max_abs.{}",
            model.recipe_path.display(),
            backend.label()
        ),
        None => format!("the {} default", backend.label()),
    };
    ActionsGate { max_abs, source }
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
