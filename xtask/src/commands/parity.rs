//! `cargo xtask parity --backend ort|cpu|htp`: every component against its golden tensors
//! (`parity::run`), reported by `parity::report`; `--toolchain sdk` runs them with the SDK.

use anyhow::{Result, bail};

use super::{BackendKind, Ctx, Outcome, backend_for, require_files};
use crate::parity::component::{ComponentResult, GoldenIo};
use crate::parity::report::{ParityReport, print_component, write_parity_report};
use crate::parity::run::run_one;
use crate::runtime::bootstrap::ensure_runtime;
use crate::runtime::{Backend, Runtime};

#[derive(clap::Args)]
pub struct Parity {
    #[arg(long, value_enum)]
    backend: BackendKind,
    #[command(flatten)]
    sel: super::ModelArgs,
    /// Feed `mask = true` inputs to the HTP unclamped (shows what fp16 does to them).
    #[arg(long)]
    no_clamp: bool,
    /// Run with the QAIRT SDK's `qnn-net-run` (DLC on the CPU backend, `--retrieve_context`
    /// on the HTP, profiled) instead of the embedded runtime.
    #[arg(long, value_enum, default_value = "embedded")]
    toolchain: super::ToolchainKind,
    /// Inferences per component in the one profiled `qnn-net-run` call of `--toolchain sdk
    /// --backend htp` (an input list of N lines); the report gives their distribution.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    iters: u32,
    /// Run the context binaries on a board over ssh (`ssh://user@host[:port][/workdir]`) with
    /// the device's own QAIRT SDK (`--backend htp` only); see README "Validate on a board".
    #[arg(long, value_name = "ssh://user@host[:port][/workdir]")]
    device: Option<String>,
}

impl Parity {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let sel = self.sel.select(ctx)?;
        let model = &sel.model;
        let comps = sel.components();
        require_files(ctx, model, &comps)?;
        // An HTP result can be released: its libraries are re-hashed in full first.
        let libs = if self.backend == BackendKind::Htp {
            crate::runtime::bootstrap::ensure_runtime_rehashed(&ctx.root)?
        } else {
            ensure_runtime(&ctx.root)?
        };
        let rt = Runtime::load(libs)?;
        let backend = backend_for(model, self.backend);
        if backend != Backend::OrtCpu && self.toolchain == super::ToolchainKind::Embedded {
            crate::recipe::target::check_qairt(model, rt.qnn_build_version().as_deref())?;
        }
        if let Some(url) = &self.device {
            return self.run_on_device(ctx, &rt, model, &comps, &backend, url);
        }
        let sdk = match self.toolchain {
            super::ToolchainKind::Embedded => None,
            super::ToolchainKind::Sdk if backend == Backend::OrtCpu => {
                bail!("--toolchain sdk runs QNN backends: use --backend cpu or htp")
            }
            super::ToolchainKind::Sdk => {
                let sdk = crate::toolchain::sdk::Sdk::detect()?;
                let mut tools = vec!["qnn-net-run"];
                if matches!(backend, Backend::QnnHtp(_)) {
                    tools.push("qnn-profile-viewer");
                }
                for tool in tools {
                    sdk.tool(tool)?;
                }
                Some(sdk)
            }
        };
        if self.iters != 1 && !(sdk.is_some() && matches!(backend, Backend::QnnHtp(_))) {
            bail!("--iters applies to --toolchain sdk --backend htp (profiled qnn-net-run)");
        }
        let mut results = Vec::new();
        let (this, rt_, model_, backend_) = (&self, &rt, &model, &backend);
        for comp in &comps {
            let sdk_run = sdk.as_ref().map(|sdk| {
                move |golden: &GoldenIo| {
                    this.run_with_sdk(ctx, rt_, model_, comp, backend_, sdk, golden)
                }
            });
            let result = run_one(
                &ctx.root,
                &rt,
                model,
                comp,
                &backend,
                !self.no_clamp,
                sdk_run
                    .as_ref()
                    .map(|f| f as &dyn Fn(&GoldenIo) -> Result<ComponentResult>),
            );
            print_component(&result);
            let gate_failed = !result.pass && result.error.is_none();
            if gate_failed && backend != Backend::OrtCpu {
                crate::outln!(
                    "      hint: find where it diverges with `{}`",
                    crate::diagnose::bisect_hint(&self.sel.model, comp, backend.kind())
                );
            }
            results.push(result);
        }
        let mut report = ParityReport::new(&self.sel.model, &backend, &rt, results);
        report.versions = report.versions.with_provenance(&ctx.root, &self.sel.model);
        let dir = crate::project::reports_dir(&ctx.root, &self.sel.model);
        if !self.sel.only.is_empty() {
            let order: Vec<&str> = model.components.iter().map(|c| c.name()).collect();
            report.merge_earlier(ParityReport::read(&dir, backend.label()), &order);
        }
        write_parity_report(&dir, &report)?;
        report.summarize(&crate::project::rel(&ctx.root, &dir));
        Ok(if report.pass {
            Outcome::Success
        } else {
            Outcome::GateFailed
        })
    }
}

