//! The embedded toolchain: the pinned ONNX Runtime with the QNN EP plugin runs every step in
//! process (QNN IR DLC dump, a QNN CPU session, an HTP context compile whose EPContext wrapper
//! is retargeted onto the stable binary name).

use anyhow::Result;

use super::{Rendered, STAGING, Staged, StepJob, Toolchain};
use crate::artifacts::{Artifacts, StepKind};
use crate::detail::StepDetail;
use crate::facts::ToolchainUsed;
use xtask_parity::parity::component::{ComponentResult, GoldenIo, run_component};
use xtask_recipe::htp_target::HtpTarget;
use xtask_recipe::recipe::Component;
use xtask_runtime::runtime::Backend;
use xtask_runtime::runtime::session::{
    backend_ep_options, context_session_config, dump_dlc_ep_options,
};

/// The embedded runtime. It holds nothing: a step runs on the job's runtime (`StepJob.rt`,
/// always loaded for a build), and rendering needs none.
pub struct Embedded;

impl Toolchain for Embedded {
    fn used(&self) -> ToolchainUsed {
        ToolchainUsed::embedded()
    }

    fn describe(&self) -> String {
        "the embedded QNN runtime (ONNX Runtime + QNN EP)".into()
    }

    fn render(
        &self,
        kind: StepKind,
        comp: &Component,
        target: &HtpTarget,
        art: &Artifacts,
    ) -> Rendered {
        let r = Rendered::default();
        match kind {
            // Not a toolchain's step: `step_quantize::Quantize::render` says what it runs.
            StepKind::Quantize => r,
            StepKind::Convert => r.options(
                "rendered QNN IR EP options",
                &dump_dlc_ep_options(STAGING, comp.precision().is_quantized()),
            ),
            StepKind::CpuParity => r.options(
                "rendered QNN CPU EP options",
                &backend_ep_options(&Backend::QnnCpu),
            ),
            StepKind::Context => {
                let wrapper = format!("{STAGING}/{}.onnx", art.wrapper_stem());
                let onnx_dir = super::rendered_qnn_onnx(comp, art)
                    .parent()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                r.options(
                    "rendered HTP EP options",
                    &backend_ep_options(&Backend::QnnHtp(target.clone())),
                )
                .options(
                    "rendered session config",
                    &context_session_config(&wrapper, &onnx_dir),
                )
            }
        }
    }

    fn convert(&self, job: &StepJob<'_>) -> Result<Staged> {
        let quantized = job.comp.precision().is_quantized();
        let (dlc, placement) = job.rt.dump_dlc(&job.onnx.path, job.staging, quantized)?;
        let dlc_from = dlc.file_name().map(|n| n.to_string_lossy().into_owned());
        Ok(Staged {
            files: vec![dlc],
            detail: StepDetail {
                placement: Some(placement),
                dlc_from,
                ..StepDetail::default()
            },
        })
    }

    fn cpu_parity(&self, job: &StepJob<'_>, golden: &GoldenIo) -> Result<ComponentResult> {
        let mut result = run_component(
            job.rt,
            job.model,
            job.comp,
            golden,
            &job.onnx.path,
            &Backend::QnnCpu,
            true,
        )?;
        result.session_model = job.onnx.rel.clone();
        Ok(result)
    }

    fn context(&self, job: &StepJob<'_>) -> Result<Staged> {
        let stem = job.artifacts.wrapper_stem();
        let wrapper = job.staging.join(format!("{stem}.onnx"));
        job.rt
            .compile_context(&job.onnx.path, job.target, &wrapper)?;
        let bin = job.staging.join(format!("{stem}_qnn.bin"));
        let info = xtask_onnx::onnx::epcontext::check_and_retarget_wrapper(
            &wrapper,
            &bin,
            &job.artifacts.bin_name(),
        )?;
        Ok(Staged {
            files: vec![bin, wrapper],
            detail: StepDetail {
                graph_name: Some(info.graph_name),
                ep_sdk_version: info.ep_sdk_version,
                bin_file: Some(info.bin_file),
                ..StepDetail::default()
            },
        })
    }

    /// ORT's QNN EP names the graph after its partition (`QNNExecutionProvider_…`, a hash that
    /// no longer depends on the checkout path) and has no option to set it.
    fn graph_name_note(&self, inside: &str, asked: &str) -> String {
        format!(
            "the binary's graph is named `{inside}`: the embedded toolchain (ORT's QNN EP) \
             names the graph after its partition and offers no option to set it; the name does \
             not depend on the checkout path. Build with --toolchain sdk to get `{asked}`"
        )
    }

    /// No DLC runner here: the DLC's structure is checked and the CPU-parity step runs the ONNX.
    fn dlc_validation(&self) -> &'static str {
        "structure only: a QNN IR zip with its `model` member, from an ONNX whose graph I/O \
         matched the recipe; not run (the embedded toolchain runs the ONNX for CPU parity)"
    }
}
