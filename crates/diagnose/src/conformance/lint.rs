//! The lint: every node a backend would run, joined by operator and attribute set to the
//! committed conformance report, with a warning for each that deviates there, each that the
//! report does not cover, and for a report that is missing or measured other ONNX files.
//! Warnings only: a deviation the recipe accepts (or fixes with a rewrite) must not stop a
//! build. No runtime is loaded, so `build-ctx` runs it before every build.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;

use super::graph::{attr_set, constant_tensors, op_label, swept_nodes};
use super::judge::Verdict;
use super::report::{ConformanceReport, InputHash, Row};
use xtask_base::hashing::HashMemo;
use xtask_onnx::onnx::proto::OnnxSummary;
use xtask_recipe::recipe::Component;

/// What the lint found.
pub struct Lint {
    pub warnings: Vec<Warning>,
    /// Nodes checked against the report.
    pub nodes: usize,
}

pub struct Warning {
    pub text: String,
    /// A deviation seen only on edge-case input sets (zeros, negative, large, fp16-max), never
    /// on the real values or their reshuffling: `build-ctx` counts these instead of listing them.
    pub edge_only: bool,
}

impl Warning {
    fn new(text: String) -> Self {
        Warning {
            text,
            edge_only: false,
        }
    }
}

/// The input sets drawn from the graph's own values; the others are edge cases.
const IN_DISTRIBUTION: [&str; 2] = ["real", "random"];

/// The committed report of a model.
pub fn report_path(root: &Path, model: &str) -> std::path::PathBuf {
    xtask_base::project::reports_dir(root, model).join("conformance.json")
}

/// Lints `comps` of `model` against the report at `report` (see the module docs): the report
/// read (or a warning that it is missing or unreadable), then per component whether the report
/// measured these very files and what it says about each group of the graph's nodes.
pub fn lint(root: &Path, model: &str, comps: &[&Component], report: &Path) -> Result<Lint> {
    let said = Said {
        shown: xtask_base::project::rel(root, report),
        rerun: format!("cargo xtask conformance --model {model}"),
    };
    let mut warnings = Vec::new();
    let report = read_report(report, model, &said, &mut warnings);
    let memo_path = xtask_base::hashing::HashMemo::path_in(root);
    let mut memo = HashMemo::load(&memo_path);
    let measured = measured_sites(report.as_ref());
    let mut nodes = 0;
    for comp in comps {
        let onnx = root.join(&comp.file.component.onnx);
        let graph = xtask_onnx::onnx::proto::read_summary(&onnx)?;
        let consts = constant_tensors(&graph);
        let swept = swept_nodes(&graph, &consts);
        nodes += swept.len();
        let Some(report) = &report else { continue };
        let now = super::input_hash_with(root, comp, &graph.external_data, &mut memo)?;
        warnings.extend(staleness(comp, report, &now, &said));
        let groups = node_groups(comp, &graph, swept, &measured);
        warnings.extend(group_warnings(comp, report, &groups, &said));
    }
    memo.save(&memo_path)?;
    Ok(Lint { warnings, nodes })
}

/// How the warnings name the report (`shown`, relative to the project) and the command that
/// measures it again (`rerun`).
struct Said {
    shown: String,
    rerun: String,
}

/// The committed report, or None with a warning: without it every operator is unchecked, which
/// must not stop a build.
fn read_report(
    path: &Path,
    model: &str,
    said: &Said,
    warnings: &mut Vec<Warning>,
) -> Option<ConformanceReport> {
    let Said { shown, rerun } = said;
    if !path.is_file() {
        warnings.push(Warning::new(format!(
            "no conformance report at {shown}: operators are unchecked; run `{rerun}`"
        )));
        return None;
    }
    match ConformanceReport::read(path, model) {
        Ok(r) => Some(r),
        Err(e) => {
            warnings.push(Warning::new(format!(
                "{shown} is unreadable ({e:#}): operators are unchecked; run `{rerun}`"
            )));
            None
        }
    }
}

/// Each node the report measured (`component/node`) → the shapes of its group (the first
/// group that lists it).
fn measured_sites(report: Option<&ConformanceReport>) -> BTreeMap<&str, &str> {
    let mut measured: BTreeMap<&str, &str> = BTreeMap::new();
    for g in report.iter().flat_map(|r| &r.ops) {
        for site in &g.nodes {
            measured.entry(site.as_str()).or_insert(g.shapes.as_str());
        }
    }
    measured
}

