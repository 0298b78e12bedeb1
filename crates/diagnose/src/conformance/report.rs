//! The conformance report: `reports/<model>/conformance.{json,md}`, committed so that `lint`
//! (and `build-ctx` through it) can warn about a graph's operators before anything is built.
//! It carries what makes its figures reproducible: the exact command, the seed, the tool
//! versions and the hashes of the ONNX files it measured. The JSON is a versioned record
//! (`record::Versioned`), read back through its type.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::judge::{Bound, Verdict};
use xtask_base::record::Versioned;
use xtask_recipe::recipe::gate::f64_or_nan;
use xtask_runtime::report::{ToolVersions, md_table};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConformanceReport {
    /// `ConformanceReport::SCHEMA` (`record::Versioned`; 0 when read from a report written
    /// before, such as the committed `reports/tiny/conformance.json`).
    #[serde(default)]
    pub schema_version: u32,
    pub model: String,
    /// The command that reproduces every figure below.
    pub command: String,
    pub seed: u64,
    /// Seconds since the Unix epoch.
    pub created_unix: u64,
    pub versions: ToolVersions,
    /// Emulator or device, when the HTP was measured.
    pub htp: Option<xtask_runtime::runtime::probe::HtpKind>,
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
    pub backend: xtask_base::vocab::BackendKind,
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

/// v1: the first numbered schema; reports written before it carry every field but the number
/// and are read as they are.
impl Versioned for ConformanceReport {
    const KIND: &'static str = "conformance report";
    const SCHEMA: u32 = 1;
    const READS_OLDER: &'static [u32] = &[0];
}

impl ConformanceReport {
    /// The report at `path` (written for `model`), read through its type; another schema is
    /// refused with the command that measures it again.
    pub fn read(path: &Path, model: &str) -> Result<Self> {
        xtask_base::record::read(path, &format!("cargo xtask conformance --model {model}"))
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
        (0, false) => xtask_runtime::report::fmt_cosine(r.cosine),
        (n, false) => format!(
            "{} (finite part; {n} NaN/Inf)",
            xtask_runtime::report::fmt_cosine(r.cosine)
        ),
    }
}

/// The report as Markdown: how to reproduce it and with what, the files measured, the bounds,
/// the input sets, then the findings before the operators and every row.
pub fn markdown(r: &ConformanceReport) -> String {
    let mut md = header(r);
    md.push_str(&inputs_table(r));
    md.push_str(&bounds_section(r));
    md.push_str(&input_sets_section(r));
    md.push_str(&findings_section(r));
    let _ = writeln!(md, "\n## Operators ({})\n", r.ops.len());
    md.push_str(&ops_table(&r.ops));
    let _ = writeln!(md, "\n## Every row ({})\n", r.rows.len());
    table(&mut md, &r.rows.iter().collect::<Vec<_>>());
    md
}

/// The title, what was measured against what, the command that reproduces it, the tools and
/// the HTP (emulated or a device).
fn header(r: &ConformanceReport) -> String {
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
    md
}

/// The ONNX files measured and their external data, with their sha256 (what `lint` compares
/// with the files on disk).
fn inputs_table(r: &ConformanceReport) -> String {
    md_table(
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
    )
}

/// Each backend's bound with the reason for it, and what deviating means.
fn bounds_section(r: &ConformanceReport) -> String {
    let mut md = String::from("\n## Bounds\n\n");
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
    md
}

fn input_sets_section(r: &ConformanceReport) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "## Input sets\n\nOnly float data inputs change; integer inputs keep the graph's values, constants stay as the graph holds them.\n"
    );
    for s in &r.input_sets {
        let _ = writeln!(md, "- `{}`: {}", s.name, s.what);
    }
    md
}

/// The rows `lint` warns about, or the sentence that there are none.
fn findings_section(r: &ConformanceReport) -> String {
    let mut md = String::new();
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
    md
}

/// Each operator group with the nodes it stands for and the command that measures it again.
fn ops_table(ops: &[OpGroup]) -> String {
    md_table(
        &["op", "attributes", "shapes", "nodes", "reproduce"],
        ops.iter().map(|o| {
            vec![
                o.op.clone(),
                o.attributes.clone(),
                o.shapes.clone(),
                o.nodes.join(", "),
                format!("`{}`", o.repro),
            ]
        }),
    )
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
    use super::*;

    fn committed_dir() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../reports/tiny")
    }

    /// The committed report (written before reports carried a schema number: read as schema 0).
    fn committed() -> ConformanceReport {
        ConformanceReport::read(&committed_dir().join("conformance.json"), "tiny").unwrap()
    }

    /// The committed report's Markdown is exactly what its JSON renders to (nothing edited by
    /// hand, and the table writer did not change what it says).
    #[test]
    fn the_committed_markdown_is_the_rendering_of_the_committed_json() {
        let dir = committed_dir();
        let report = committed();
        assert_eq!(
            report.schema_version, 0,
            "the committed report has no number"
        );
        // `XTASK_BLESS=1` re-renders the committed Markdown after a change of the renderer.
        if std::env::var_os("XTASK_BLESS").is_some() {
            std::fs::write(dir.join("conformance.md"), markdown(&report)).unwrap();
        }
        let committed = std::fs::read_to_string(dir.join("conformance.md")).unwrap();
        assert!(markdown(&report) == committed, "conformance.md differs");
    }

    #[test]
    fn the_conformance_report_round_trips_through_its_type_nan_included() {
        let mut r = committed();
        r.schema_version = ConformanceReport::SCHEMA;
        r.rows[0].cosine = f64::NAN;
        r.rows[0].max_abs = f64::NAN;
        r.rows[1].rel_l2 = f64::NAN;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conformance.json");
        xtask_base::record::write(&path, &r).unwrap();
        let back = ConformanceReport::read(&path, "tiny").unwrap();
        assert_eq!(back.schema_version, ConformanceReport::SCHEMA);
        assert!(back.rows[0].cosine.is_nan() && back.rows[0].max_abs.is_nan());
        assert!(back.rows[1].rel_l2.is_nan());
        assert_eq!(back.inputs, r.inputs);
        assert_eq!(back.bounds, r.bounds);
        // Re-serialised, the two are the same document, and render the same Markdown.
        assert_eq!(
            serde_json::to_string(&back).unwrap(),
            serde_json::to_string(&r).unwrap()
        );
        assert_eq!(markdown(&back), markdown(&r));
    }

    #[test]
    fn a_conformance_report_of_a_newer_schema_is_refused_with_the_command() {
        let mut json: serde_json::Value = serde_json::from_slice(
            &std::fs::read(committed_dir().join("conformance.json")).unwrap(),
        )
        .unwrap();
        assert!(json.get("schema_version").is_none());
        json["schema_version"] = 2.into();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conformance.json");
        std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
        let err = format!("{:#}", ConformanceReport::read(&path, "tiny").unwrap_err());
        assert!(
            err.contains("conformance.json")
                && err.contains("schema 2, newer than this tool reads")
                && err.contains("`cargo xtask conformance --model tiny` writes it again"),
            "{err}"
        );
    }
}
