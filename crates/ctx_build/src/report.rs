//! `reports/<model>/build-soc<N>.json` and `.md`: per component and step, status, duration,
//! output sizes and sha256, graph name, QNN version, every output's cosine, gate result.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::detail::StepDetail;
use crate::facts::StepFacts;
use crate::fingerprint::StepRecord;
use crate::plan::{PlannedStep, Versions};
use xtask_base::record::Versioned;
use xtask_base::soc::Soc;
use xtask_runtime::runtime::Runtime;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OutputFile {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepOutcome {
    pub step: String,
    pub status: StepStatus,
    /// Why the step ran (dirty reasons) or why it failed / was skipped.
    pub reasons: Vec<String>,
    pub seconds: f64,
    pub outputs: Vec<OutputFile>,
    pub detail: StepDetail,
    pub error: Option<String>,
    /// The step's typed facts, from its record (None when it failed or was skipped).
    pub facts: Option<StepFacts>,
    /// The cache key it was restored under.
    pub restored_from_cache: Option<String>,
    /// A fresh step did not run now: `seconds` is restored from its record, the run that
    /// finished at this time (a no-op build keeps every step's timing instead of zeros).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds_restored_from_unix: Option<u64>,
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
        detail: StepDetail,
        key: String,
    ) -> Self {
        StepOutcome {
            status: StepStatus::Restored,
            restored_from_cache: Some(key),
            seconds_restored_from_unix: None,
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
            seconds: record.map_or(0.0, |r| r.seconds),
            outputs,
            detail: record.map(|r| r.detail.clone()).unwrap_or_default(),
            error: None,
            facts: record.map(|r| r.facts.clone()),
            restored_from_cache: record.and_then(|r| r.restored_from_cache.clone()),
            seconds_restored_from_unix: record.map(|r| r.finished_unix),
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
            seconds_restored_from_unix: Some(record.finished_unix),
        }
    }

    pub fn ran(
        step: &PlannedStep,
        reasons: Vec<String>,
        seconds: f64,
        outputs: Vec<OutputFile>,
        detail: StepDetail,
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
            seconds_restored_from_unix: None,
        }
    }

    pub fn failed(step: &PlannedStep, reasons: Vec<String>, seconds: f64, error: String) -> Self {
        StepOutcome {
            step: step.kind.label().into(),
            status: StepStatus::Failed,
            reasons,
            seconds,
            outputs: vec![],
            detail: StepDetail::default(),
            error: Some(error),
            facts: None,
            restored_from_cache: None,
            seconds_restored_from_unix: None,
        }
    }

    pub fn skipped(step: &PlannedStep, why: String) -> Self {
        StepOutcome {
            step: step.kind.label().into(),
            status: StepStatus::Skipped,
            reasons: vec![why],
            seconds: 0.0,
            outputs: vec![],
            detail: StepDetail::default(),
            error: None,
            facts: None,
            restored_from_cache: None,
            seconds_restored_from_unix: None,
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

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ComponentBuild {
    pub component: String,
    pub pass: bool,
    pub steps: Vec<StepOutcome>,
    /// Cache entries refused (corrupt or partial) and rebuilt, with why.
    pub cache_refused: Vec<String>,
}

impl ComponentBuild {
    /// A quantized component's precision and calibration set (sha256), from its quantize
    /// step's facts (None for a float component, or before its quantize step ran).
    pub fn quantized(&self) -> Option<(xtask_base::vocab::Precision, &str)> {
        self.steps.iter().find_map(|s| match &s.facts {
            Some(StepFacts::Quantize(q)) => Some((q.precision, q.calibration.sha256.as_str())),
            _ => None,
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BuildReport {
    /// `BuildReport::SCHEMA` (`record::Versioned`; 0 when read from a report written before).
    #[serde(default)]
    pub schema_version: u32,
    pub model: String,
    pub soc: Soc,
    pub created_unix: u64,
    pub onnxruntime: String,
    pub qnn: String,
    pub runtime_source: String,
    /// Every tool version, the data root and the inputs' provenance: the line every report
    /// opens with (`report::ToolVersions::summary`).
    pub versions: xtask_runtime::report::ToolVersions,
    /// The build cache used (`--cache` / `XTASK_CACHE_DIR`), if any.
    pub cache: Option<String>,
    /// Inputs fetched without a manifest (`fetch --unverified`), when any are in use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unverified_inputs: Option<String>,
    pub components: Vec<ComponentBuild>,
    pub pass: bool,
}

/// v1: the first numbered schema, with typed step details (`detail::StepDetail`, the same JSON
/// fields as before); unnumbered reports are read as they are.
impl Versioned for BuildReport {
    const KIND: &'static str = "build report";
    const SCHEMA: u32 = 1;
    const READS_OLDER: &'static [u32] = &[0];
}

impl BuildReport {
    /// `build-soc<N>.json` in `dir`, read through its type.
    pub fn read(path: &Path) -> anyhow::Result<BuildReport> {
        xtask_base::record::read(path, "cargo xtask build-ctx")
    }

    /// The step `label` of `component`, if the report has it.
    pub fn step(&self, component: &str, label: &str) -> Option<&StepOutcome> {
        self.components
            .iter()
            .filter(|c| c.component == component)
            .flat_map(|c| &c.steps)
            .find(|s| s.step == label)
    }

    pub fn new(
        model: &str,
        soc: &Soc,
        rt: &Runtime,
        versions: &Versions,
        cache: Option<String>,
        components: Vec<ComponentBuild>,
    ) -> Self {
        BuildReport {
            schema_version: <Self as Versioned>::SCHEMA,
            model: model.into(),
            soc: *soc,
            created_unix: xtask_runtime::report::now_unix(),
            onnxruntime: versions.onnxruntime.clone(),
            qnn: versions.qnn.clone(),
            runtime_source: rt.libs.source.into(),
            versions: xtask_runtime::report::ToolVersions::of(rt),
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
        model: &xtask_recipe::recipe::Model,
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
        xtask_base::outln!(
            "build-ctx {} soc {}: {} step(s) ran, {restored}{} fresh, {} failed, {} skipped; report {report_dir}/build-soc{}.md",
            self.model,
            self.soc.id,
            count(StepStatus::Ran),
            count(StepStatus::Fresh),
            count(StepStatus::Failed),
            count(StepStatus::Skipped),
            self.soc.id
        );
        // Only what this build built: the earlier builds it keeps are named below.
        let built = self
            .components
            .iter()
            .filter(|c| !c.steps.iter().all(|s| s.status == StepStatus::Earlier));
        for c in built {
            if let Some((p, calibration)) = c.quantized() {
                xtask_base::outln!(
                    "  {} is {p} (calibration sha256:{}); its parity is against the float golden",
                    c.component,
                    &calibration[..calibration.len().min(16)]
                );
            }
        }
        let kept: Vec<&str> = self
            .components
            .iter()
            .filter(|c| c.steps.iter().all(|s| s.status == StepStatus::Earlier))
            .map(|c| c.component.as_str())
            .collect();
        if !kept.is_empty() {
            xtask_base::outln!(
                "  the report keeps the earlier builds of {} (not in --only)",
                kept.join(", ")
            );
        }
        for c in self.components.iter().filter(|c| !c.pass) {
            for s in c.steps.iter().filter(|s| s.status == StepStatus::Failed) {
                xtask_base::outln!(
                    "FAILED {} at {}: {}",
                    c.component,
                    s.step,
                    s.error.as_deref().unwrap_or("?")
                );
            }
        }
    }
}