/// A warning when the report did not measure this component, or measured other bytes than
/// the ONNX (and external data) on disk now.
fn staleness(
    comp: &Component,
    report: &ConformanceReport,
    now: &InputHash,
    said: &Said,
) -> Option<Warning> {
    let Said { shown, rerun } = said;
    match report.inputs.iter().find(|h| h.component == comp.name()) {
        None => Some(Warning::new(format!(
            "{}: not measured by {shown}; run `{rerun}`",
            comp.name()
        ))),
        Some(then) if then != now => Some(Warning::new(format!(
            "{}: {shown} is stale: it measured {} with sha256 {} (and its external data), the file now has {}; run `{}`",
            comp.name(),
            then.onnx,
            short(&then.sha256),
            short(&now.sha256),
            report.command
        ))),
        Some(_) => None,
    }
}

/// The swept nodes of a graph by (operator, attribute set, shapes of the group the report
/// measured them in, if it did), with their names.
type NodeGroups = BTreeMap<(String, String, Option<String>), Vec<String>>;

/// A node the report measured is judged by its own group's rows (its shapes); another by every
/// row of its operator and attribute set.
fn node_groups(
    comp: &Component,
    graph: &OnnxSummary,
    swept: Vec<usize>,
    measured: &BTreeMap<&str, &str>,
) -> NodeGroups {
    let mut by_key = NodeGroups::new();
    for i in swept {
        let node = &graph.nodes[i];
        let site = format!("{}/{}", comp.name(), node.name);
        let shapes = measured.get(site.as_str()).map(|s| s.to_string());
        by_key
            .entry((op_label(node), attr_set(node), shapes))
            .or_default()
            .push(node.name.clone());
    }
    by_key
}

/// The warnings of each node group: never measured, or the report's findings for it.
fn group_warnings(
    comp: &Component,
    report: &ConformanceReport,
    groups: &NodeGroups,
    said: &Said,
) -> Vec<Warning> {
    let mut warnings = Vec::new();
    for ((op, attrs, shapes), names) in groups {
        let rows: Vec<&Row> = report
            .rows
            .iter()
            .filter(|r| &r.op == op && &r.attributes == attrs)
            .filter(|r| shapes.as_ref().is_none_or(|s| &r.shapes == s))
            .collect();
        let what = format!(
            "{}: {} node(s) {op} {{{attrs}}} ({}){}",
            comp.name(),
            names.len(),
            sample(names),
            match shapes {
                Some(s) => format!(" on {s}"),
                None => " (not measured as such; the figures of other shapes)".into(),
            }
        );
        if rows.is_empty() {
            warnings.push(Warning::new(format!(
                "{what}: not in {} (never measured)",
                said.shown
            )));
            continue;
        }
        warnings.extend(findings(&rows).into_iter().map(|(f, edge_only)| Warning {
            text: format!("{what} {f}"),
            edge_only,
        }));
    }
    warnings
}

/// Per backend, the worst finding among `rows` (one operator and attribute set), as
/// `DEVIATES on cpu (input sets …; worst max-abs …): what is wrong`, and whether it was seen
/// on edge-case inputs only.
fn findings(rows: &[&Row]) -> Vec<(String, bool)> {
    let mut backends: Vec<xtask_base::vocab::BackendKind> =
        rows.iter().map(|r| r.backend).collect();
    backends.sort();
    backends.dedup();
    let mut out = Vec::new();
    for backend in backends {
        let bad: Vec<&&Row> = rows
            .iter()
            .filter(|r| r.backend == backend && r.verdict.is_finding())
            .collect();
        let Some(worst) = bad.iter().max_by(|a, b| {
            a.verdict
                .cmp(&b.verdict)
                .then(nan_low(a.max_abs).total_cmp(&nan_low(b.max_abs)))
        }) else {
            continue;
        };
        let mut sets: Vec<&str> = Vec::new();
        for r in &bad {
            if !sets.contains(&r.input_set.as_str()) {
                sets.push(&r.input_set);
            }
        }
        let only_edges = worst.verdict == Verdict::Deviates
            && !bad
                .iter()
                .any(|r| IN_DISTRIBUTION.contains(&r.input_set.as_str()));
        let text = format!(
            "{} on {backend} (input sets {}{}{}): {}",
            worst.verdict.label(),
            sets.join(", "),
            if only_edges { ", edge cases only" } else { "" },
            if worst.max_abs.is_finite() && worst.max_abs > 0.0 {
                format!(
                    "; worst max-abs {:.2e}, rel-L2 {:.2e}",
                    worst.max_abs, worst.rel_l2
                )
            } else {
                String::new()
            },
            worst.wrong
        );
        out.push((text, only_edges));
    }
    out
}

fn nan_low(x: f64) -> f64 {
    if x.is_nan() { f64::NEG_INFINITY } else { x }
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

fn sample(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [first, rest @ ..] => format!("{first} and {} more", rest.len()),
    }
}
