//! `cargo xtask run --backend ort|cpu|htp`: the whole chain end to end, as the robot runs it,
//! with chain parity (every boundary tensor against the golden) and latency, reported as
//! `reports/<model>/run-<backend>.{json,md,html}` (`run-htp-device` on a board). The work is
//! `chain::run`, over this host's sessions (`chain::host`) or a board (`device::chain`).

use anyhow::Result;

use super::{BackendKind, Ctx, Outcome, backend_for, require_files, select_components};
use xtask_chain::chain::host::{RunOptions, run_on_host};
use xtask_chain::chain::run::host_section;
use xtask_recipe::recipe::load_model;

#[derive(clap::Args)]
pub struct Run {
    /// The backend: ORT's CPU EP, the QNN CPU backend, or the built HTP context binaries.
    #[arg(long, value_enum)]
    backend: BackendKind,
    /// The model: a folder under `recipes/`.
    #[arg(long, default_value = "tiny", value_parser = xtask_recipe::recipe::names::parse_model_name)]
    model: String,
    /// Timed chain runs. Another count than 10 (or --warmup than 2) writes its report under a
    /// variant name (`run-htp-iters2-warmup1.json`), never over the default run's.
    #[arg(long, default_value_t = xtask_chain::chain::report::DEFAULT_ITERS)]
    iters: usize,
    /// Untimed chain runs before timing.
    #[arg(long, default_value_t = xtask_chain::chain::report::DEFAULT_WARMUP)]
    warmup: usize,
    /// Print the run, write no report file (a quick look that keeps every report as it is).
    #[arg(long)]
    no_report: bool,
    /// Keep every session loaded (the device's mode; the default).
    #[arg(long, conflicts_with = "streaming")]
    resident: bool,
    /// Load one component at a time: memory bounded by the largest component.
    #[arg(long)]
    streaming: bool,
    /// Run each component on a board over ssh (`ssh://user@host[:port][/workdir]`) with the
    /// device's own QAIRT SDK, the host steps here (`--backend htp` only; `--iters` and
    /// `--warmup` are inferences per `qnn-net-run` call); see README "Validate on a board".
    #[arg(
        long,
        value_name = "ssh://user@host[:port][/workdir]",
        conflicts_with = "streaming",
        value_parser = xtask_chain::device::url::parse_device_arg
    )]
    device: Option<String>,
    /// What-if: run these components (comma-separated) on ORT's CPU EP in fp32, the rest on
    /// the backend.
    #[arg(long, value_delimiter = ',')]
    fp32: Vec<String>,
    /// Rerun the chain once per component with only it in fp32 and rank the components by the
    /// normalized-actions error each removes (which to fix first).
    #[arg(long)]
    attribute: bool,
    #[command(flatten)]
    pub json: super::JsonFlag,
}

impl Run {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let model = load_model(&ctx.root, &self.model)?;
        host_section(&model)?;
        require_files(ctx, &model, &select_components(&model, &[])?)?;
        if let Some(url) = &self.device {
            if self.backend != super::BackendKind::Htp {
                anyhow::bail!("--device runs the built context binaries: use --backend htp");
            }
            if self.no_report {
                anyhow::bail!("--no-report applies to runs on this host, not --device");
            }
            let report = xtask_chain::device::chain::connect_and_run(
                &ctx.root,
                &model,
                url,
                self.iters,
                self.warmup,
            )?;
            return Ok(outcome(report.pass));
        }
        let opts = RunOptions {
            iters: self.iters,
            warmup: self.warmup,
            streaming: self.streaming,
            fp32: self.fp32,
            attribute: self.attribute,
            no_report: self.no_report,
        };
        let report = run_on_host(&ctx.root, &model, &backend_for(&model, self.backend), &opts)?;
        Ok(outcome(report.pass))
    }
}

/// A run's exit: success when every gate passed.
fn outcome(pass: bool) -> Outcome {
    if pass {
        Outcome::Success
    } else {
        Outcome::GateFailed
    }
}
