//! The report of `cargo xtask run`: chain parity along every boundary, per-layer K/V cosine,
//! the actions against the expected ones, latency percentiles, and what they conclude. This
//! module is the record (written as JSON, read back through `RunReport::read`); its Markdown
//! is `report_md`, its HTML page `html`, the three files written by `report_files`.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use ndarray::ArrayD;
use serde::{Deserialize, Serialize};

use xtask_recipe::recipe::gate::{f64_or_nan, map_vec_f64_or_nan, vec_f64_or_nan};

pub use super::latency::LatencyStats;
use xtask_base::record::Versioned;
use xtask_base::vocab::Verdict;
use xtask_parity::parity::gate::{Expected, Gate, JudgeTensor};
use xtask_parity::parity::metrics::Metrics;
use xtask_runtime::report::ToolVersions;

/// One boundary tensor of the chain, judged by the model's chain gate.
/// `run`'s default timed chains: the report of a run with these is `run-<backend>.json`, the
/// one the card and the next run's estimate read; any other count writes a variant name.
pub const DEFAULT_ITERS: usize = 10;
/// `run`'s default untimed warm-up chains (see `DEFAULT_ITERS`).
pub const DEFAULT_WARMUP: usize = 2;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BoundaryParity {
    pub name: String,
    pub shape: Vec<usize>,
    /// None when there was nothing to compare (ungated, or a shape mismatch).
    pub metrics: Option<Metrics>,
    /// `pass`, `fail` or `ungated`.
    pub status: Verdict,
    /// Why it failed, or why it is ungated.
    pub reasons: Vec<String>,
    /// True only when it was compared and passed (an ungated boundary is not a pass).
    pub pass: bool,
    /// The same boundary with its component fed its golden inputs (teacher-forced chain).
    pub golden_inputs: Option<Metrics>,
    /// Share of the error its component introduced (`chain::introduced::introduced_share`).
    pub introduced: Option<f64>,
    /// The gate it was judged by, with where that came from: a quantized component's outputs
    /// by its precision's gate (as `parity` judges them), everything else by `[host.gate]`.
    /// Absent in reports written before gates were recorded per boundary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<Gate>,
    /// The actions' max-abs gate (the `actions` boundary only), judged with the cosine gate
    /// into the one `status` of the row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_abs_gate: Option<ActionsGate>,
}

/// The largest accepted |action - expected| on a backend, and where it was set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionsGate {
    pub max_abs: f64,
    /// `recipes/<model>/model.toml [host.gate] actions_max_abs.htp`, or the backend's default.
    pub source: String,
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
            pass: judged.status == Verdict::Pass,
            status: judged.status,
            reasons: judged.reasons,
            golden_inputs: None,
            introduced: None,
            gate: Some(gate.clone()),
            max_abs_gate: None,
        }
    }

    /// Judges the boundary by the actions' max-abs gate as well: a max abs error over it (or
    /// a NaN one) fails the row, with the reason beside the cosine gate's. A boundary with
    /// nothing to compare keeps its verdict (ungated, or failed by its shape).
    pub fn judge_max_abs(&mut self, gate: ActionsGate) {
        if let Some(m) = &self.metrics {
            let e = m.max_abs_err;
            if e.is_nan() || e > gate.max_abs {
                self.reasons.push(format!(
                    "max abs error {e:.3e} > gate {:.0e} ({})",
                    gate.max_abs, gate.source
                ));
                self.status = Verdict::Fail;
                self.pass = false;
            }
        }
        self.max_abs_gate = Some(gate);
    }

    /// The row's verdict as every report spells it.
    pub fn result_word(&self) -> &'static str {
        self.status.word()
    }
}

/// What a chain run measured (and the gate it is judged by).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInputs {
    pub model: String,
    pub backend: xtask_base::vocab::BackendKind,
    pub htp_emulated: Option<bool>,
    /// For `htp`: emulator or device, how that was known, and the SoC when reported.
    pub htp: Option<xtask_runtime::runtime::probe::HtpKind>,
    pub mode: String,
    pub versions: ToolVersions,
    /// LLM layers per split, Euler steps, de-normalisation per action dim.
    pub layout: super::layout::ChainLayout,
    pub iters: usize,
    pub warmup: usize,
    pub boundaries: Vec<BoundaryParity>,
    /// Components that ran on ORT's CPU EP in fp32 instead of the backend (`--fp32`).
    pub fp32: Vec<String>,
    /// The quantized components and their precision (empty: every component fp16). Every
    /// boundary and the actions are still judged against the float golden; on `cpu` these
    /// ran as their QDQ simulation on ORT's CPU EP (QNN's CPU backend cannot run QDQ).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub precisions: BTreeMap<String, xtask_base::vocab::Precision>,
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
    /// On a board (`run --device`): the device's own execute times and the chain estimate.
    /// Absent for a run on this host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<crate::chain::device_figures::DeviceFigures>,
}

