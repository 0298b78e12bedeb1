//! The bisect report, `reports/<model>/bisect-<component>-<backend>.{json,md,html}`: a versioned
//! record (`record::Versioned`) of the tensors compared, the first divergent operator with its
//! attributes and what is known of its inputs, or the operators ranked with the verdict; and
//! its renderings as terminal lines, Markdown and a self-contained HTML page.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::tensor_point::TensorPoint;
use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::bisect_tables::{points_table, ranked_table};
use super::rank::Ranked;
use xtask_base::record::Versioned;

use super::probe::GoldenFigure;
use xtask_recipe::recipe::gate::{f64_or_nan, map_f64_or_nan};
use xtask_runtime::report::fmt_cosine;

/// The first tensor below the threshold, with the node that wrote it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Divergence {
    pub node: String,
    pub op_type: String,
    pub attributes: Vec<(String, String)>,
    pub output: String,
    #[serde(deserialize_with = "f64_or_nan")]
    pub cosine: f64,
    /// Each input with its shape and what is known of it: `cosine …`, `weight`, or
    /// `graph input` (fed identically to both).
    pub inputs: Vec<(String, Vec<usize>, String)>,
}

/// What a ranking concludes (`diagnose::verdict` decides it), as the report writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum VerdictKind {
    /// Nothing deviates beyond rounding.
    #[serde(rename = "rounding")]
    Rounding,
    /// One operator introduces the error.
    #[serde(rename = "one culprit")]
    OneCulprit,
    /// The error is spread over the graph.
    #[serde(rename = "spread")]
    Spread,
}

impl VerdictKind {
    /// The word the report and the page use.
    pub fn label(self) -> &'static str {
        match self {
            VerdictKind::Rounding => "rounding",
            VerdictKind::OneCulprit => "one culprit",
            VerdictKind::Spread => "spread",
        }
    }
}

/// One bisect's conclusion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub kind: VerdictKind,
    pub sentence: String,
    /// The command to run next.
    pub next: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BisectReport {
    /// `BisectReport::SCHEMA` (`record::Versioned`; 0 when read from a report written before).
    #[serde(default)]
    pub schema_version: u32,
    pub model: String,
    pub component: String,
    pub backend: xtask_base::vocab::BackendKind,
    /// The cosine threshold of the first-divergence mode; None in ranking mode.
    pub threshold: Option<f64>,
    /// Ranking mode: the operators that introduce the most error, largest first.
    pub ranked: Vec<Ranked>,
    /// `bisect --qdq`: the component's QDQ graph measured against its float graph, both on
    /// ORT's CPU EP (`backend` is then the CPU stage it stands for).
    #[serde(default)]
    pub qdq: bool,
    /// What an exact input counts as in the ranking (fp32 epsilon, or fp16's on an fp16 HTP).
    pub exact_floor: f64,
    /// Cosine of each graph output with the graph as written (nothing exposed)…
    #[serde(deserialize_with = "map_f64_or_nan")]
    pub output_cosine_untapped: BTreeMap<String, f64>,
    /// Each graph output of the untapped run against the golden (cosine, rel-L2): what
    /// `parity` reports for the same component and backend.
    #[serde(default)]
    pub output_vs_golden: BTreeMap<String, GoldenFigure>,
    /// …and the worst over the rounds with intermediates exposed as outputs.
    #[serde(deserialize_with = "map_f64_or_nan")]
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
    pub verdict: Option<Verdict>,
}

/// v1: the first numbered schema; reports written before it carry every field but the number
/// (and the verdict's kind as the same words) and are read as they are.
impl Versioned for BisectReport {
    const KIND: &'static str = "bisect report";
    const SCHEMA: u32 = 1;
    const READS_OLDER: &'static [u32] = &[0];
}

impl BisectReport {
    /// The file stem: `bisect-<component>-<backend>`, `bisect-<component>-qdq` with `--qdq`.
    pub fn stem(&self) -> String {
        match self.qdq {
            true => format!("bisect-{}-qdq", self.component),
            false => stem(&self.component, self.backend),
        }
    }

    /// The report of `component` on `backend` in `dir` (`reports/<model>/`), read through its
    /// type; a missing file, or one of another schema, is refused with the command that
    /// writes it again.
    pub fn read(
        dir: &Path,
        model: &str,
        component: &str,
        backend: xtask_base::vocab::BackendKind,
    ) -> Result<BisectReport> {
        xtask_base::record::read(
            &dir.join(format!("{}.json", stem(component, backend))),
            &format!("cargo xtask bisect {component} --backend {backend} --model {model}"),
        )
    }

