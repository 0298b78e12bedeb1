//! The three step kinds of a component's build, one type each: the parts of its key, its
//! outputs, its record name, and `run` (through whichever `Toolchain` builds). A step's run
//! leaves its outputs staged; `execute` moves them into place and writes the record.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

use crate::ctx_build::fingerprint::StepKey;
use crate::ctx_build::plan::{Artifacts, Versions, section_hash};
use crate::htp_target::soc::Soc;
use crate::parity::component::load_golden;
use crate::recipe::{Component, Model};
use crate::toolchain::{Rendered, StepJob, Toolchain};

/// What a step produced: staged files with the artifact each becomes, and its details.
pub struct StepRun {
    pub moves: Vec<(PathBuf, PathBuf)>,
    pub detail: serde_json::Value,
}

/// ONNX → DLC.
pub struct Convert;

impl Convert {
    pub const RECORD: &'static str = "convert";

    /// The ONNX and external data, the recipe's graph contract and `[convert]`, what the
    /// toolchain renders, the tool versions.
    pub fn key(
        comp: &Component,
        versions: &Versions,
        rendered: &Rendered,
        onnx: &BTreeMap<String, String>,
    ) -> StepKey {
        let mut parts = onnx.clone();
        parts.insert(
            "recipe [component]".into(),
            section_hash(&comp.file.component),
        );
        parts.insert(
            "recipe inputs/outputs".into(),
            section_hash(&(&comp.file.inputs, &comp.file.outputs)),
        );
        parts.insert("recipe [convert]".into(), section_hash(&comp.file.convert));
        // Only with rewrites, so recipes without any keep their keys.
        if let Some(rewrites) = crate::onnx::decompose::key_part(&comp.file.rewrite.apply) {
            parts.insert("graph rewrites".into(), rewrites);
        }
        parts.insert("onnxruntime version".into(), versions.onnxruntime.clone());
        parts.insert("qnn version".into(), versions.qnn.clone());
        parts.insert("toolchain".into(), versions.toolchain.clone());
        parts.extend(rendered.parts.clone());
        StepKey::new("convert", parts)
    }

    pub fn outputs(art: &Artifacts) -> Vec<PathBuf> {
        vec![art.dlc.clone()]
    }

    pub fn run(tc: &dyn Toolchain, job: &StepJob<'_>) -> Result<StepRun> {
        let staged = tc.convert(job)?;
        let dlc = staged
            .files
            .first()
            .context("the converter staged no DLC")?;
        check_dlc(dlc)?;
        let mut detail = staged.detail;
        detail["facts"] = convert_facts(tc, job.comp);
        if let Some(check) = check_rewrites(job)? {
            detail["summary"] = check.summary().into();
            detail["facts"]["rewrites"] = serde_json::to_value(&check)?;
        }
        Ok(StepRun {
            moves: vec![(dlc.clone(), job.artifacts.dlc.clone())],
            detail,
        })
    }
}

/// The ONNX (or DLC) on the QNN CPU backend with the golden inputs, gated like `parity`.
pub struct CpuParity;

impl CpuParity {
    pub const RECORD: &'static str = "cpu_parity";

    pub fn key(
        model: &Model,
        comp: &Component,
        rendered: &Rendered,
        convert: &StepKey,
        golden: &str,
    ) -> StepKey {
        let mut parts = BTreeMap::from([
            ("convert step".to_string(), convert.key.clone()),
            ("golden".to_string(), golden.to_string()),
            (
                "recipe [parity]".to_string(),
                section_hash(&(&comp.file.parity, &model.file.parity)),
            ),
        ]);
        parts.extend(rendered.parts.clone());
        StepKey::new("cpu_parity", parts)
    }

    pub fn outputs(_: &Artifacts) -> Vec<PathBuf> {
        Vec::new()
    }

    pub fn run(tc: &dyn Toolchain, job: &StepJob<'_>) -> Result<StepRun> {
        let golden = load_golden(job.root, job.comp)?;
        let result = tc.cpu_parity(job, &golden)?;
        let figures: Vec<String> = result
            .outputs
            .iter()
            .map(|o| format!("{} cosine {}", o.name, o.metrics.shown_cosine()))
            .collect();
        if !result.pass {
            let reasons: Vec<String> = result
                .outputs
                .iter()
                .filter(|o| !o.verdict.pass)
                .map(|o| {
                    format!(
                        "{} {}: {}",
                        job.comp.name(),
                        o.name,
                        o.verdict.reasons.join("; ")
                    )
                })
                .collect();
            bail!(
                "CPU-backend parity gate failed: {} (hint: `{}`)",
                reasons.join(" | "),
                crate::diagnose::bisect_hint(
                    &job.model.file.model.name,
                    job.comp,
                    crate::vocab::BackendKind::Cpu
                )
            );
        }
        Ok(StepRun {
            moves: Vec::new(),
            detail: serde_json::json!({ "summary": figures.join(", "), "result": result }),
        })
    }
}

/// The HTP context binary and its EPContext wrapper, per SoC.
pub struct Context;

impl Context {
    pub fn record_name(soc: &Soc) -> String {
        format!("context@soc{}", soc.id)
    }

