//! The quantize step of a quantized component: its float ONNX (the recipe's, or the rewritten
//! copy) and its calibration samples through ONNX Runtime's QNN quantizer
//! (`crates/runtime/scripts/quantize/quantize.py` in `target/quant-venv`), giving the QDQ ONNX every
//! later step compiles and the AIMET encodings the SDK's `--quantization_overrides` reads.
//! Its key holds the float ONNX, the `[quantize]` table, the calibration files, the pinned
//! environment and the script: another calibration set or setting re-runs quantize and what
//! follows, and nothing before it (there is nothing before it).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, Result};

use crate::artifacts::{Artifacts, Versions, section_hash};
use crate::facts::{CalibrationFacts, FileHash, QuantizeFacts, StepFacts};
use crate::fingerprint::StepKey;
use crate::steps::{StagedOutput, StepRun};
use crate::toolchain::{Rendered, STAGING, StepJob};
use xtask_base::hashing::sha256_bytes;
use xtask_recipe::recipe::Component;
use xtask_recipe::recipe::quantize::QuantizeSection;
use xtask_runtime::quantize::calibration::CalibrationSet;

/// The quantize step.
pub struct Quantize;

/// What the script printed as its last line (one JSON object).
#[derive(Debug, serde::Deserialize)]
struct ScriptSummary {
    quantize_linear: usize,
    dequantize_linear: usize,
}

impl Quantize {
    /// The float ONNX (and external data), the `[quantize]` table, the calibration files, the
    /// pinned quantizer (requirements and script), the tool's version.
    pub fn key(
        comp: &Component,
        versions: &Versions,
        rendered: &Rendered,
        onnx: &BTreeMap<String, String>,
        calibration: &str,
    ) -> StepKey {
        let mut parts = onnx.clone();
        if let Some(rewrites) = xtask_onnx::onnx::decompose::key_part(&comp.file.rewrite.apply) {
            parts.insert("graph rewrites".into(), rewrites);
        }
        parts.insert(
            "recipe [quantize]".into(),
            section_hash(&comp.file.quantize),
        );
        parts.insert("calibration files".into(), calibration.to_string());
        parts.insert(
            "quantize environment".into(),
            sha256_bytes(xtask_runtime::quantize::env::REQUIREMENTS.as_bytes()),
        );
        parts.insert(
            "quantize script".into(),
            sha256_bytes(xtask_runtime::quantize::env::SCRIPT.as_bytes()),
        );
        parts.insert("onnxruntime version".into(), versions.onnxruntime.clone());
        parts.insert("xtask version".into(), versions.xtask.clone());
        parts.insert("toolchain libraries".into(), versions.libraries.clone());
        parts.extend(rendered.parts.clone());
        StepKey::new("quantize", parts)
    }

    /// What it will run, with the staging folder as a placeholder.
    pub fn render(comp: &Component, art: &Artifacts) -> Rendered {
        let Some(q) = &comp.file.quantize else {
            return Rendered::default();
        };
        let line = script_args(q, STAGING, &file_stem(art))
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        Rendered::default().command(
            "quantize command",
            format!("target/quant-venv/bin/python {SCRIPT_PATH} {line}"),
        )
    }

    /// The QDQ ONNX (with its external data when the float ONNX has some) and the encodings.
    pub fn outputs(art: &Artifacts, external_data: bool) -> Vec<PathBuf> {
        let mut out = vec![art.qdq.clone()];
        if external_data {
            out.push(art.qdq_data.clone());
        }
        out.push(art.encodings.clone());
        out
    }

