//! The QAIRT SDK as a `Toolchain`: the rendering of each step's command lines and config files
//! (with `$QAIRT_SDK_ROOT`, `STAGING` and project-relative paths), and the steps themselves
//! through the tools in `steps`.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::quantizer;
use super::steps::{Job, context_configs};
use super::{
    HOST, NativeIo, SKIP_SIMPLIFICATION_ABOVE_BYTES, Sdk, context_generator_args, converter_args,
    net_run_args,
};
use crate::artifacts::{Artifacts, StepKind};
use crate::detail::StepDetail;
use crate::facts::ToolchainUsed;
use crate::toolchain::{Rendered, STAGING, Staged, StepJob, Toolchain};
use xtask_base::vocab::BackendKind;
use xtask_parity::parity::component::{ComponentResult, GoldenIo, judge_outputs};
use xtask_recipe::htp_target::HtpTarget;
use xtask_recipe::recipe::Component;

/// The SDK root as rendered (and as the dry run shows it when no SDK is installed).
pub const SDK_ROOT: &str = "$QAIRT_SDK_ROOT";

impl Sdk {
    /// An SDK of `version` at the `$QAIRT_SDK_ROOT` placeholder: renders, never runs.
    pub fn placeholder(version: &str) -> Sdk {
        Sdk {
            root: SDK_ROOT.into(),
            version: version.into(),
        }
    }

    fn job<'a>(&'a self, job: &'a StepJob<'_>) -> Job<'a> {
        Job {
            sdk: self,
            root: job.root,
            model: &job.model.file.model.name,
            comp: job.comp,
            staging: job.staging,
        }
    }
}

impl Toolchain for Sdk {
    fn used(&self) -> ToolchainUsed {
        ToolchainUsed::sdk(&self.version)
    }

    fn describe(&self) -> String {
        format!("QAIRT SDK {} at {}", self.version, self.root.display())
    }

    fn render(
        &self,
        kind: StepKind,
        comp: &Component,
        target: &HtpTarget,
        art: &Artifacts,
    ) -> Rendered {
        let sdk = Sdk::placeholder(&self.version);
        let staging = Path::new(STAGING);
        let tool = |name: &str| format!("{SDK_ROOT}/bin/{HOST}/{name}");
        let line = |name: &str, args: Vec<String>| format!("{} {}", tool(name), args.join(" "));
        let r = Rendered::default();
        match kind {
            // Not a toolchain's step: `step_quantize::Quantize::render` says what it runs.
            StepKind::Quantize => r,
            StepKind::Convert => {
                let dlc = staging.join(format!("{}.dlc", comp.name()));
                // An unset `onnx_skip_simplification` is decided when the step runs, from the
                // external data's size (whose hashes are key parts): rendered as the rule.
                let explicit = comp.file.convert.onnx_skip_simplification;
                let quantize = comp
                    .file
                    .quantize
                    .as_ref()
                    .filter(|q| q.precision.is_quantized());
                let converted = match quantize {
                    Some(_) => super::steps::float_dlc(staging, comp),
                    None => dlc.clone(),
                };
                let mut args = converter_args(
                    comp,
                    &crate::toolchain::rendered_qnn_onnx(comp, art),
                    &converted,
                    explicit == Some(true),
                );
                if explicit.is_none() {
                    args.push(format!(
                        "[--onnx_skip_simplification if external data > {} GiB]",
                        SKIP_SIMPLIFICATION_ABOVE_BYTES >> 30
                    ));
                }
                if quantize.is_some() {
                    args.extend([
                        "--quantization_overrides".into(),
                        art.encodings.display().to_string(),
                    ]);
                }
                let r = r.command(
                    "rendered qairt-converter command",
                    line("qairt-converter", args),
                );
                match quantize {
                    Some(q) => {
                        let args = quantizer::quantizer_args(
                            comp,
                            q,
                            &converted,
                            &dlc,
                            &quantizer::calibration_list(staging),
                        );
                        r.command(
                            "rendered qairt-quantizer command",
                            line("qairt-quantizer", args),
                        )
                    }
                    None => r,
                }
            }
            StepKind::CpuParity => {
                let args = net_run_args(
                    &sdk,
                    "libQnnCpu.so",
                    &art.dlc_candidate,
                    &staging.join("input_list.txt"),
                    &staging.join("output"),
                    NativeIo::of(comp),
                );
                r.command("rendered qnn-net-run command", line("qnn-net-run", args))
            }
            StepKind::Context => {
                let bin_name = art.bin_name();
                let bin_stem = bin_name.trim_end_matches(".bin");
                let configs = context_configs(&sdk, comp, target, staging);
                let generate =
                    context_generator_args(&sdk, &art.dlc, bin_stem, staging, &configs[1].0);
                let utility = vec![
                    "--context_binary".to_string(),
                    format!("{STAGING}/{bin_name}"),
                    "--json_file".into(),
                    format!("{STAGING}/{bin_stem}.json"),
                ];
                let mut r = r
                    .command(
                        "rendered qnn-context-binary-generator command",
                        line("qnn-context-binary-generator", generate),
                    )
                    .command(
                        "rendered qnn-context-binary-utility command",
                        line("qnn-context-binary-utility", utility),
                    );
                let names = [
                    "rendered HTP config file",
                    "rendered backend extensions config file",
                ];
                for (name, (path, json)) in names.iter().zip(configs) {
                    r = r.file(name, path.display().to_string(), json);
                }
                r
            }
        }
    }

