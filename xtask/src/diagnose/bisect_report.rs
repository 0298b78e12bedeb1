//! The bisect report: the tensors compared, the first divergent operator with its attributes
//! and what is known of its inputs; as JSON, Markdown and a self-contained HTML page.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::onnx::proto::OnnxSummary;
use crate::report::fmt_cosine;
use crate::tensor::Tensor;

#[derive(Debug, Clone, Serialize)]
pub struct TensorPoint {
    pub index: usize,
    pub tensor: String,
    pub node: String,
    pub op_type: String,
    pub cosine: f64,
    pub max_abs_err: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Divergence {
    pub node: String,
    pub op_type: String,
    pub attributes: Vec<(String, String)>,
    pub output: String,
    pub cosine: f64,
    /// Each input with its shape and what is known of it: `cosine …`, `weight`, or
    /// `graph input` (fed identically to both).
    pub inputs: Vec<(String, Vec<usize>, String)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BisectReport {
    pub model: String,
    pub component: String,
    pub backend: String,
    pub threshold: f64,
    pub rounds: usize,
    pub tensors_compared: usize,
    pub points: Vec<TensorPoint>,
    pub first_divergence: Option<Divergence>,
}

pub fn divergence(
    graph: &OnnxSummary,
    candidates: &[(usize, String)],
    p: &TensorPoint,
    measured: &BTreeMap<usize, (f64, f64)>,
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

fn describe(d: &Divergence) -> String {
    let attrs: Vec<String> = d
        .attributes
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let inputs: Vec<String> = d
        .inputs
        .iter()
        .map(|(n, s, state)| {
            if s.is_empty() {
                format!("{n}: {state}")
            } else {
                format!("{n} {s:?}: {state}")
            }
        })
        .collect();
    format!(
        "first divergent operator: {} `{}` ({}) → {} cosine {}\n  inputs: {}",
        d.op_type,
        d.node,
        attrs.join(", "),
        d.output,
        fmt_cosine(d.cosine),
        inputs.join("; ")
    )
}

pub fn print_summary(r: &BisectReport, html: &str) {
    crate::outln!(
        "bisect {} on {}: {} tensors compared in {} round(s), threshold {}",
        r.component,
        r.backend,
        r.tensors_compared,
        r.rounds,
        r.threshold
    );
    match &r.first_divergence {
        Some(d) => crate::outln!("{}", describe(d)),
        None => crate::outln!("no intermediate tensor falls below {}", r.threshold),
    }
    crate::outln!("report {html}");
}

pub fn markdown(r: &BisectReport) -> String {
    let mut md = format!(
        "# bisect `{}` ({}) on `{}`\n\nThreshold {} · {} tensors compared in {} round(s)\n\n",
        r.component, r.model, r.backend, r.threshold, r.tensors_compared, r.rounds
    );
    if let Some(d) = &r.first_divergence {
        let _ = writeln!(md, "**{}**\n", describe(d).replace('\n', "  \n"));
    }
    let _ = writeln!(
        md,
        "| # | node | op | tensor | cosine | max abs err |\n|---|---|---|---|---|---|"
    );
    for p in &r.points {
        let _ = writeln!(
            md,
            "| {} | `{}` | {} | `{}` | {} | {:.3e} |",
            p.index,
            p.node,
            p.op_type,
            p.tensor,
            fmt_cosine(p.cosine),
            p.max_abs_err
        );
    }
    md
}

pub fn html(r: &BisectReport) -> String {
    let labels: Vec<String> = r
        .points
        .iter()
        .map(|p| format!("{} {}", p.op_type, p.node))
        .collect();
    let cos: Vec<f64> = r.points.iter().map(|p| p.cosine).collect();
    let svg = crate::report::html::svg_series(
        "bisect-cosine",
        "Cosine along the graph",
        &labels,
        &[("cosine", "#e45756", cos)],
    );
    use crate::report::html::{esc, html_page};
    let first = r
        .first_divergence
        .as_ref()
        .map_or("No divergence below the threshold.".to_string(), describe);
    let body = format!(
        "<h1>bisect {} on {}</h1>\n<p>{}</p>\n<h2>Cosine along the graph</h2>\n{svg}\n{}\n",
        esc(&r.component),
        esc(&r.backend),
        esc(&first),
        crate::report::html::markdown_to_html(&markdown(r))
    );
    html_page(&format!("bisect {}", r.component), &body)
}
