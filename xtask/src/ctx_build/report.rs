//! `reports/<model>/build-soc<N>.json` and `.md`: per component and step, status, duration,
//! output sizes and sha256, graph name, QNN version, every output's cosine, gate result.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::ctx_build::facts::StepFacts;
use crate::ctx_build::fingerprint::StepRecord;
use crate::ctx_build::plan::{PlannedStep, Versions};
use crate::runtime::Runtime;
use crate::soc::Soc;

#[derive(Debug, Clone, Serialize)]
pub struct OutputFile {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    Ran,
    /// Restored from the build cache (`--cache` / `XTASK_CACHE_DIR`): not run here.
    Restored,
    Fresh,
    Failed,
    Skipped,
    /// Not in this run (`--only` left the component alone): its last build, from its record,
    /// not checked for freshness. Kept so that a partial build never drops the others' rows.
    Earlier,
}

#[derive(Debug, Clone, Serialize)]
pub struct StepOutcome {
    pub step: String,
    pub status: StepStatus,
    /// Why the step ran (dirty reasons) or why it failed / was skipped.
    pub reasons: Vec<String>,
    pub seconds: f64,
    pub outputs: Vec<OutputFile>,
    pub detail: serde_json::Value,
    pub error: Option<String>,
    /// The step's typed facts, from its record (None when it failed or was skipped).
    pub facts: Option<StepFacts>,
    /// The cache key it was restored under.
    pub restored_from_cache: Option<String>,
}

impl StepOutcome {
    /// The facts of the step's record entry, shown with the outcome.
    pub fn with_facts(mut self, record: Option<&StepRecord>) -> Self {
        self.facts = record.map(|r| r.facts.clone());
        self
    }

    pub fn restored(
        step: &PlannedStep,
        reasons: Vec<String>,
        seconds: f64,
        outputs: Vec<OutputFile>,
        detail: serde_json::Value,
        key: String,
    ) -> Self {
        StepOutcome {
            status: StepStatus::Restored,
            restored_from_cache: Some(key),
            ..StepOutcome::ran(step, reasons, seconds, outputs, detail)
        }
    }

    pub fn fresh(step: &PlannedStep, record: Option<&StepRecord>, root: &Path) -> Self {
        let outputs = record
            .map(|r| recorded_outputs(r, root))
            .unwrap_or_default();
        StepOutcome {
            step: step.kind.label().into(),
            status: StepStatus::Fresh,
            reasons: vec![],
            seconds: 0.0,
            outputs,
            detail: record.map(|r| r.detail.clone()).unwrap_or_default(),
            error: None,
            facts: record.map(|r| r.facts.clone()),
            restored_from_cache: record.and_then(|r| r.restored_from_cache.clone()),
        }
    }

    /// A step of a component this run left alone (`--only`): its last build, as recorded.
    pub fn earlier(label: &str, record: &StepRecord, root: &Path, why: String) -> Self {
        StepOutcome {
            step: label.into(),
            status: StepStatus::Earlier,
            reasons: vec![why],
            seconds: record.seconds,
            outputs: recorded_outputs(record, root),
            detail: record.detail.clone(),
            error: None,
            facts: Some(record.facts.clone()),
            restored_from_cache: record.restored_from_cache.clone(),
        }
    }

    pub fn ran(
        step: &PlannedStep,
        reasons: Vec<String>,
        seconds: f64,
        outputs: Vec<OutputFile>,
        detail: serde_json::Value,
    ) -> Self {
        StepOutcome {
            step: step.kind.label().into(),
            status: StepStatus::Ran,
            reasons,
            seconds,
            outputs,
            detail,
            error: None,
            facts: None,
            restored_from_cache: None,
        }
    }

    pub fn failed(step: &PlannedStep, reasons: Vec<String>, seconds: f64, error: String) -> Self {
        StepOutcome {
            step: step.kind.label().into(),
            status: StepStatus::Failed,
            reasons,
            seconds,
            outputs: vec![],
            detail: serde_json::Value::Null,
            error: Some(error),
            facts: None,
            restored_from_cache: None,
        }
    }

    pub fn skipped(step: &PlannedStep, why: String) -> Self {
        StepOutcome {
            step: step.kind.label().into(),
            status: StepStatus::Skipped,
            reasons: vec![why],
            seconds: 0.0,
            outputs: vec![],
            detail: serde_json::Value::Null,
            error: None,
            facts: None,
            restored_from_cache: None,
        }
    }
}

/// A record's outputs with their size on disk now (0 when the file is gone).
fn recorded_outputs(record: &StepRecord, root: &Path) -> Vec<OutputFile> {
    record
        .outputs
        .iter()
        .map(|(path, sha)| OutputFile {
            path: path.clone(),
            bytes: std::fs::metadata(root.join(path)).map_or(0, |m| m.len()),
            sha256: sha.clone(),
        })
        .collect()
}

