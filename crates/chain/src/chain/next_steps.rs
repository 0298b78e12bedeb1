//! What to run after a failed chain: the commands that find the cause, each one that runs as
//! printed (the suite runs every one a failing fixture prints). Computed once, stored in the
//! report (`RunReport::next_steps`) and rendered the same on the terminal, in Markdown and in
//! HTML.
//!
//! Which component to look at first: the attribution's top row when `--attribute` ran, else
//! the first failing boundary (in chain order) that a component produced, else the component
//! that introduced the largest share of its boundary's error. What to run on it depends on
//! what it is: a float component on a QNN backend is bisected against ORT's CPU EP on that
//! backend; a quantized one is bisected as its QDQ graph against the float graph (a float
//! bisect would look at a graph the binary does not hold), and its recipe lines (`exclude`, a
//! larger precision, the gate) are named; on ORT the graph itself is checked against its
//! golden.

use super::report::{BoundaryParity, RunReport};
use xtask_base::vocab::{BackendKind, Verdict};
use xtask_recipe::recipe::{HostSection, Model};

/// The next steps of a run (empty when it passed).
pub fn next_steps(model: &Model, host: &HostSection, report: &RunReport) -> Vec<String> {
    if report.pass {
        return Vec::new();
    }
    let name = &model.file.model.name;
    let backend = report.run.backend;
    let on_device = report.run.device.is_some();
    let mut steps = Vec::new();
    if report.run.attribution.is_none() && backend != BackendKind::Ort {
        steps.push(format!(
            "rank the components by the error each adds (each rerun in fp32 on this host): `cargo xtask run --backend {backend} --model {name} --iters 1 --warmup 0 --attribute`"
        ));
    }
    let Some((comp, why)) = blamed(model, host, report) else {
        return steps;
    };
    let Some(c) = model.components.iter().find(|c| c.name() == comp) else {
        return steps;
    };
    let precision = c.precision();
    if precision.is_quantized() && backend.is_qnn() {
        let recipe = c.recipe_path.display();
        steps.push(format!(
            "{comp} ({why}) is {precision}: find the operators its quantization loses most at with `cargo xtask bisect {comp} --qdq --model {name}` (its QDQ graph against the float one, both on ORT's CPU EP)"
        ));
        steps.push(format!(
            "then, in {recipe}: keep those operators in float (`[quantize] exclude = [\"<op type or node>\", …]`), quantize it less (another `precision`, or no `[quantize]` for fp16), or accept the measured figures as its gate (`[quantize.gates.{precision}]`, with the reason)"
        ));
    } else if backend.is_qnn() {
        // A board's failure is looked at on this host's backend of the same kind.
        let on = if on_device { " (on this host)" } else { "" };
        steps.push(format!(
            "{comp} ({why}): find the first operator that diverges{on} with `cargo xtask bisect {comp} --backend {backend} --model {name}`"
        ));
    } else {
        steps.push(format!(
            "{comp} ({why}): check its graph against its golden with `cargo xtask parity --backend ort --model {name} --only {comp}`"
        ));
    }
    steps
}

/// The component to look at first, and why it was chosen.
fn blamed(model: &Model, host: &HostSection, report: &RunReport) -> Option<(String, String)> {
    if let Some(top) = report.run.attribution.as_ref().and_then(|a| a.rows.first()) {
        return Some((
            top.component.clone(),
            format!(
                "running it in fp32 removes {:.0}% of the error",
                top.removed * 100.0
            ),
        ));
    }
    let boundaries = &report.run.boundaries;
    if let Some((b, comp)) = boundaries
        .iter()
        .filter(|b| b.status == Verdict::Fail)
        .find_map(|b| component_of(model, host, b).map(|c| (b, c)))
    {
        return Some((comp, format!("its boundary `{}` failed first", b.name)));
    }
    // The most error introduced in absolute terms: its share of the boundary's rel-L2 times
    // that rel-L2 (the first boundary's share is always all of it, however small).
    boundaries
        .iter()
        .filter_map(|b| {
            let rel = b.metrics.as_ref()?.rel_l2_err;
            Some((b, component_of(model, host, b)?, b.introduced?, rel))
        })
        .filter(|x| x.3.is_finite())
        .max_by(|x, y| (x.2 * x.3).total_cmp(&(y.2 * y.3)))
        .map(|(b, comp, share, rel)| {
            (
                comp,
                format!(
                    "it introduced {:.0}% of the rel-L2 {rel:.1e} at `{}`, the most of any component",
                    share * 100.0,
                    b.name
                ),
            )
        })
}

/// The component that produced a boundary: `<component>/<output>`, or the action step for an
/// Euler step.
fn component_of(model: &Model, host: &HostSection, b: &BoundaryParity) -> Option<String> {
    match b.name.split_once('/') {
        Some((comp, _)) if model.components.iter().any(|c| c.name() == comp) => {
            Some(comp.to_string())
        }
        _ if b.name.starts_with("euler step ") => Some(host.action_step.clone()),
        _ => None,
    }
}
