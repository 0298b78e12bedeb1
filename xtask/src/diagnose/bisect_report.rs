//! The bisect report: the tensors compared, the first divergent operator with its attributes
//! and what is known of its inputs; as JSON, Markdown and a self-contained HTML page.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::onnx::proto::OnnxSummary;
use crate::report::{fmt_cosine, md_table};
use crate::tensor::Tensor;

#[derive(Debug, Clone, Serialize)]
pub struct TensorPoint {
    pub index: usize,
    pub tensor: String,
    pub node: String,
    pub op_type: String,
    pub cosine: f64,
    pub max_abs_err: f64,
    pub rel_l2_err: f64,
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
    pub backend: crate::vocab::BackendKind,
    /// The cosine threshold of the first-divergence mode; None in ranking mode.
    pub threshold: Option<f64>,
    /// Ranking mode: the operators that introduce the most error, largest first.
    pub ranked: Vec<super::rank::Ranked>,
    /// What an exact input counts as in the ranking (fp32 epsilon, or fp16's on an fp16 HTP).
    pub exact_floor: f64,
    /// Cosine of each graph output with the graph as written (nothing exposed)…
    pub output_cosine_untapped: BTreeMap<String, f64>,
    /// …and the worst over the rounds with intermediates exposed as outputs.
    pub output_cosine_tapped: BTreeMap<String, f64>,
    /// The two differ by more than 1e-9: exposing intermediates changed the backend's numerics,
    /// so the intermediate figures describe a slightly different compiled graph.
    pub taps_changed_outputs: bool,
    pub rounds: usize,
    pub tensors_compared: usize,
    pub points: Vec<TensorPoint>,
    pub first_divergence: Option<Divergence>,
    /// Ranking mode: what the ranking means (rounding only, one culprit, or spread), with the
    /// next command (`diagnose::verdict`).
    pub verdict: Option<super::verdict::Verdict>,
}

pub fn divergence(
    graph: &OnnxSummary,
    candidates: &[(usize, String)],
    p: &TensorPoint,
    measured: &super::bisect::Measured,
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

/// The mode line: the threshold, or what the ranking divides by.
fn mode(r: &BisectReport) -> String {
    match r.threshold {
        Some(t) => format!("threshold {t}"),
        None => format!(
            "ranked by error introduced (output rel-L2 / worst input rel-L2, exact = {:.1e}{})",
            r.exact_floor,
            if r.exact_floor == super::rank::FP16_FLOOR {
                ", fp16's unit roundoff: the HTP rounds every tensor to fp16"
            } else {
                ""
            }
        ),
    }
}

/// The ranked operators, one line each.
fn ranked_lines(r: &BisectReport) -> Vec<String> {
    r.ranked
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let attrs: Vec<String> = x.attributes.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!(
                "{}. {} `{}` ({}) → {}: introduced {:.3e} (rel-L2 {:.3e}, cosine {}; worst input {} rel-L2 {:.3e})",
                i + 1,
                x.op_type,
                x.node,
                attrs.join(", "),
                x.tensor,
                x.introduced,
                x.rel_l2_err,
                fmt_cosine(x.cosine),
                x.worst_input.as_deref().unwrap_or("-"),
                x.worst_input_rel_l2
            )
        })
        .collect()
}

/// Each graph output's cosine untapped and tapped, and a warning when they differ.
fn output_lines(r: &BisectReport) -> Vec<String> {
    let mut lines: Vec<String> = r
        .output_cosine_untapped
        .iter()
        .map(|(name, u)| {
            let t = r
                .output_cosine_tapped
                .get(name)
                .map_or("-".into(), |t| fmt_cosine(*t));
            format!(
                "graph output {name}: cosine {} untapped, {t} with intermediates exposed",
                fmt_cosine(*u)
            )
        })
        .collect();
    if r.taps_changed_outputs {
        lines.push("warning: exposing intermediate tensors changed the backend's output (beyond 1e-9 in cosine): the intermediate figures describe a slightly different compiled graph".into());
    }
    lines
}

