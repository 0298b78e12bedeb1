//! The conformance report: `reports/<model>/conformance.{json,md}`, committed so that `lint`
//! (and `build-ctx` through it) can warn about a graph's operators before anything is built.
//! It carries what makes its figures reproducible: the exact command, the seed, the tool
//! versions and the hashes of the ONNX files it measured.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::judge::{Bound, Verdict};
use crate::parity::metrics::f64_or_nan;
use crate::report::{ToolVersions, md_table};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConformanceReport {
    pub model: String,
    /// The command that reproduces every figure below.
    pub command: String,
    pub seed: u64,
    /// Seconds since the Unix epoch.
    pub created_unix: u64,
    pub versions: ToolVersions,
    /// Emulator or device, when the HTP was measured.
    pub htp: Option<crate::runtime::probe::HtpKind>,
    /// The ONNX files measured (the lint compares them with the files on disk).
    pub inputs: Vec<InputHash>,
    pub input_sets: Vec<Described>,
    pub bounds: Vec<Bound>,
    pub ops: Vec<OpGroup>,
    pub rows: Vec<Row>,
    /// Seconds the sweep took.
    pub seconds: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputHash {
    pub component: String,
    /// Relative to the project root.
    pub onnx: String,
    pub sha256: String,
    /// External-data files beside it: (file name, sha256).
    pub external_data: Vec<(String, String)>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Described {
    pub name: String,
    pub what: String,
}

/// One operator with one attribute set and one input signature, as the graphs use it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpGroup {
    pub op: String,
    pub attributes: String,
    /// Input dtypes and shapes; `const` marks initializers and folded constants.
    pub shapes: String,
    /// `component/node` of every node with this key; the first one's values are `real`.
    pub nodes: Vec<String>,
    /// The one command that measures this operator again.
    pub repro: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub op: String,
    pub attributes: String,
    pub shapes: String,
    pub backend: crate::vocab::BackendKind,
    /// An input set's name, or `-` when the backend refused the operator before any ran.
    pub input_set: String,
    #[serde(deserialize_with = "f64_or_nan")]
    pub cosine: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub max_abs: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub rel_l2: f64,
    pub non_finite: usize,
    pub verdict: Verdict,
    /// What is wrong (empty when within the bound).
    pub wrong: String,
}

impl ConformanceReport {
    pub fn read(path: &Path) -> Result<Self> {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_slice(&bytes)
            .with_context(|| format!("{} is not a conformance report", path.display()))
    }

    /// The rows that are findings (see `Verdict::is_finding`).
    pub fn findings(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.verdict.is_finding())
    }
}

fn num(x: f64) -> String {
    if x.is_nan() {
        "—".into()
    } else {
        format!("{x:.3e}")
    }
}

fn cosine(r: &Row) -> String {
    match (r.non_finite, r.cosine.is_nan()) {
        (_, true) => "—".into(),
        (0, false) => crate::report::fmt_cosine(r.cosine),
        (n, false) => format!(
            "{} (finite part; {n} NaN/Inf)",
            crate::report::fmt_cosine(r.cosine)
        ),
    }
}