#[derive(Debug, Clone, Serialize)]
pub struct ComponentBuild {
    pub component: String,
    pub pass: bool,
    pub steps: Vec<StepOutcome>,
    /// Cache entries refused (corrupt or partial) and rebuilt, with why.
    pub cache_refused: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BuildReport {
    pub model: String,
    pub soc: Soc,
    pub created_unix: u64,
    pub onnxruntime: String,
    pub qnn: String,
    pub runtime_source: String,
    /// Every tool version, the data root and the inputs' provenance: the line every report
    /// opens with (`report::ToolVersions::summary`).
    pub versions: crate::report::ToolVersions,
    /// The build cache used (`--cache` / `XTASK_CACHE_DIR`), if any.
    pub cache: Option<String>,
    /// Inputs fetched without a manifest (`fetch --unverified`), when any are in use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unverified_inputs: Option<String>,
    pub components: Vec<ComponentBuild>,
    pub pass: bool,
}

impl BuildReport {
    pub fn new(
        model: &str,
        soc: &Soc,
        rt: &Runtime,
        versions: &Versions,
        cache: Option<String>,
        components: Vec<ComponentBuild>,
    ) -> Self {
        BuildReport {
            model: model.into(),
            soc: *soc,
            created_unix: crate::report::now_unix(),
            onnxruntime: versions.onnxruntime.clone(),
            qnn: versions.qnn.clone(),
            runtime_source: rt.libs.source.into(),
            versions: crate::report::ToolVersions::of(rt),
            cache,
            unverified_inputs: None,
            pass: components.iter().all(|c| c.pass),
            components,
        }
    }

    /// Adds the components this run left alone (`earlier::earlier_builds`), in the model's
    /// order; the run's outcome (`pass`) stays its own.
    pub fn with_earlier(
        mut self,
        earlier: Vec<ComponentBuild>,
        model: &crate::recipe::Model,
    ) -> Self {
        self.components.extend(earlier);
        let position = |name: &str| model.components.iter().position(|c| c.name() == name);
        self.components.sort_by_key(|c| position(&c.component));
        self
    }

    pub fn print_summary(&self, report_dir: &str) {
        let count = |s: StepStatus| {
            self.components
                .iter()
                .flat_map(|c| &c.steps)
                .filter(|x| x.status == s)
                .count()
        };
        let restored = match count(StepStatus::Restored) {
            0 if self.cache.is_none() => String::new(),
            n => format!("{n} restored from cache, "),
        };
        crate::outln!(
            "build-ctx {} soc {}: {} step(s) ran, {restored}{} fresh, {} failed, {} skipped; report {report_dir}/build-soc{}.md",
            self.model,
            self.soc.id,
            count(StepStatus::Ran),
            count(StepStatus::Fresh),
            count(StepStatus::Failed),
            count(StepStatus::Skipped),
            self.soc.id
        );
        let kept: Vec<&str> = self
            .components
            .iter()
            .filter(|c| c.steps.iter().all(|s| s.status == StepStatus::Earlier))
            .map(|c| c.component.as_str())
            .collect();
        if !kept.is_empty() {
            crate::outln!(
                "  the report keeps the earlier builds of {} (not in --only)",
                kept.join(", ")
            );
        }
        for c in self.components.iter().filter(|c| !c.pass) {
            for s in c.steps.iter().filter(|s| s.status == StepStatus::Failed) {
                crate::outln!(
                    "FAILED {} at {}: {}",
                    c.component,
                    s.step,
                    s.error.as_deref().unwrap_or("?")
                );
            }
        }
    }
}

pub fn write_build_report(dir: &Path, report: &BuildReport) -> Result<()> {
    let stem = format!("build-soc{}", report.soc.id);
    let md = build_markdown(report);
    crate::report::write_json_and_markdown(dir, &stem, report, &md)?;
    crate::atomic::write_atomic(
        &dir.join(format!("{stem}.html")),
        super::report_html::html(report, &md).as_bytes(),
    )
}

fn build_markdown(r: &BuildReport) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# build-ctx `{}` for soc {} ({}, Hexagon v{})\n",
        r.model,
        r.soc.id,
        r.soc.chips.join(" / "),
        r.soc.htp_arch
    );
    let _ = writeln!(md, "{}\n", r.versions.summary());
    if let Some(c) = &r.cache {
        let _ = writeln!(md, "Build cache: `{c}`\n");
    }
    let _ = writeln!(
        md,
        "| component | step | status | seconds | outputs | detail |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    for c in &r.components {
        for s in &c.steps {
            let outputs: Vec<String> = s
                .outputs
                .iter()
                .map(|o| {
                    format!(
                        "`{}` {} B sha256 `{}`",
                        o.path,
                        o.bytes,
                        &o.sha256[..16.min(o.sha256.len())]
                    )
                })
                .collect();
            let detail = step_detail(s);
            let _ = writeln!(
                md,
                "| `{}` | {} | {:?} | {:.2} | {} | {} |",
                c.component,
                s.step,
                s.status,
                s.seconds,
                outputs.join("<br>"),
                detail.replace('|', "\\|").replace('\n', " ")
            );
        }
    }
    graph_name_note(r, &mut md);
    rewrites_markdown(r, &mut md);
    md
}