pub fn print_summary(r: &BisectReport, html: &str) {
    crate::outln!(
        "bisect {} on {}: {} tensors compared in {} round(s), {}",
        r.component,
        r.backend,
        r.tensors_compared,
        r.rounds,
        mode(r)
    );
    match (r.threshold, &r.first_divergence) {
        (None, _) => {
            if let Some(v) = &r.verdict {
                crate::outln!("verdict: {}", v.sentence);
            }
            // Only a real deviation makes the ranking meaningful (all 1.0: ranked rounding).
            if r.verdict.as_ref().is_none_or(|v| v.kind != "rounding") {
                crate::outln!("operators by error introduced (largest first):");
                ranked_lines(r).iter().for_each(|l| crate::outln!("  {l}"));
            }
        }
        (Some(_), Some(d)) => crate::outln!("{}", describe(d)),
        (Some(t), None) => crate::outln!("no intermediate tensor falls below {t}"),
    }
    output_lines(r).iter().for_each(|l| crate::outln!("{l}"));
    if let Some(v) = &r.verdict {
        crate::outln!("next: {}", v.next);
    }
    crate::outln!("report {html}");
}

pub fn markdown(r: &BisectReport) -> String {
    let mut md = format!(
        "# bisect `{}` ({}) on `{}`\n\n{} · {} tensors compared in {} round(s)\n\n",
        r.component,
        r.model,
        r.backend,
        mode(r),
        r.tensors_compared,
        r.rounds
    );
    for l in output_lines(r) {
        let _ = writeln!(md, "{l}\n");
    }
    if let Some(d) = &r.first_divergence {
        let _ = writeln!(md, "**{}**\n", describe(d).replace('\n', "  \n"));
    }
    if let Some(v) = &r.verdict {
        let _ = writeln!(md, "**Verdict:** {}\n\nNext: `{}`\n", v.sentence, v.next);
    }
    let meaningful = r.verdict.as_ref().is_none_or(|v| v.kind != "rounding");
    if r.threshold.is_none() && meaningful {
        md.push_str("## Operators by error introduced\n\n");
        md.push_str(&md_table(
            &[
                "rank",
                "op",
                "node",
                "output",
                "introduced",
                "rel L2",
                "cosine",
                "worst input",
                "its rel L2",
            ],
            r.ranked.iter().enumerate().map(|(i, x)| {
                vec![
                    (i + 1).to_string(),
                    x.op_type.clone(),
                    format!("`{}`", x.node),
                    format!("`{}`", x.tensor),
                    format!("{:.3e}", x.introduced),
                    format!("{:.3e}", x.rel_l2_err),
                    fmt_cosine(x.cosine),
                    x.worst_input
                        .as_deref()
                        .map_or("-".into(), |w| format!("`{w}`")),
                    format!("{:.3e}", x.worst_input_rel_l2),
                ]
            }),
        ));
        md.push_str("\n## Every tensor\n\n");
    }
    md.push_str(&md_table(
        &[
            "#",
            "node",
            "op",
            "tensor",
            "cosine",
            "max abs err",
            "rel L2",
        ],
        r.points.iter().map(|p| {
            vec![
                p.index.to_string(),
                format!("`{}`", p.node),
                p.op_type.clone(),
                format!("`{}`", p.tensor),
                fmt_cosine(p.cosine),
                format!("{:.3e}", p.max_abs_err),
                format!("{:.3e}", p.rel_l2_err),
            ]
        }),
    ));
    md
}

pub fn html(r: &BisectReport) -> String {
    use crate::report::html::{Series, html_page, markdown_body, svg_series, verdict_box};
    let labels: Vec<String> = r
        .points
        .iter()
        .map(|p| format!("{} {}", p.op_type, p.node))
        .collect();
    let cos: Vec<f64> = r.points.iter().map(|p| p.cosine).collect();
    let svg = svg_series(
        "bisect-cosine",
        "Cosine along the graph",
        &labels,
        &[Series {
            name: "cosine",
            color: "#e45756",
            values: cos,
        }],
        r.threshold,
    );
    let top = match (&r.verdict, &r.first_divergence) {
        (Some(v), _) => verdict_box(
            if v.kind == "rounding" { "pass" } else { "fail" },
            v.kind,
            &v.sentence,
            &[format!("next: `{}`", v.next)],
        ),
        (None, Some(d)) => verdict_box("fail", "diverges", &describe(d), &[]),
        (None, None) => verdict_box("pass", "no divergence", "below the threshold", &[]),
    };
    let body = format!(
        "{top}<h2>Cosine along the graph</h2>\n{svg}\n{}",
        markdown_body(&markdown(r))
    );
    html_page(
        &format!("bisect {} ({}) on {}", r.component, r.model, r.backend),
        &body,
    )
}
