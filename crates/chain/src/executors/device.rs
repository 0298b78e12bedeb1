//! A board over ssh as a parity executor: each component's context binary on the device's
//! HTP through the device's own QAIRT SDK, judged against its golden on this host. A lost
//! link ends the command (exit 2); a component that fails on the device is a FAIL row.

use std::path::Path;

use anyhow::Result;

use crate::device::Device;
use xtask_base::vocab::BackendKind;
use xtask_parity::parity::component::{ComponentResult, GoldenIo, judge_outputs};
use xtask_parity::parity::report::ParityReport;
use xtask_parity::parity::runner::Executor;
use xtask_recipe::recipe::{Component, Model};
use xtask_runtime::runtime::Runtime;

pub struct OnDevice<'a> {
    pub root: &'a Path,
    pub rt: &'a Runtime,
    pub model: &'a Model,
    pub device: Device,
    pub clamp_masks: bool,
    pub iters: usize,
}

impl<'a> OnDevice<'a> {
    /// Connects and checks the device can run this model's binaries (its SDK version).
    pub fn connect(
        root: &'a Path,
        rt: &'a Runtime,
        model: &'a Model,
        url: &str,
        clamp_masks: bool,
        iters: usize,
    ) -> Result<Self> {
        let device = Device::connect(url, xtask_recipe::htp_target::target_soc(model, None)?)?;
        device.require_runnable(&model.file.target.qairt)?;
        xtask_base::outln!("device: {}", device.info.label());
        Ok(OnDevice {
            root,
            rt,
            model,
            device,
            clamp_masks,
            iters,
        })
    }
}

impl Executor for OnDevice<'_> {
    fn backend(&self) -> BackendKind {
        BackendKind::Htp
    }

    fn run(&self, comp: &Component, golden: &GoldenIo) -> Result<ComponentResult> {
        let (root, model) = (self.root, self.model);
        let name = &model.file.model.name;
        let soc = xtask_recipe::htp_target::target_soc(model, None)?;
        let art = xtask_ctx_build::plan::artifacts(name, comp.name(), &soc);
        xtask_ctx_build::fresh::fresh_context_wrapper(root, self.rt, model, comp)?;
        let inputs = xtask_recipe::fp16::htp_inputs(comp, &golden.inputs, self.clamp_masks);
        let log = xtask_ctx_build::toolchain::sdk::steps::log_path(
            root,
            name,
            comp.name(),
            "device-htp-run",
        );
        let run =
            self.device
                .run_component(comp, &root.join(&art.bin), &inputs, 0, self.iters, &log)?;
        let mut result = judge_outputs(model, comp, golden, &run.outputs, BackendKind::Htp)?;
        result.session_model = art.bin.display().to_string();
        result.run_seconds = run.stats.p50_us / 1e6;
        result.latency = Some(run.stats);
        Ok(result)
    }

    fn is_fatal(&self, err: &anyhow::Error) -> bool {
        crate::device::ssh::is_link_failure(err)
    }

    fn annotate(&self, report: &mut ParityReport) {
        report.htp_emulated = None;
        report.device = Some(crate::chain::device_figures::timing_note(&self.device.info));
    }

    fn closing_note(&self) -> Option<String> {
        Some(format!(
            "{} context binar(y/ies) copied to the device; timing: {}",
            self.device.uploads(),
            crate::chain::device_figures::timing_note(&self.device.info)
        ))
    }
}