pub fn markdown(r: &ConformanceReport) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Operator conformance: `{}`\n", r.model);
    let _ = writeln!(
        md,
        "Every operator the graphs run, alone, on the QNN backends against ONNX Runtime's CPU EP \
         (same inputs, same single-node model). Reproduce: `{}` (seed {}, {:.0} s).\n",
        r.command, r.seed, r.seconds
    );
    let _ = writeln!(
        md,
        "Tools: {}.{}\n",
        r.versions.summary(),
        r.htp
            .as_ref()
            .map(|h| format!(
                " HTP: {} ({}).",
                if h.emulated { "emulated" } else { "device" },
                h.basis
            ))
            .unwrap_or_default()
    );
    md.push_str(&md_table(
        &["component", "ONNX", "sha256"],
        r.inputs.iter().flat_map(|i| {
            std::iter::once(vec![
                i.component.clone(),
                format!("`{}`", i.onnx),
                format!("`{}`", i.sha256),
            ])
            .chain(
                i.external_data.iter().map(|(file, sha)| {
                    vec![String::new(), format!("`{file}`"), format!("`{sha}`")]
                }),
            )
        }),
    ));
    md.push_str("\n## Bounds\n\n");
    md.push_str(&md_table(
        &["backend", "precision", "atol", "rtol", "rel-L2", "why"],
        r.bounds.iter().map(|b| {
            vec![
                b.backend.to_string(),
                b.precision.to_string(),
                format!("{:.0e}", b.atol),
                format!("{:.0e}", b.rtol),
                format!("{:.0e}", b.rel_l2),
                b.why.to_string(),
            ]
        }),
    ));
    let _ = writeln!(
        md,
        "\nAn output deviates when max-abs > atol + rtol · max|reference| or rel-L2 > the bound, or when NaN/Inf appear on one side only; integer outputs must match exactly. `range`: the reference exceeds fp16's 65504, which the HTP cannot hold (not an operator fault). `lint` warns about DEVIATES, UNSUPPORTED and ERROR rows.\n"
    );
    let _ = writeln!(
        md,
        "## Input sets\n\nOnly float data inputs change; integer inputs keep the graph's values, constants stay as the graph holds them.\n"
    );
    for s in &r.input_sets {
        let _ = writeln!(md, "- `{}`: {}", s.name, s.what);
    }
    let findings: Vec<&Row> = r.findings().collect();
    let _ = writeln!(md, "\n## Findings ({})\n", findings.len());
    if findings.is_empty() {
        let _ = writeln!(
            md,
            "None: every operator is within its backend's bound on every input set."
        );
    } else {
        table(&mut md, &findings);
    }
    let _ = writeln!(md, "\n## Operators ({})\n", r.ops.len());
    md.push_str(&md_table(
        &["op", "attributes", "shapes", "nodes", "reproduce"],
        r.ops.iter().map(|o| {
            vec![
                o.op.clone(),
                o.attributes.clone(),
                o.shapes.clone(),
                o.nodes.join(", "),
                format!("`{}`", o.repro),
            ]
        }),
    ));
    let _ = writeln!(md, "\n## Every row ({})\n", r.rows.len());
    table(&mut md, &r.rows.iter().collect::<Vec<_>>());
    md
}

fn table(md: &mut String, rows: &[&Row]) {
    md.push_str(&md_table(
        &[
            "op",
            "attributes",
            "shapes",
            "backend",
            "input set",
            "cosine",
            "max-abs",
            "rel-L2",
            "verdict",
            "what is wrong",
        ],
        rows.iter().map(|x| {
            vec![
                x.op.clone(),
                x.attributes.clone(),
                x.shapes.clone(),
                x.backend.to_string(),
                x.input_set.clone(),
                cosine(x),
                num(x.max_abs),
                num(x.rel_l2),
                x.verdict.label().to_string(),
                x.wrong.clone(),
            ]
        }),
    ));
}

#[cfg(test)]
mod tests {
    /// The committed report's Markdown is exactly what its JSON renders to (nothing edited by
    /// hand, and the table writer did not change what it says).
    #[test]
    fn the_committed_markdown_is_the_rendering_of_the_committed_json() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/tiny");
        let report = super::ConformanceReport::read(&dir.join("conformance.json")).unwrap();
        // `XTASK_BLESS=1` re-renders the committed Markdown after a change of the renderer.
        if std::env::var_os("XTASK_BLESS").is_some() {
            std::fs::write(dir.join("conformance.md"), super::markdown(&report)).unwrap();
        }
        let committed = std::fs::read_to_string(dir.join("conformance.md")).unwrap();
        assert!(
            super::markdown(&report) == committed,
            "conformance.md differs"
        );
    }
}
