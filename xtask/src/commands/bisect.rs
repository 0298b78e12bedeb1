//! `cargo xtask bisect <component> --backend cpu|htp`: finds the first operator (in
//! topological order) whose output diverges between ORT's CPU EP (the reference) and the QNN
//! backend, both fed the golden inputs. Intermediate tensors are exposed as extra graph outputs
//! of a copy of the ONNX (the user's file is never edited); when there are more than
//! `--max-outputs`, the search narrows in rounds to the span where divergence starts.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Serialize;

use super::{BackendArg, Ctx, Outcome, backend_for, require_files, select_components};
use crate::parity::component::load_golden;
use crate::onnx::proto::{OnnxSummary, add_graph_outputs, parse_model};
use crate::parity::metrics::compare;
use crate::recipe::load_model;
use crate::report::fmt_cosine;
use crate::runtime::bootstrap::ensure_runtime;
use crate::runtime::{Backend, Runtime};
use crate::tensor::Tensor;

#[derive(clap::Args)]
pub struct Bisect {
    /// The component to bisect.
    component: String,
    #[arg(long, value_enum)]
    backend: BackendArg,
    #[arg(long, default_value = "tiny")]
    model: String,
    /// A tensor diverges when its cosine against the reference falls below this.
    #[arg(long, default_value_t = 0.9999)]
    threshold: f64,
    /// Intermediate tensors exposed per round.
    #[arg(long, default_value_t = 64)]
    max_outputs: usize,
}

#[derive(Debug, Clone, Serialize)]
struct TensorPoint {
    index: usize,
    tensor: String,
    node: String,
    op_type: String,
    cosine: f64,
    max_abs_err: f64,
}

#[derive(Debug, Clone, Serialize)]
struct Divergence {
    node: String,
    op_type: String,
    attributes: Vec<(String, String)>,
    output: String,
    cosine: f64,
    /// Each input with its shape and what is known of it: `cosine …`, `weight`, or
    /// `graph input` (fed identically to both).
    inputs: Vec<(String, Vec<usize>, String)>,
}

#[derive(Debug, Clone, Serialize)]
struct BisectReport {
    model: String,
    component: String,
    backend: String,
    threshold: f64,
    rounds: usize,
    tensors_compared: usize,
    points: Vec<TensorPoint>,
    first_divergence: Option<Divergence>,
}

impl Bisect {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        if self.max_outputs < 2 {
            bail!("--max-outputs must be at least 2");
        }
        if self.backend == BackendArg::Ort {
            bail!("bisect compares a QNN backend against ORT's CPU EP: use --backend cpu or htp");
        }
        let model = load_model(&ctx.root, &self.model)?;
        let comp = *select_components(&model, std::slice::from_ref(&self.component))?
            .first()
            .context("component")?;
        require_files(ctx, &model, &[comp])?;
        let rt = Runtime::load(ensure_runtime(&ctx.root)?)?;
        let backend = backend_for(&model, self.backend);
        let golden = load_golden(&ctx.root, comp)?;
        let onnx_path = ctx.root.join(&comp.file.component.onnx);
        let bytes = std::fs::read(&onnx_path)?;
        let graph = parse_model(&bytes)?;
        let candidates: Vec<(usize, String)> = graph
            .nodes
            .iter()
            .enumerate()
            .flat_map(|(i, n)| {
                n.outputs
                    .iter()
                    .filter(|o| !o.is_empty())
                    .map(move |o| (i, o.clone()))
            })
            .collect();
        let work = ctx
            .root
            .join("target/bisect")
            .join(format!("{}-{}", self.model, comp.name()));
        let mut probe = Probe {
            rt: &rt,
            backend: &backend,
            work: &work,
            original: &onnx_path,
            bytes: &bytes,
            golden: &golden.inputs,
            graph: &graph,
            rounds: 0,
        };
        let mut measured: BTreeMap<usize, (f64, f64)> = BTreeMap::new();
        let (mut lo, mut hi) = (0usize, candidates.len());
        loop {
            let span = &candidates[lo..hi];
            let picked: Vec<usize> = if span.len() <= self.max_outputs {
                (lo..hi).collect()
            } else {
                (0..self.max_outputs)
                    .map(|k| lo + k * (span.len() - 1) / (self.max_outputs - 1))
                    .collect()
            };
            let names: Vec<String> = picked.iter().map(|&i| candidates[i].1.clone()).collect();
            let results = probe.compare(&names)?;
            for (&i, r) in picked.iter().zip(&results) {
                if let Some(r) = r {
                    measured.insert(i, *r);
                }
            }
            let dense = span.len() <= self.max_outputs;
            let first_bad = picked
                .iter()
                .copied()
                .find(|i| measured.get(i).is_some_and(|(c, _)| *c < self.threshold));
            match first_bad {
                _ if dense => break,
                None => break,
                Some(bad) => {
                    let prev_good = picked.iter().copied().rfind(|i| *i < bad);
                    let new_lo = prev_good.map_or(lo, |g| g + 1);
                    if (new_lo, bad + 1) == (lo, hi) {
                        break;
                    }
                    (lo, hi) = (new_lo, bad + 1);
                }
            }
        }
        // Walk back until the divergent node's own inputs are measured and fine, so the report
        // tells whether the operator or what fed it went wrong.
        for _ in 0..16 {
            let Some(&bad) = measured
                .iter()
                .find(|(_, (c, _))| *c < self.threshold)
                .map(|(i, _)| i)
            else {
                break;
            };
            let node = &graph.nodes[candidates[bad].0];
            let missing: Vec<usize> = node
                .inputs
                .iter()
                .filter_map(|inp| candidates.iter().position(|(_, n)| n == inp))
                .filter(|i| !measured.contains_key(i))
                .collect();
            if missing.is_empty() {
                break;
            }
            let names: Vec<String> = missing.iter().map(|&i| candidates[i].1.clone()).collect();
            for (&i, r) in missing.iter().zip(&probe.compare(&names)?) {
                if let Some(r) = r {
                    measured.insert(i, *r);
                }
            }
        }
        let points: Vec<TensorPoint> = measured
            .iter()
            .map(|(&i, &(cosine, max_abs_err))| {
                let node = &graph.nodes[candidates[i].0];
                TensorPoint {
                    index: i,
                    tensor: candidates[i].1.clone(),
                    node: node.name.clone(),
                    op_type: node.op_type.clone(),
                    cosine,
                    max_abs_err,
                }
            })
            .collect();
        let first = points.iter().find(|p| p.cosine < self.threshold).map(|p| {
            divergence(
                &graph,
                &candidates,
                p,
                &measured,
                &golden.inputs,
                &probe.shapes(),
            )
        });
        let report = BisectReport {
            model: self.model.clone(),
            component: comp.name().into(),
            backend: backend.label().into(),
            threshold: self.threshold,
            rounds: probe.rounds,
            tensors_compared: points.len(),
            points,
            first_divergence: first,
        };
        let dir = crate::project::reports_dir(&ctx.root, &self.model);
        let stem = format!("bisect-{}-{}", comp.name(), backend.label());
        crate::report::write_json_and_markdown(&dir, &stem, &report, &markdown(&report))?;
        crate::atomic::write_atomic(&dir.join(format!("{stem}.html")), html(&report).as_bytes())?;
        print_summary(
            &report,
            &crate::project::rel(&ctx.root, &dir.join(format!("{stem}.html"))),
        );
        Ok(Outcome::Success)
    }
}