    /// A float component's ONNX → DLC; a quantized one's float ONNX → DLC with the quantize
    /// step's encodings as overrides → `qairt-quantizer` on its calibration set.
    fn convert(&self, job: &StepJob<'_>) -> Result<Staged> {
        let sdk_job = self.job(job);
        let dlc = if job.comp.precision().is_quantized() {
            // The float ONNX's path only: its hash is already in the quantize step's key.
            let (float, _) =
                xtask_parity::rewritten::qnn_onnx(job.root, &job.model.file.model.name, job.comp)?;
            let encodings = job.root.join(&job.artifacts.encodings);
            let converted = super::steps::convert(&sdk_job, &float, Some(&encodings))?;
            quantizer::quantize(&sdk_job, job.model, &converted)?
        } else {
            super::steps::convert(&sdk_job, &job.onnx.path, None)?
        };
        Ok(Staged {
            files: vec![dlc],
            detail: StepDetail {
                toolchain: Some(self.label()),
                sdk_env: Some(self.env_record()),
                ..StepDetail::default()
            },
        })
    }

    fn cpu_parity(&self, job: &StepJob<'_>, golden: &GoldenIo) -> Result<ComponentResult> {
        // The convert step's candidate: promoted to the current DLC only if this passes.
        let dlc = job.root.join(&job.artifacts.dlc_candidate);
        let actual = super::steps::cpu_run(&self.job(job), &dlc, &golden.inputs)?;
        let mut result = judge_outputs(job.model, job.comp, golden, &actual, BackendKind::Cpu)?;
        result.session_model = xtask_base::project::rel(job.root, &dlc);
        Ok(result)
    }

    /// The SDK's context binary and the wrapper made from `qnn-context-binary-utility`'s JSON.
    fn context(&self, job: &StepJob<'_>) -> Result<Staged> {
        let bin_name = job.artifacts.bin_name();
        let stem = job.artifacts.wrapper_stem();
        let dlc = job.root.join(&job.artifacts.dlc);
        let made = super::steps::context(&self.job(job), job.target, &dlc, &stem, &bin_name)?;
        let summary = xtask_onnx::onnx::proto::read_summary(&made.wrapper)?;
        if summary.nodes.len() != 1
            || summary.nodes[0].attr_str("ep_cache_context") != Some(bin_name.as_str())
        {
            bail!("the generated EPContext wrapper does not point at {bin_name}");
        }
        let files: Vec<PathBuf> = vec![made.bin, made.wrapper];
        Ok(Staged {
            files,
            detail: StepDetail {
                graph_name: Some(made.graph_name),
                ep_sdk_version: Some(made.build_id),
                bin_file: Some(bin_name),
                toolchain: Some(self.label()),
                sdk_env: Some(self.env_record()),
                ..StepDetail::default()
            },
        })
    }

    /// The SDK compiles the current DLC (the one whose CPU parity passed).
    fn context_source(&self, job: &StepJob<'_>) -> PathBuf {
        job.root.join(&job.artifacts.dlc)
    }

    /// The CPU-parity step runs the DLC itself.
    fn dlc_validation(&self) -> &'static str {
        "run numerically: the CPU-parity step runs this DLC with qnn-net-run on libQnnCpu.so"
    }
}
