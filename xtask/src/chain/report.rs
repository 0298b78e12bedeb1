//! Reports of `cargo xtask run`: chain parity along every boundary, per-layer K/V cosine, the
//! actions against the expected ones, latency percentiles; as JSON, Markdown and a
//! self-contained HTML page with inline SVG plots (no network needed to open it).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use ndarray::ArrayD;
use serde::{Deserialize, Serialize};

use crate::recipe::gate::{f64_or_nan, map_vec_f64_or_nan, vec_f64_or_nan};

pub use super::latency::LatencyStats;
use crate::parity::gate::{Expected, Gate, Status};
use crate::parity::metrics::Metrics;
use crate::record::Versioned;
use crate::report::{ToolVersions, fmt_cosine, md_table};

/// One boundary tensor of the chain, judged by the model's chain gate.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BoundaryParity {
    pub name: String,
    pub shape: Vec<usize>,
    /// None when there was nothing to compare (ungated, or a shape mismatch).
    pub metrics: Option<Metrics>,
    /// `pass`, `fail` or `ungated`.
    pub status: Status,
    /// Why it failed, or why it is ungated.
    pub reasons: Vec<String>,
    /// True only when it was compared and passed (an ungated boundary is not a pass).
    pub pass: bool,
    /// The same boundary with its component fed its golden inputs (teacher-forced chain).
    pub golden_inputs: Option<Metrics>,
    /// Share of the error its component introduced (`chain::introduced::introduced_share`).
    pub introduced: Option<f64>,
}

impl BoundaryParity {
    /// Judges one boundary against its golden value; `want` is `Err(reason)` when the golden
    /// holds no reference for it.
    pub fn new(
        name: &str,
        got: &ArrayD<f32>,
        want: Result<&ArrayD<f32>, String>,
        gate: &Gate,
    ) -> Self {
        let g: Vec<f64> = got.iter().map(|&v| f64::from(v)).collect();
        let want = want.map(|w| {
            (
                w.shape(),
                w.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(),
            )
        });
        let expected = match &want {
            Ok((shape, values)) => Expected::Tensor { shape, values },
            Err(reason) => Expected::Missing(reason.clone()),
        };
        let judged = gate.judge_tensor(got.shape(), &g, expected);
        BoundaryParity {
            name: name.into(),
            shape: got.shape().to_vec(),
            metrics: judged.metrics,
            pass: judged.status == Status::Pass,
            status: judged.status,
            reasons: judged.reasons,
            golden_inputs: None,
            introduced: None,
        }
    }

    pub(super) fn result_word(&self) -> &'static str {
        match self.status {
            Status::Pass => "pass",
            Status::Fail => "FAIL",
            Status::Ungated => "UNGATED",
        }
    }
}

/// What a chain run measured (and the gate it is judged by).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInputs {
    pub model: String,
    pub backend: crate::vocab::BackendKind,
    pub htp_emulated: Option<bool>,
    /// For `htp`: emulator or device, how that was known, and the SoC when reported.
    pub htp: Option<crate::runtime::probe::HtpKind>,
    pub mode: String,
    pub versions: ToolVersions,
    /// LLM layers per split, Euler steps, de-normalisation per action dim.
    pub layout: super::layout::ChainLayout,
    pub iters: usize,
    pub warmup: usize,
    pub boundaries: Vec<BoundaryParity>,
    /// Components that ran on ORT's CPU EP in fp32 instead of the backend (`--fp32`).
    pub fp32: Vec<String>,
    /// `--attribute`: the components ranked by the error each removes in fp32.
    pub attribution: Option<super::whatif::Attribution>,
    #[serde(deserialize_with = "vec_f64_or_nan")]
    pub keys_per_layer_cosine: Vec<f64>,
    #[serde(deserialize_with = "vec_f64_or_nan")]
    pub values_per_layer_cosine: Vec<f64>,
    pub actions_max_abs_gate: f64,
    /// The chain gate's minimum cosine for every boundary (`[host.gate] min_cosine`).
    pub min_cosine_gate: f64,
    pub latency: Vec<LatencyStats>,
    #[serde(deserialize_with = "map_vec_f64_or_nan")]
    pub load_ms: BTreeMap<String, Vec<f64>>,
    /// Share of the end-to-end time spent outside model runs and session loads (host work).
    #[serde(deserialize_with = "f64_or_nan")]
    pub host_fraction: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub peak_rss_mb: f64,
}