    /// Whether the ranking says more than rounding (a ranking of pure rounding is not shown).
    fn ranking_meaningful(&self) -> bool {
        self.verdict
            .as_ref()
            .is_none_or(|v| v.kind != VerdictKind::Rounding)
    }
}

fn stem(component: &str, backend: xtask_base::vocab::BackendKind) -> String {
    format!("bisect-{component}-{}", backend.label())
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

/// Each graph output: against the golden (the figure `parity` reports), against the reference
/// untapped and with intermediates exposed (the tables' figures), and why the last two differ
/// when they do.
fn output_lines(r: &BisectReport) -> Vec<String> {
    let reference = match r.qdq {
        true => "the float graph",
        false => "ORT's CPU EP",
    };
    let mut lines: Vec<String> = r
        .output_cosine_untapped
        .iter()
        .map(|(name, u)| {
            let t = r
                .output_cosine_tapped
                .get(name)
                .map_or("-".into(), |t| fmt_cosine(*t));
            let golden = r.output_vs_golden.get(name).map_or(String::new(), |g| {
                format!(
                    "against the golden cosine {} (rel-L2 {:.1e}), as `parity` measures it; ",
                    fmt_cosine(g.cosine),
                    g.rel_l2
                )
            });
            format!(
                "graph output {name}: {golden}against {reference} cosine {} as built, {t} with intermediates exposed (the tables' figures)",
                fmt_cosine(*u)
            )
        })
        .collect();
    if r.taps_changed_outputs {
        lines.push("warning: exposing intermediate tensors changed the backend's output (beyond 1e-9 in cosine): the tables' figures describe the graph compiled with its intermediates exposed, not the binary `parity` measures".into());
    }
    lines
}

/// What the two sides are: the backend against ORT's CPU EP, or the QDQ graph against the
/// float one.
pub fn sides(r: &BisectReport) -> String {
    match r.qdq {
        true => "the QDQ graph (ORT CPU EP) against the float graph".into(),
        false => format!("{} against ORT's CPU EP", r.backend),
    }
}

/// The terminal lines: the mode, the divergence or the verdict and ranking, each graph output,
/// the next command and where the page is.
pub fn print_summary(r: &BisectReport, html: &str) {
    xtask_base::outln!(
        "bisect {}, {}: {} tensors compared in {} round(s), {}",
        r.component,
        sides(r),
        r.tensors_compared,
        r.rounds,
        mode(r)
    );
    match (r.threshold, &r.first_divergence) {
        (None, _) => {
            if let Some(v) = &r.verdict {
                xtask_base::outln!("verdict: {}", v.sentence);
            }
            // Only a real deviation makes the ranking meaningful (all 1.0: ranked rounding).
            if r.ranking_meaningful() {
                xtask_base::outln!("operators by error introduced (largest first):");
                ranked_lines(r)
                    .iter()
                    .for_each(|l| xtask_base::outln!("  {l}"));
            }
        }
        (Some(_), Some(d)) => xtask_base::outln!("{}", describe(d)),
        (Some(t), None) => xtask_base::outln!("no intermediate tensor falls below {t}"),
    }
    output_lines(r)
        .iter()
        .for_each(|l| xtask_base::outln!("{l}"));
    if let Some(v) = &r.verdict {
        xtask_base::outln!("next: {}", v.next);
    }
    xtask_base::outln!("report {html}");
}

/// The report as Markdown: the mode, each graph output, the divergence or the verdict, then
/// the ranking (when it says more than rounding) and every tensor compared.
pub fn markdown(r: &BisectReport) -> String {
    let mut md = format!(
        "# bisect `{}` ({}): {}\n\n{} · {} tensors compared in {} round(s)\n\n",
        r.component,
        r.model,
        sides(r),
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
    if r.threshold.is_none() && r.ranking_meaningful() {
        md.push_str("## Operators by error introduced\n\n");
        md.push_str(&ranked_table(&r.ranked));
        md.push_str("\n## Every tensor\n\n");
    }
    md.push_str(&points_table(&r.points));
    md
}

/// The page: the verdict box, the cosine along the graph, then the Markdown's tables.
pub fn html(r: &BisectReport) -> String {
    use xtask_runtime::report::html::{Series, html_page, markdown_body, svg_series, verdict_box};
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
            if v.kind == VerdictKind::Rounding {
                "pass"
            } else {
                "fail"
            },
            v.kind.label(),
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

#[cfg(test)]
#[path = "bisect_report_tests.rs"]
mod tests;