    /// Builds the calibration set, runs the quantizer in the pinned environment, stages and
    /// hashes what it wrote. `job.onnx` is the float ONNX.
    pub fn run(job: &StepJob<'_>) -> Result<StepRun> {
        let q = job
            .comp
            .file
            .quantize
            .as_ref()
            .context("internal: a quantize step for a component without [quantize]")?;
        let rewrites = crate::step_checks::check_rewrites(job)?;
        let set = CalibrationSet::of(job.root, job.model, job.comp, q)?;
        let samples = set.write(&job.staging.join("calibration"))?;
        let env = xtask_runtime::quantize::env::ensure(job.root)?;
        let summary = run_script(job, q, &env.python, &samples)?;
        let stem = file_stem(job.artifacts);
        let staged = |name: String, artifact: &PathBuf| {
            StagedOutput::hash(&job.staging.join(name), artifact)
        };
        let qdq = staged(format!("{stem}.qdq.onnx"), &job.artifacts.qdq)?;
        let data_file = job.staging.join(format!("{stem}.qdq.onnx.data"));
        let data = data_file
            .is_file()
            .then(|| StagedOutput::hash(&data_file, &job.artifacts.qdq_data))
            .transpose()?;
        let encodings = staged(format!("{stem}.encodings.json"), &job.artifacts.encodings)?;
        let facts = StepFacts::Quantize(Box::new(QuantizeFacts {
            versions: job.versions.clone(),
            precision: q.precision,
            per_channel: q.per_channel,
            method: q.method,
            exclude: q.exclude.clone(),
            float_onnx: FileHash {
                path: job.onnx.rel.clone(),
                sha256: job.onnx.sha256.clone(),
            },
            rewrites,
            calibration: CalibrationFacts {
                source: q.calibration.label(),
                origins: set.origins.clone(),
                sha256: set.sha256.clone(),
            },
            environment: env.packages.clone(),
            script_sha256: sha256_bytes(xtask_runtime::quantize::env::SCRIPT.as_bytes()),
            quantize_nodes: summary.quantize_linear,
            dequantize_nodes: summary.dequantize_linear,
            qdq: qdq.file(),
            encodings: encodings.file(),
        }));
        // The report shows the facts' summary; the detail holds only how the run went.
        let detail = crate::detail::StepDetail::default();
        let mut outputs = vec![qdq];
        outputs.extend(data);
        outputs.push(encodings);
        Ok(StepRun {
            outputs,
            facts,
            detail,
        })
    }
}

/// The artifacts' stem: `<component>` (the QDQ ONNX is `<component>.qdq.onnx`).
fn file_stem(art: &Artifacts) -> String {
    art.qdq
        .file_name()
        .map(|n| {
            n.to_string_lossy()
                .trim_end_matches(".qdq.onnx")
                .to_string()
        })
        .unwrap_or_default()
}

/// The script's arguments after the ONNX and samples (what the rendering shows too).
fn script_args(q: &QuantizeSection, out_dir: &str, stem: &str) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec![
        "--precision".into(),
        q.precision.label().into(),
        "--method".into(),
        q.method.label().into(),
    ];
    if q.per_channel {
        args.push("--per-channel".into());
    }
    for name in &q.exclude {
        args.push("--exclude".into());
        args.push(name.into());
    }
    args.extend([
        "--out-dir".into(),
        out_dir.into(),
        "--stem".into(),
        stem.into(),
    ]);
    args
}

/// Where the embedded `quantize.py` is written to run, relative to the project root.
const SCRIPT_PATH: &str = "target/quant-venv/quantize.py";

/// Runs `quantize.py`, its output in the step's log; its summary line.
fn run_script(
    job: &StepJob<'_>,
    q: &QuantizeSection,
    python: &std::path::Path,
    samples: &std::path::Path,
) -> Result<ScriptSummary> {
    // The script run is the one this build of the tool embeds (and its key names), written
    // beside the environment it runs in: a project that is not the tool's checkout has none.
    let script = job.root.join(SCRIPT_PATH);
    xtask_base::atomic::write_atomic(&script, xtask_runtime::quantize::env::SCRIPT.as_bytes())
        .with_context(|| format!("cannot write the quantize script {}", script.display()))?;
    let log = xtask_base::project::reports_dir(job.root, &job.model.file.model.name)
        .join("logs")
        .join(format!("{}-quantize.log", job.comp.name()));
    let stem = file_stem(job.artifacts);
    let out_dir = job.staging.display().to_string();
    let finished = xtask_base::proc::Proc::new(python)
        .arg(&script)
        .arg("--onnx")
        .arg(&job.onnx.path)
        .arg("--samples")
        .arg(samples)
        .args(script_args(q, &out_dir, &stem))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .log(&log)
        .timeout(quantize_timeout())
        .hint("the whole output of the quantizer is in the log")
        .run()?;
    let last = finished
        .output
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .with_context(|| format!("the quantizer printed no summary (log {})", log.display()))?;
    serde_json::from_str(last)
        .with_context(|| format!("the quantizer's summary is not readable: {last}"))
}

/// `XTASK_QUANTIZE_TIMEOUT_SECS`, else two hours (a real-width LLM split calibrates for long).
fn quantize_timeout() -> Duration {
    std::env::var("XTASK_QUANTIZE_TIMEOUT_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_secs(7200), Duration::from_secs)
}