/// What a chain run measured plus what it concludes (the JSON has the facts' fields inline).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    /// `RunReport::SCHEMA` (`record::Versioned`; 0 when read from a report written before).
    #[serde(default)]
    pub schema_version: u32,
    #[serde(flatten)]
    pub run: RunInputs,
    pub created_unix: u64,
    pub actions_max_abs_err: Option<f64>,
    pub actions_cosine: Option<f64>,
    pub failures: Vec<String>,
    /// Boundaries with nothing to compare against, each with the reason (not a failure, not a
    /// pass either).
    pub ungated: Vec<String>,
    pub pass: bool,
}

impl RunReport {
    pub fn new(run: RunInputs) -> Self {
        let actions_boundary = run.boundaries.iter().find(|b| b.name == "actions");
        let actions_status = actions_boundary.map(|b| b.status);
        let actions = actions_boundary.and_then(|b| b.metrics.clone());
        let reasons_of = |status: Status| -> Vec<String> {
            run.boundaries
                .iter()
                .filter(|b| b.status == status)
                .map(|b| format!("{}: {}", b.name, b.reasons.join("; ")))
                .collect()
        };
        let mut failures = reasons_of(Status::Fail);
        let ungated = reasons_of(Status::Ungated);
        match (&actions, actions_status) {
            (Some(m), _) if m.max_abs_err > run.actions_max_abs_gate => failures.push(format!(
                "actions: max abs error {:.3e} > gate {:.0e}",
                m.max_abs_err, run.actions_max_abs_gate
            )),
            // Compared and failed (a shape mismatch): its reason is listed already.
            (None, Some(Status::Fail)) => {}
            (None, _) => failures.push("actions: the golden holds no expected actions".into()),
            _ => {}
        }
        RunReport {
            schema_version: <Self as Versioned>::SCHEMA,
            run,
            created_unix: crate::report::now_unix(),
            actions_max_abs_err: actions.as_ref().map(|m| m.max_abs_err),
            actions_cosine: actions.as_ref().map(|m| m.cosine),
            pass: failures.is_empty(),
            failures,
            ungated,
        }
    }
}

/// v1: the first numbered schema (reports before it had no number and no `Deserialize`; they
/// are read as they are: every field was already there).
impl Versioned for RunReport {
    const KIND: &'static str = "chain run report";
    const SCHEMA: u32 = 1;
    const READS_OLDER: &'static [u32] = &[0];
}

impl RunReport {
    /// The report of `backend` in `dir` (`run-<backend>.json`), read through its type.
    pub fn read(dir: &Path, backend: crate::vocab::BackendKind) -> Result<RunReport> {
        crate::record::read(
            &dir.join(format!("run-{backend}.json")),
            &format!("cargo xtask run --backend {backend}"),
        )
    }

    /// The report's file stem: `run-<backend>`, with `--fp32` `run-<backend>-fp32-<a>+<b>`,
    /// with `--attribute` `run-<backend>-attribute` (a variant never overwrites the plain run's
    /// report, nor another variant's).
    pub fn stem(&self) -> String {
        let mut stem = format!("run-{}", self.run.backend);
        if self.run.attribution.is_some() {
            stem.push_str("-attribute");
        }
        if !self.run.fp32.is_empty() {
            stem = format!("{stem}-fp32-{}", self.run.fp32.join("+"));
        }
        stem
    }
}