    pub fn key(comp: &Component, soc: &Soc, rendered: &Rendered, cpu: &StepKey) -> StepKey {
        let mut parts = BTreeMap::from([
            ("cpu parity step".to_string(), cpu.key.clone()),
            (
                "recipe [context]".to_string(),
                section_hash(&comp.file.context),
            ),
            ("soc".to_string(), format!("{} v{}", soc.id, soc.htp_arch)),
        ]);
        parts.extend(rendered.parts.clone());
        StepKey::new("context", parts)
    }

    pub fn outputs(art: &Artifacts) -> Vec<PathBuf> {
        vec![art.bin.clone(), art.wrapper.clone()]
    }

    pub fn run(tc: &dyn Toolchain, job: &StepJob<'_>) -> Result<StepRun> {
        require_fp16_safe_golden(job.root, job.model, job.comp)?;
        let staged = tc.context(job)?;
        let [bin, wrapper] = staged.files.as_slice() else {
            bail!(
                "the context step staged {} file(s), expected a binary and a wrapper",
                staged.files.len()
            );
        };
        let mut detail = staged.detail;
        let ctx = &job.comp.file.context;
        // What the binary was built with, recorded so the card states it from the record.
        detail["facts"] = serde_json::json!({
            "toolchain": tc.label(),
            "fp16": ctx.fp16,
            "optimization_level": ctx.optimization_level,
            "vtcm_mb": ctx.vtcm_mb,
        });
        detail["graph_name_honoured"] = graph_name_honoured(tc, &detail, &ctx.graph_name);
        Ok(StepRun {
            moves: vec![
                (bin.clone(), job.artifacts.bin.clone()),
                (wrapper.clone(), job.artifacts.wrapper.clone()),
            ],
            detail,
        })
    }
}

/// Whether the binary's graph carries the recipe's `graph_name`, and if not, why (the
/// toolchain says: `Toolchain::graph_name_note`).
fn graph_name_honoured(
    tc: &dyn Toolchain,
    detail: &serde_json::Value,
    asked: &str,
) -> serde_json::Value {
    let inside = detail["graph_name"].as_str().unwrap_or("");
    if inside == asked {
        return serde_json::json!({ "recipe": asked, "honoured": true });
    }
    let why = tc.graph_name_note(inside, asked);
    serde_json::json!({ "recipe": asked, "honoured": false, "why": why })
}

/// The rewritten copy the toolchain converted, run on ORT against the golden: a rewrite that
/// changed what the graph computes fails the step (None without `[rewrite]`).
fn check_rewrites(job: &StepJob<'_>) -> Result<Option<crate::onnx::decompose::RewriteCheck>> {
    if job.comp.file.rewrite.apply.is_empty() {
        return Ok(None);
    }
    let golden = load_golden(job.root, job.comp)?;
    let check =
        crate::onnx::decompose::check_on_ort(job.rt, job.root, job.model, job.comp, &golden)?;
    if !check.ort_pass {
        bail!(
            "the rewritten graph {} fails its ONNX Runtime parity gate ({}): a rewrite must not \
             change what the graph computes",
            check.onnx,
            check.summary()
        );
    }
    Ok(Some(check))
}

/// What the DLC is and how far it was checked (`Toolchain::dlc_validation`): the embedded
/// toolchain has no DLC runner, so its DLC's structure is checked and the CPU-parity step runs
/// the ONNX; the SDK toolchain's CPU-parity step runs the DLC itself.
fn convert_facts(tc: &dyn Toolchain, comp: &Component) -> serde_json::Value {
    serde_json::json!({
        "toolchain": tc.label(),
        "float_bitwidth": comp.file.convert.float_bitwidth,
        "preserve_io_datatype": comp.file.convert.preserve_io_datatype,
        "dlc_validation": tc.dlc_validation(),
    })
}

/// A QNN IR DLC is a zip holding at least the `model` member; anything else is not a DLC.
fn check_dlc(path: &Path) -> Result<()> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot open the DLC {}", path.display()))?;
    let zip = zip::ZipArchive::new(file)
        .with_context(|| format!("{} is not a DLC (not a zip archive)", path.display()))?;
    if !zip.file_names().any(|n| n == "model") {
        bail!("{} is not a QNN DLC: no `model` member", path.display());
    }
    Ok(())
}

/// Before the HTP (fp16) sees a component: no golden tensor beyond fp16's range unless it is a
/// mask the recipe marks for clamping.
fn require_fp16_safe_golden(root: &Path, model: &Model, comp: &Component) -> Result<()> {
    let golden = load_golden(root, comp)?;
    let offenders: Vec<String> = crate::fp16::scan_golden(comp, &golden.inputs, &golden.expected)
        .into_iter()
        .filter(|f| f.offender)
        .map(|f| {
            format!(
                "{} {} (max |x| {:.3e}, min {:.3e}): {}",
                f.kind, f.tensor, f.max_abs, f.min, f.status
            )
        })
        .collect();
    if !offenders.is_empty() {
        bail!(
            "fp16 hazard before the HTP: {} (see `cargo xtask lint-fp16 --model {}`)",
            offenders.join("; "),
            model.file.model.name
        );
    }
    Ok(())
}