struct Probe<'a> {
    rt: &'a Runtime,
    backend: &'a Backend,
    work: &'a Path,
    original: &'a Path,
    bytes: &'a [u8],
    golden: &'a BTreeMap<String, Tensor>,
    graph: &'a OnnxSummary,
    rounds: usize,
}

impl Probe<'_> {
    /// One round: a copy of the graph exposing `names`, run on the reference and the backend;
    /// (cosine, max abs error) per name, None for non-float tensors.
    fn compare(&mut self, names: &[String]) -> Result<Vec<Option<(f64, f64)>>> {
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
        Ok(names
            .iter()
            .map(|n| match (reference.get(n), actual.get(n)) {
                (Some(r @ (Tensor::F32(_) | Tensor::F16(_))), Some(a))
                    if r.shape() == a.shape() =>
                {
                    let m = compare(&a.to_f64_vec(), &r.to_f64_vec(), 0.0, 0.0);
                    Some((m.cosine, m.max_abs_err))
                }
                _ => None,
            })
            .collect())
    }

    fn write_copy(&self, names: &[String]) -> Result<PathBuf> {
        write_exposed_copy(self.work, self.original, self.bytes, self.graph, names)
    }

    fn shapes(&self) -> BTreeMap<String, Vec<usize>> {
        std::fs::read(self.work.join("shapes.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
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
    // ORT refuses external data that resolves outside the model's folder (a symlink does), so
    // the data is hard-linked (same filesystem) or copied.
    for loc in &graph.external_data {
        let (from, to) = (original.with_file_name(loc), work.join(loc));
        if std::fs::hard_link(&from, &to).is_err() {
            std::fs::copy(&from, &to)
                .with_context(|| format!("cannot copy external data {loc}"))?;
        }
    }
    let copy = work.join(original.file_name().context("onnx name")?);
    std::fs::write(&copy, add_graph_outputs(bytes, names)?)?;
    Ok(copy)
}

fn divergence(
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

fn print_summary(r: &BisectReport, html: &str) {
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

fn markdown(r: &BisectReport) -> String {
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

fn html(r: &BisectReport) -> String {
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
        "<h1>bisect {} on {}</h1>\n<p>{}</p>\n<h2>Cosine along the graph</h2>\n{svg}\n<pre>{}</pre>\n",
        esc(&r.component),
        esc(&r.backend),
        esc(&first),
        esc(&markdown(r))
    );
    html_page(&format!("bisect {}", r.component), &body)
}
