//! The three step kinds of a component's build, one type each: the parts of its key, its
//! outputs, its record name, and `run` (through whichever `Toolchain` builds). A step's run
//! leaves its outputs staged, hashed, with its typed facts; `execute` moves them into place
//! and writes the record. The DLC is promoted only by a passing CPU parity: the convert step
//! writes a candidate, so a DLC that fails never replaces the last good one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

use crate::artifacts::{Artifacts, Versions, section_hash};
use crate::detail::{GraphNameHonoured, StepDetail};
use crate::facts::{ContextFacts, ConvertFacts, CpuParityFacts, FileHash, StepFacts};
use crate::fingerprint::StepKey;
use crate::step_checks::{check_dlc, check_rewrites, graph_name_note, require_fp16_safe_golden};
use crate::toolchain::{Rendered, StepJob, Toolchain};
use xtask_base::hashing::sha256_file;
use xtask_parity::parity::component::load_golden;
use xtask_recipe::htp_target::HtpTarget;
use xtask_recipe::recipe::{Component, Model};

/// A staged file, hashed, and the artifact (project-relative) it becomes.
pub struct StagedOutput {
    pub staged: PathBuf,
    pub artifact: PathBuf,
    pub sha256: String,
}

impl StagedOutput {
    pub fn hash(staged: &Path, artifact: &Path) -> Result<Self> {
        Ok(StagedOutput {
            staged: staged.to_path_buf(),
            artifact: artifact.to_path_buf(),
            sha256: sha256_file(staged)?,
        })
    }

    pub(crate) fn file(&self) -> FileHash {
        FileHash {
            path: self.artifact.display().to_string(),
            sha256: self.sha256.clone(),
        }
    }
}

/// What a step produced: its staged outputs, its typed facts, and run details for reports.
pub struct StepRun {
    pub outputs: Vec<StagedOutput>,
    pub facts: StepFacts,
    pub detail: StepDetail,
}

/// ONNX → DLC.
pub struct Convert;

impl Convert {
    /// The ONNX and external data, the recipe's graph contract and `[convert]`, what the
    /// toolchain renders, the tool versions and the libraries' hash (by content, never a
    /// model name or a path).
    pub fn key(
        comp: &Component,
        versions: &Versions,
        rendered: &Rendered,
        onnx: &BTreeMap<String, String>,
    ) -> StepKey {
        // Not `[component]`: its name, description and ONNX path are names, and the ONNX's
        // content is in `onnx`. A key holds content only, so models share entries.
        let mut parts = onnx.clone();
        parts.insert(
            "recipe inputs/outputs".into(),
            section_hash(&(&comp.file.inputs, &comp.file.outputs)),
        );
        parts.insert("recipe [convert]".into(), section_hash(&comp.file.convert));
        // Only with rewrites, so recipes without any keep their keys.
        if let Some(rewrites) = xtask_onnx::onnx::decompose::key_part(&comp.file.rewrite.apply) {
            parts.insert("graph rewrites".into(), rewrites);
        }
        parts.insert("onnxruntime version".into(), versions.onnxruntime.clone());
        parts.insert("qnn version".into(), versions.qnn.clone());
        parts.insert("toolchain".into(), versions.toolchain.label());
        parts.insert("xtask version".into(), versions.xtask.clone());
        parts.insert("toolchain libraries".into(), versions.libraries.clone());
        parts.extend(rendered.parts.clone());
        StepKey::new("convert", parts)
    }

    /// A quantized component's convert: it converts the QDQ ONNX its quantize step made, so its
    /// key chains that step's key in place of the float ONNX's hashes.
    pub fn key_after_quantize(
        comp: &Component,
        versions: &Versions,
        rendered: &Rendered,
        quantize: &StepKey,
    ) -> StepKey {
        let onnx = BTreeMap::from([("quantize step".to_string(), quantize.key.clone())]);
        let mut key = Self::key(comp, versions, rendered, &onnx);
        // The rewrites were applied before quantizing (they are in the quantize key).
        key.parts.remove("graph rewrites");
        StepKey::new("convert", key.parts)
    }

    /// The candidate DLC (promoted to `dlc` by a passing CPU parity).
    pub fn outputs(art: &Artifacts) -> Vec<PathBuf> {
        vec![art.dlc_candidate.clone()]
    }

