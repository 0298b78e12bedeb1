//! `cargo xtask parity --backend ort|cpu|htp`: every component against its golden tensors,
//! through the one parity runner (`parity::runner`) with the executor the flags choose.

use anyhow::{Result, bail};

use super::{BackendKind, Ctx, Outcome, ToolchainKind, backend_for, require_files};
use xtask_chain::executors::{device::OnDevice, embedded::Embedded, sdk::SdkNetRun};
use xtask_parity::parity::runner::{Executor, ParityRun};
use xtask_runtime::runtime::{Runtime, bootstrap::ensure_runtime};

#[derive(clap::Args)]
pub struct Parity {
    /// The backend: ORT's CPU EP, the QNN CPU backend, or the built HTP context binaries.
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
    toolchain: ToolchainKind,
    /// Inferences per component in the one profiled `qnn-net-run` call of `--toolchain sdk
    /// --backend htp` or `--device` (an input list of N lines); the report gives their spread.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    iters: u32,
    /// Run the context binaries on a board over ssh (`ssh://user@host[:port][/workdir]`) with
    /// the device's own QAIRT SDK (`--backend htp` only); see README "Validate on a board".
    #[arg(long, value_name = "ssh://user@host[:port][/workdir]", value_parser = xtask_chain::device::url::parse_device_arg)]
    device: Option<String>,
    #[command(flatten)]
    pub json: super::JsonFlag,
}

impl Parity {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let (sdk, htp) = (
            self.toolchain == ToolchainKind::Sdk,
            self.backend == BackendKind::Htp,
        );
        if self.device.is_some() && (!htp || sdk) {
            bail!(
                "--device runs the built context binaries with the device's own SDK: use --backend htp without --toolchain sdk"
            );
        }
        if self.iters != 1 && !(htp && (sdk || self.device.is_some())) {
            bail!(
                "--iters applies to profiled HTP runs: --toolchain sdk or --device, with --backend htp"
            );
        }
        let sel = self.sel.select(ctx)?;
        let comps = sel.components();
        require_files(ctx, &sel.model, &comps)?;
        xtask_parity::parity::runner::announce(&ctx.root, sel.name(), self.backend, &comps);
        // An HTP result can be released: its libraries are re-hashed in full first.
        let libs = match self.backend {
            BackendKind::Htp => {
                xtask_runtime::runtime::bootstrap::ensure_runtime_rehashed(&ctx.root)?
            }
            _ => ensure_runtime(&ctx.root)?,
        };
        let rt = Runtime::load(libs)?;
        if self.backend != BackendKind::Ort && !sdk {
            xtask_recipe::recipe::target::check_qairt(
                &sel.model,
                rt.qnn_build_version().as_deref(),
            )?;
        }
        if htp && self.device.is_none() {
            // Missing or stale binaries are the environment's (exit 2, one build command).
            xtask_ctx_build::fresh::fresh_context_wrappers(&ctx.root, &rt, &sel.model, &comps)?;
        }
        let (root, model, clamp, iters) =
            (&ctx.root, &sel.model, !self.no_clamp, self.iters as usize);
        let exec: Box<dyn Executor> = match (&self.device, sdk) {
            (Some(url), _) => Box::new(OnDevice::connect(root, &rt, model, url, clamp, iters)?),
            (None, true) => Box::new(SdkNetRun::detect(
                root,
                &rt,
                model,
                self.backend,
                clamp,
                iters,
            )?),
            (None, false) => Box::new(Embedded {
                root,
                rt: &rt,
                model,
                backend: backend_for(model, self.backend),
                clamp_masks: clamp,
            }),
        };
        let run = ParityRun {
            root,
            rt: &rt,
            model,
            components: &comps,
            narrowed: !self.sel.only.is_empty(),
        };
        run.run(exec.as_ref())
    }
}