/// One line for every context binary whose recipe's `graph_name` could not be honoured (the
/// embedded toolchain names graphs itself), instead of the same sentence in every row.
fn graph_name_note(r: &BuildReport, md: &mut String) {
    let mut names = Vec::new();
    let mut whys: Vec<String> = Vec::new();
    for c in &r.components {
        for s in c.steps.iter() {
            let asked = &s.detail["graph_name_honoured"];
            if asked["honoured"] == false {
                names.push(format!("`{}`", c.component));
                let why = asked["why"].as_str().unwrap_or("").to_string();
                if !whys.contains(&why) {
                    whys.push(why);
                }
            }
        }
    }
    if !names.is_empty() {
        let _ = writeln!(
            md,
            "\nThe recipes' `graph_name` could not be honoured for {}: {}.",
            names.join(", "),
            whys.join("; ")
        );
    }
}

/// The graph rewrites each component's convert step applied (from its record), with the
/// rewritten copy's figures on ORT: QNN built that copy, not the ONNX as committed.
fn rewrites_markdown(r: &BuildReport, md: &mut String) {
    let rows: Vec<(String, crate::rewritten::RewriteCheck)> = r
        .components
        .iter()
        .flat_map(|c| c.steps.iter().map(move |s| (c, s)))
        .filter_map(|(c, s)| match &s.facts {
            Some(StepFacts::Convert(f)) => Some((c.component.clone(), f.rewrites.clone()?)),
            _ => None,
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let table = crate::rewritten::rewrites_table(
        "component",
        rows.iter().flat_map(|(comp, check)| check.cells(comp)),
    );
    let _ = write!(
        md,
        "\n## Graph rewrites\n\nQNN converted a rewritten copy of these ONNX graphs (in `target/rewrite/<model>/<component>/`; the committed ONNX is unchanged; `parity --backend ort` judges it).\n\n{table}"
    );
}

fn step_detail(s: &StepOutcome) -> String {
    if let Some(e) = &s.error {
        return format!("FAILED: {e}");
    }
    let mut parts = Vec::new();
    if let Some(key) = &s.restored_from_cache {
        parts.push(format!("restored from cache `{key}`"));
    }
    if let Some(f) = &s.facts {
        parts.push(f.summary());
    }
    // Whether the recipe's graph_name was honoured is said once below the table, not per row.
    if let Some(g) = s.detail.get("graph_name").and_then(|v| v.as_str()) {
        parts.push(format!("graph `{g}`"));
    } else if let Some(sum) = s.detail.get("summary").and_then(|v| v.as_str()) {
        parts.push(sum.to_string());
    } else if !s.reasons.is_empty() {
        parts.push(s.reasons.join("; "));
    }
    // Beside another step of the process, the figures are the process's, not the step's.
    let shared = s.detail.get("beside_other_steps") == Some(&serde_json::Value::Bool(true));
    let (rss_label, cpu_label) = if shared {
        ("process peak RSS", "CPU ≤")
    } else {
        ("peak RSS", "CPU")
    };
    if let Some(mb) = s.detail.get("peak_rss_mb").and_then(|v| v.as_f64()) {
        parts.push(format!("{rss_label} {mb:.0} MB"));
    }
    if let Some(cpu) = s.detail.get("cpu_s").and_then(|v| v.as_f64()) {
        parts.push(format!("{cpu_label} {cpu:.0} s"));
    }
    if shared {
        parts.push("(beside other steps)".into());
    }
    if let Some(stages) = s.detail.get("compile_stages").and_then(|v| v.as_array()) {
        let slowest = stages
            .iter()
            .filter_map(|st| Some((st[0].as_str()?, st[1].as_f64()?)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((name, secs)) = slowest {
            parts.push(format!(
                "{} compiler stages, slowest {name} {secs:.2} s",
                stages.len()
            ));
        }
    }
    parts.join(" · ")
}