pub fn write_run_report(dir: &Path, r: &RunReport) -> Result<()> {
    let stem = r.stem();
    crate::report::write_json_and_markdown(dir, &stem, r, &markdown(r))?;
    crate::atomic::write_atomic(
        &dir.join(format!("{stem}.html")),
        super::html::html(r).as_bytes(),
    )
}

pub fn markdown(r: &RunReport) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Chain run: `{}` on `{}` ({})\n",
        r.run.model, r.run.backend, r.run.mode
    );
    let _ = writeln!(
        md,
        "{} · {} timed runs after {} warm-up",
        r.run.versions.summary(),
        r.run.iters,
        r.run.warmup
    );
    let _ = writeln!(md, "\nChain: {}", r.run.layout.summary());
    if !r.run.fp32.is_empty() {
        let _ = writeln!(
            md,
            "\nWhat-if: **{}** ran on ORT's CPU EP in fp32, the rest on `{}`.",
            r.run.fp32.join(", "),
            r.run.backend
        );
    }
    if let Some(h) = &r.run.htp {
        let _ = writeln!(md, "\nHTP: {}", h.latency_label());
    }
    md.push_str("\n## Chain parity\n\n");
    md.push_str(&md_table(
        &[
            "boundary",
            "shape",
            "cosine",
            "max abs err",
            "rel L2",
            "result",
        ],
        r.run.boundaries.iter().map(|b| {
            let (c, m, l) = b
                .metrics
                .as_ref()
                .map_or(("-".into(), "-".into(), "-".into()), |m| {
                    (
                        m.shown_cosine(),
                        format!("{:.3e}", m.max_abs_err),
                        format!("{:.3e}", m.rel_l2_err),
                    )
                });
            let result = match b.status {
                Status::Pass => "pass".to_string(),
                _ => format!("**{}**: {}", b.result_word(), b.reasons.join("; ")),
            };
            vec![b.name.clone(), format!("{:?}", b.shape), c, m, l, result]
        }),
    ));
    if let (Some(e), Some(c)) = (r.actions_max_abs_err, r.actions_cosine) {
        let _ = writeln!(
            md,
            "\nActions: max abs error **{e:.3e}** (gate {:.0e}), cosine {}",
            r.run.actions_max_abs_gate,
            fmt_cosine(c)
        );
    }
    md.push_str(&super::introduced::markdown(r));
    if let Some(a) = &r.run.attribution {
        md.push_str(&super::whatif::markdown(a, r.run.backend));
    }
    md.push_str("\n## Per-layer K/V cosine\n\n");
    md.push_str(&md_table(
        &["layer", "keys", "values"],
        r.run
            .keys_per_layer_cosine
            .iter()
            .zip(&r.run.values_per_layer_cosine)
            .enumerate()
            .map(|(l, (k, v))| vec![l.to_string(), fmt_cosine(*k), fmt_cosine(*v)]),
    ));
    let _ = writeln!(
        md,
        "\n## Latency (ms){}\n",
        r.run
            .htp
            .as_ref()
            .map_or(String::new(), |h| format!(": {}", h.latency_label()))
    );
    md.push_str(&md_table(
        &["stage", "samples", "min", "p50", "p90", "p99", "max"],
        r.run.latency.iter().map(|l| {
            let mut row = vec![l.name.clone(), l.samples.to_string()];
            row.extend(
                [l.min_ms, l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms].map(|x| format!("{x:.2}")),
            );
            row
        }),
    ));
    let _ = writeln!(
        md,
        "\nSession load (ms): {}",
        r.run
            .load_ms
            .iter()
            .map(|(k, v)| format!("{k} {:.1}", v.iter().sum::<f64>() / v.len().max(1) as f64))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        md,
        "\nHost share of end-to-end: {:.1}% · peak RSS {:.0} MB",
        r.run.host_fraction * 100.0,
        r.run.peak_rss_mb
    );
    md
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