    pub fn run(tc: &dyn Toolchain, job: &StepJob<'_>) -> Result<StepRun> {
        let staged = tc.convert(job)?;
        let dlc = staged
            .files
            .first()
            .context("the converter staged no DLC")?;
        check_dlc(dlc)?;
        let mut detail = staged.detail;
        // A quantized component's rewrites were checked by its quantize step, on the float
        // graph; the QDQ graph is judged by its own gate.
        let rewrites = if job.comp.precision().is_quantized() {
            None
        } else {
            check_rewrites(job)?
        };
        if let Some(check) = &rewrites {
            detail.summary = Some(check.summary());
        }
        let out = StagedOutput::hash(dlc, &job.artifacts.dlc_candidate)?;
        let convert = &job.comp.file.convert;
        let facts = StepFacts::Convert(ConvertFacts {
            versions: job.versions.clone(),
            qnn_onnx: FileHash {
                path: job.onnx.rel.clone(),
                sha256: job.onnx.sha256.clone(),
            },
            inputs: job
                .key
                .parts
                .iter()
                .filter(|(k, _)| k.as_str() == "onnx" || k.starts_with("external data"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            float_bitwidth: convert.float_bitwidth,
            preserve_io_datatype: convert.preserve_io_datatype,
            dlc_validation: tc.dlc_validation().to_string(),
            rewrites,
            candidate_dlc: out.file(),
            precision: Some(job.comp.precision()).filter(|p| p.is_quantized()),
        });
        Ok(StepRun {
            outputs: vec![out],
            facts,
            detail,
        })
    }
}

/// The ONNX (or DLC) on the QNN CPU backend with the golden inputs, gated like `parity`.
pub struct CpuParity;

impl CpuParity {
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

    /// The DLC it measured, promoted: the component's current DLC.
    pub fn outputs(art: &Artifacts) -> Vec<PathBuf> {
        vec![art.dlc.clone()]
    }

    pub fn run(tc: &dyn Toolchain, job: &StepJob<'_>) -> Result<StepRun> {
        let golden = load_golden(job.root, job.comp)?;
        // QNN's CPU backend does not execute QDQ graphs: a quantized component's CPU stage is
        // its QDQ graph on ORT (whatever the toolchain), against the float golden.
        let result = if job.comp.precision().is_quantized() {
            let mut r = xtask_parity::parity::component::run_qdq_simulation(
                job.rt,
                job.model,
                job.comp,
                &golden,
                &job.onnx.path,
            )?;
            r.session_model = job.onnx.rel.clone();
            r
        } else {
            tc.cpu_parity(job, &golden)?
        };
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
            let model = &job.model.file.model.name;
            // A model built from recipes on disk gets the bisect that runs; a variant the
            // precision search holds in memory (`tiny.w8a16`) has no recipes a command could
            // load, so it is told how to get there instead.
            let hint = match job
                .root
                .join("recipes")
                .join(model)
                .join("model.toml")
                .is_file()
            {
                true => format!(
                    "hint: `{}`",
                    xtask_parity::parity::bisect_hint(
                        model,
                        job.comp,
                        xtask_base::vocab::BackendKind::Cpu
                    )
                ),
                false => format!(
                    "{model} is a variant without recipes on disk: set this precision in the component's recipe, build it, then bisect it with `--qdq`"
                ),
            };
            bail!(
                "CPU-backend parity gate failed: {} ({hint})",
                reasons.join(" | ")
            );
        }
        // Passed: the candidate becomes the current DLC (a link, staged, then renamed over
        // the old one; the candidate's own file is never edited, only replaced).
        let candidate = job.root.join(&job.artifacts.dlc_candidate);
        let staged = job.staging.join("current.dlc");
        xtask_onnx::onnx::link_external_data(&candidate, &staged)
            .with_context(|| format!("cannot stage {} for promotion", candidate.display()))?;
        let out = StagedOutput::hash(&staged, &job.artifacts.dlc)?;
        let golden_rel = job.comp.file.golden.file.display().to_string();
        let result_copy = result.clone();
        let facts = StepFacts::CpuParity(CpuParityFacts {
            versions: job.versions.clone(),
            golden: FileHash {
                path: golden_rel,
                sha256: golden.sha256.clone(),
            },
            current_dlc: out.file(),
            result,
        });
        let detail = StepDetail {
            summary: Some(facts.summary()),
            result: Some(result_copy),
            ..StepDetail::default()
        };
        Ok(StepRun {
            outputs: vec![out],
            facts,
            detail,
        })
    }
}

/// The HTP context binary and its EPContext wrapper, per SoC.
pub struct Context;

impl Context {
    pub fn record_name(soc: &xtask_base::soc::Soc) -> String {
        crate::artifacts::StepKind::Context.record_name(soc)
    }

    /// `target` is the component's HTP target as the plan rendered it; its options are a
    /// part of their own (`key=value` lines), so a dry run can say which one changed.
    pub fn key(
        comp: &Component,
        target: &HtpTarget,
        rendered: &Rendered,
        cpu: &StepKey,
    ) -> StepKey {
        let mut parts = BTreeMap::from([
            ("cpu parity step".to_string(), cpu.key.clone()),
            (
                "recipe [context]".to_string(),
                section_hash(&comp.file.context),
            ),
            (
                "soc".to_string(),
                format!("{} v{}", target.soc_model, target.htp_arch),
            ),
            ("htp target".to_string(), target_lines(target)),
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
        let source = tc.context_source(job);
        let graph_name = detail.graph_name.clone().unwrap_or_default();
        let asked = &job.comp.file.context.graph_name;
        let note = graph_name_note(tc, &graph_name, asked);
        detail.graph_name_honoured = Some(GraphNameHonoured {
            recipe: asked.clone(),
            honoured: note.is_none(),
            why: note.clone(),
        });
        let bin = StagedOutput::hash(bin, &job.artifacts.bin)?;
        let wrapper = StagedOutput::hash(wrapper, &job.artifacts.wrapper)?;
        // What the binary was built with, as it ran: the card states it from here.
        let facts = StepFacts::Context(Box::new(ContextFacts {
            versions: job.versions.clone(),
            soc_id: job.target.soc_model,
            htp_arch: job.target.htp_arch,
            target: job.target.clone(),
            rendered: job.rendered.parts.clone(),
            compiled_from: FileHash {
                path: xtask_base::project::rel(job.root, &source),
                sha256: sha256_file(&source)?,
            },
            graph_name_note: note,
            graph_name,
            ep_sdk_version: detail.ep_sdk_version.clone(),
            binary: bin.file(),
            wrapper: wrapper.file(),
        }));
        Ok(StepRun {
            outputs: vec![bin, wrapper],
            facts,
            detail,
        })
    }
}

/// The HTP target as `key=value` lines (the `htp target` key part).
fn target_lines(t: &HtpTarget) -> String {
    let mut text = format!("soc_model={}\nhtp_arch={}\n", t.soc_model, t.htp_arch);
    if let Some(g) = &t.graph {
        text.push_str(&format!(
            "graph_name={}\noptimization_level={}\nfp16={}\nvtcm_mb={}\n",
            g.name, g.optimization_level, g.fp16, g.vtcm_mb
        ));
    }
    text
}
