//! The QAIRT SDK's `qnn-net-run` as a parity executor: the DLC on the CPU backend, or the
//! (checked) context binary on the HTP with its profiled execute times.

use std::path::Path;

use anyhow::{Result, bail};

use xtask_base::vocab::BackendKind;
use xtask_ctx_build::toolchain::sdk::Sdk;
use xtask_parity::parity::component::{ComponentResult, GoldenIo, judge_outputs};
use xtask_parity::parity::runner::Executor;
use xtask_recipe::recipe::{Component, Model};
use xtask_runtime::runtime::Runtime;

pub struct SdkNetRun<'a> {
    pub root: &'a Path,
    pub rt: &'a Runtime,
    pub model: &'a Model,
    pub backend: BackendKind,
    pub sdk: Sdk,
    pub clamp_masks: bool,
    /// Inferences in the one profiled `qnn-net-run` call per component (HTP).
    pub iters: usize,
}

impl<'a> SdkNetRun<'a> {
    /// Finds the SDK and the tools this backend needs; the SDK runs QNN backends only.
    pub fn detect(
        root: &'a Path,
        rt: &'a Runtime,
        model: &'a Model,
        backend: BackendKind,
        clamp_masks: bool,
        iters: usize,
    ) -> Result<Self> {
        if backend == BackendKind::Ort {
            bail!("--toolchain sdk runs QNN backends: use --backend cpu or htp");
        }
        let sdk = Sdk::detect()?;
        sdk.tool("qnn-net-run")?;
        if backend == BackendKind::Htp {
            sdk.tool("qnn-profile-viewer")?;
        }
        Ok(SdkNetRun {
            root,
            rt,
            model,
            backend,
            sdk,
            clamp_masks,
            iters,
        })
    }
}

impl Executor for SdkNetRun<'_> {
    fn backend(&self) -> BackendKind {
        self.backend
    }

    fn run(&self, comp: &Component, golden: &GoldenIo) -> Result<ComponentResult> {
        let (root, model) = (self.root, self.model);
        let soc = xtask_recipe::htp_target::target_soc(model, None)?;
        let art = xtask_ctx_build::plan::artifacts(&model.file.model.name, comp.name(), &soc);
        let work = xtask_base::project::scratch_dir(root, "sdk-parity");
        std::fs::create_dir_all(&work)?;
        let staging = tempfile::tempdir_in(&work)?;
        let job = xtask_ctx_build::toolchain::sdk::steps::Job {
            sdk: &self.sdk,
            root,
            model: &model.file.model.name,
            comp,
            staging: staging.path(),
        };
        let (actual, latency, ran) = match self.backend {
            BackendKind::Htp => {
                xtask_ctx_build::fresh::fresh_context_wrapper(root, self.rt, model, comp)?;
                let inputs = xtask_recipe::fp16::htp_inputs(comp, &golden.inputs, self.clamp_masks);
                let (out, stats) = xtask_ctx_build::toolchain::sdk::steps::htp_run(
                    &job,
                    &root.join(&art.bin),
                    &inputs,
                    self.iters,
                )?;
                (out, stats, &art.bin)
            }
            _ => (
                xtask_ctx_build::toolchain::sdk::steps::cpu_run(
                    &job,
                    &root.join(&art.dlc),
                    &golden.inputs,
                )?,
                None,
                &art.dlc,
            ),
        };
        let mut result = judge_outputs(model, comp, golden, &actual, self.backend)?;
        result.session_model = ran.display().to_string();
        // The median of the profiled execute times (NETRUN, see `sdk::profile`).
        result.run_seconds = latency.as_ref().map_or(0.0, |l| l.p50_us / 1e6);
        result.latency = latency;
        Ok(result)
    }
}