impl RunInputs {
    /// `llm_split0 w8a16, vision w8a16` (empty when every component is fp16).
    pub fn precisions_summary(&self) -> String {
        self.precisions
            .iter()
            .map(|(c, p)| format!("{c} {p}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
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
    /// What to run next when the chain failed: each a command that runs as printed
    /// (`chain::next_steps`), rendered the same on the terminal, in Markdown and HTML.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next_steps: Vec<String>,
}

impl RunReport {
    pub fn new(run: RunInputs) -> Self {
        let actions_boundary = run.boundaries.iter().find(|b| b.name == "actions");
        let actions = actions_boundary.and_then(|b| b.metrics.clone());
        let reasons_of = |status: Verdict| -> Vec<String> {
            run.boundaries
                .iter()
                .filter(|b| b.status == status)
                .map(|b| format!("{}: {}", b.name, b.reasons.join("; ")))
                .collect()
        };
        // Every failure is a failing row: the actions' max-abs gate is judged on the
        // `actions` boundary itself, so no report can show that row passing.
        let mut failures = reasons_of(Verdict::Fail);
        let ungated = reasons_of(Verdict::Ungated);
        if actions_boundary.is_none_or(|b| b.status == Verdict::Ungated) {
            failures.push("actions: the golden holds no expected actions".into());
        }
        RunReport {
            schema_version: <Self as Versioned>::SCHEMA,
            run,
            created_unix: xtask_runtime::report::now_unix(),
            actions_max_abs_err: actions.as_ref().map(|m| m.max_abs_err),
            actions_cosine: actions.as_ref().map(|m| m.cosine),
            pass: failures.is_empty(),
            failures,
            ungated,
            next_steps: Vec::new(),
        }
    }

    /// The chain's one verdict, as every report and the card render it.
    pub fn verdict(&self) -> Verdict {
        Verdict::of(self.pass)
    }

    /// The `actions` boundary, when the chain produced one.
    pub fn actions(&self) -> Option<&BoundaryParity> {
        self.run.boundaries.iter().find(|b| b.name == "actions")
    }

    /// Where the report contradicts itself: a boundary whose figures fail the gate it names
    /// but whose row passes (or the other way round), or an overall verdict its rows do not
    /// give. `verify` refuses a bundle whose chain report says PASS on failed figures.
    pub fn contradictions(&self) -> Vec<String> {
        let mut out = Vec::new();
        for b in &self.run.boundaries {
            let (Some(m), Some(g)) = (&b.metrics, &b.gate) else {
                continue;
            };
            let mut pass = xtask_parity::parity::gate::judge(m, g).pass;
            if let Some(a) = &b.max_abs_gate {
                pass &= !(m.max_abs_err.is_nan() || m.max_abs_err > a.max_abs);
            }
            if pass != (b.status == Verdict::Pass) || b.pass != (b.status == Verdict::Pass) {
                out.push(format!(
                    "boundary `{}` says {} but its figures {} the gate it names",
                    b.name,
                    b.result_word(),
                    if pass { "pass" } else { "fail" }
                ));
            }
        }
        let rows_pass = self.run.boundaries.iter().all(|b| {
            b.status == Verdict::Pass || b.status == Verdict::Ungated && b.name != "actions"
        }) && self.actions().is_some();
        if rows_pass != self.pass {
            out.push(format!(
                "the report says {} but its boundaries say {}",
                self.verdict().word(),
                Verdict::of(rows_pass).word()
            ));
        }
        out
    }
}

/// v2: the optional `device` section (a run on a board is a `RunReport` too, written as
/// `run-<backend>-device`). v1, the first numbered schema, and the unnumbered reports before it
/// are read as they are: they are runs on this host, every field there but `device`, which
/// defaults to none. (A board's report before v2 was another type; it is refused, and
/// `run --device` writes it again.)
impl Versioned for RunReport {
    const KIND: &'static str = "chain run report";
    const SCHEMA: u32 = 2;
    const READS_OLDER: &'static [u32] = &[0, 1];
}

impl RunReport {
    /// The report of `backend` on this host in `dir` (`run-<backend>.json`), read through its
    /// type.
    pub fn read(dir: &Path, backend: xtask_base::vocab::BackendKind) -> Result<RunReport> {
        xtask_base::record::read(
            &dir.join(format!("run-{backend}.json")),
            &format!("cargo xtask run --backend {backend}"),
        )
    }

    /// The report written under `stem` in `dir` (`run-htp-iters1-warmup0`, a quick run's).
    pub fn read_stem(dir: &Path, stem: &str) -> Result<RunReport> {
        xtask_base::record::read(&dir.join(format!("{stem}.json")), "cargo xtask run")
    }

    /// The report of `backend` on a board in `dir` (`run-<backend>-device.json`).
    pub fn read_on_device(
        dir: &Path,
        backend: xtask_base::vocab::BackendKind,
    ) -> Result<RunReport> {
        xtask_base::record::read(
            &dir.join(format!("run-{backend}-device.json")),
            &format!("cargo xtask run --backend {backend} --device ssh://…"),
        )
    }

    /// The report's file stem: `run-<backend>`, on a board `run-<backend>-device`, with `--fp32`
    /// `run-<backend>-fp32-<a>+<b>`, with `--attribute` `run-<backend>-attribute` (a variant
    /// never overwrites the plain run's report, nor another variant's).
    pub fn stem(&self) -> String {
        let mut stem = format!("run-{}", self.run.backend);
        if self.run.device.is_some() {
            stem.push_str("-device");
        }
        if self.run.attribution.is_some() {
            stem.push_str("-attribute");
        }
        if !self.run.fp32.is_empty() {
            stem = format!("{stem}-fp32-{}", self.run.fp32.join("+"));
        }
        // A quick run (`--iters 2`) never replaces the shipped report of the default run.
        if (self.run.iters, self.run.warmup) != (DEFAULT_ITERS, DEFAULT_WARMUP) {
            stem = format!("{stem}-iters{}-warmup{}", self.run.iters, self.run.warmup);
        }
        stem
    }
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