impl Parity {
    /// `--device`: every selected component's context binary on the board's HTP, through the
    /// device's SDK (`crate::device`), judged against its golden on this host.
    fn run_on_device(
        &self,
        ctx: &Ctx,
        rt: &Runtime,
        model: &crate::recipe::Model,
        comps: &[&crate::recipe::Component],
        backend: &Backend,
        url: &str,
    ) -> Result<Outcome> {
        if !matches!(backend, Backend::QnnHtp(_)) {
            bail!("--device runs the built context binaries: use --backend htp");
        }
        if self.toolchain == super::ToolchainKind::Sdk {
            bail!("--device uses the device's own QAIRT SDK: leave out --toolchain sdk");
        }
        let device = crate::device::Device::connect(url)?;
        device.require_runnable(&model.file.target.qairt)?;
        crate::outln!("device: {}", device.info.label());
        let soc = super::target_soc(model, None)?;
        let mut results = Vec::new();
        // A lost device ends the command (exit 2); a component that fails on it is a FAIL row.
        let lost: std::cell::RefCell<Option<String>> = Default::default();
        for comp in comps {
            let art = crate::ctx_build::plan::artifacts(&self.sel.model, comp.name(), &soc);
            let on_device = |golden: &GoldenIo| -> Result<ComponentResult> {
                crate::ctx_build::fresh::fresh_context_wrapper(&ctx.root, rt, model, comp)?;
                let inputs = if self.no_clamp {
                    golden.inputs.clone()
                } else {
                    crate::fp16::clamp_masks(comp, &golden.inputs)
                };
                let log = crate::toolchain::sdk::steps::log_path(
                    &ctx.root,
                    &self.sel.model,
                    comp.name(),
                    "device-htp-run",
                );
                let run = device
                    .run_component(
                        comp,
                        &ctx.root.join(&art.bin),
                        &inputs,
                        0,
                        self.iters as usize,
                        &log,
                    )
                    .inspect_err(|e| {
                        if crate::device::ssh::is_link_failure(e) {
                            *lost.borrow_mut() = Some(format!("{e:#}"));
                        }
                    })?;
                let mut result = crate::parity::component::judge_outputs(
                    model,
                    comp,
                    golden,
                    &run.outputs,
                    backend.label(),
                )?;
                result.session_model = art.bin.display().to_string();
                result.run_seconds = run.stats.p50_us / 1e6;
                result.latency = Some(run.stats);
                Ok(result)
            };
            let result = run_one(
                &ctx.root,
                rt,
                model,
                comp,
                backend,
                !self.no_clamp,
                Some(&on_device),
            );
            if let Some(e) = lost.borrow_mut().take() {
                bail!(e);
            }
            print_component(&result);
            if let Some(l) = &result.latency {
                crate::outln!(
                    "      device execute ({}, {} samples): min {:.1} µs, p50 {:.1} µs, p90 {:.1} µs, max {:.1} µs",
                    l.timing_source,
                    l.samples,
                    l.min_us,
                    l.p50_us,
                    l.p90_us,
                    l.max_us
                );
            }
            results.push(result);
        }
        let mut report = ParityReport::new(&self.sel.model, backend, rt, results);
        report.htp_emulated = None;
        report.device = Some(crate::device::timing_note(&device.info));
        let dir = crate::project::reports_dir(&ctx.root, &self.sel.model);
        if !self.sel.only.is_empty() {
            let order: Vec<&str> = model.components.iter().map(|c| c.name()).collect();
            let earlier = std::fs::read(dir.join(format!("{}.json", report.stem())))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok());
            report.merge_earlier(earlier, &order);
        }
        write_parity_report(&dir, &report)?;
        crate::outln!(
            "{} context binar(y/ies) copied to the device; timing: {}",
            device.uploads(),
            crate::device::timing_note(&device.info)
        );
        report.summarize(&crate::project::rel(&ctx.root, &dir));
        Ok(if report.pass {
            Outcome::Success
        } else {
            Outcome::GateFailed
        })
    }

    /// One component through the SDK's `qnn-net-run`: the DLC on the CPU backend, or the
    /// (checked) context binary on the HTP with its profiled execute time.
    #[allow(clippy::too_many_arguments)]
    fn run_with_sdk(
        &self,
        ctx: &Ctx,
        rt: &Runtime,
        model: &crate::recipe::Model,
        comp: &crate::recipe::Component,
        backend: &Backend,
        sdk: &crate::toolchain::sdk::Sdk,
        golden: &crate::parity::component::GoldenIo,
    ) -> Result<ComponentResult> {
        let soc = super::target_soc(model, None)?;
        let art = crate::ctx_build::plan::artifacts(&self.sel.model, comp.name(), &soc);
        let work = ctx.root.join("target/sdk-parity");
        std::fs::create_dir_all(&work)?;
        let staging = tempfile::tempdir_in(&work)?;
        let job = crate::toolchain::sdk::steps::Job {
            sdk,
            root: &ctx.root,
            model: &self.sel.model,
            comp,
            staging: staging.path(),
        };
        let (actual, latency, ran) = match backend {
            Backend::QnnHtp(_) => {
                crate::ctx_build::fresh::fresh_context_wrapper(&ctx.root, rt, model, comp)?;
                let inputs = if self.no_clamp {
                    golden.inputs.clone()
                } else {
                    crate::fp16::clamp_masks(comp, &golden.inputs)
                };
                let (out, stats) = crate::toolchain::sdk::steps::htp_run(
                    &job,
                    &ctx.root.join(&art.bin),
                    &inputs,
                    self.iters as usize,
                )?;
                (out, stats, &art.bin)
            }
            _ => (
                crate::toolchain::sdk::steps::cpu_run(
                    &job,
                    &ctx.root.join(&art.dlc),
                    &golden.inputs,
                )?,
                None,
                &art.dlc,
            ),
        };
        let mut result =
            crate::parity::component::judge_outputs(model, comp, golden, &actual, backend.label())?;
        result.session_model = ran.display().to_string();
        // The median of the profiled execute times (NETRUN, see `sdk::profile`).
        result.run_seconds = latency.as_ref().map_or(0.0, |l| l.p50_us / 1e6);
        result.latency = latency;
        Ok(result)
    }
}
