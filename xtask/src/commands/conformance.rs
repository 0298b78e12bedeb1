//! `cargo xtask conformance [--model M] [--only C,…] [--op Op,…] [--backend cpu,htp]
//! [--seed N]`: every operator the graphs run, alone, on the QNN CPU backend and the emulated
//! HTP against ORT's CPU EP (see `xtask_diagnose::conformance`). The full sweep writes
//! `reports/<model>/conformance.{json,md}` (committed; `lint` reads it); a narrowed one
//! (`--only`, `--op`, one backend, another seed) writes `conformance-partial.*` beside it, so
//! reproducing one figure never replaces the committed report.

use anyhow::{Result, bail};

use super::{BackendKind, Ctx, Outcome, require_files};
use xtask_diagnose::conformance::{DEFAULT_SEED, SweepJob, seed_flag, sweep};
use xtask_runtime::runtime::Runtime;
use xtask_runtime::runtime::bootstrap::ensure_runtime;

#[derive(clap::Args)]
pub struct Conformance {
    #[command(flatten)]
    sel: super::ModelArgs,
    /// Only these operator types (comma-separated ONNX op types, e.g. GridSample,Softmax).
    #[arg(long, value_delimiter = ',')]
    op: Vec<String>,
    /// The QNN backends to measure (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "cpu,htp")]
    backend: Vec<BackendKind>,
    /// Seed of the random input sets.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    seed: u64,
}

impl Conformance {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        if self.backend.contains(&BackendKind::Ort) {
            bail!(
                "conformance measures QNN backends against ORT's CPU EP: use --backend cpu and/or htp"
            );
        }
        let mut backends = Vec::new();
        for b in [BackendKind::Cpu, BackendKind::Htp] {
            if self.backend.contains(&b) {
                backends.push(b);
            }
        }
        let sel = self.sel.select(ctx)?;
        let comps = sel.components();
        require_files(ctx, &sel.model, &comps)?;
        refuse_absent_ops(ctx, &comps, &self.op)?;
        let rt = Runtime::load(ensure_runtime(&ctx.root)?)?;
        let full = self.sel.only.is_empty()
            && self.op.is_empty()
            && backends.len() == 2
            && self.seed == DEFAULT_SEED;
        let command = self.command_line(&backends);
        let report = sweep(&SweepJob {
            root: &ctx.root,
            model: &sel.model,
            comps,
            rt: &rt,
            backends,
            ops: self.op.clone(),
            seed: self.seed,
            command,
        })?;
        let dir = xtask_base::project::reports_dir(&ctx.root, &self.sel.model);
        let stem = if full {
            "conformance"
        } else {
            "conformance-partial"
        };
        xtask_diagnose::conformance::html::write_all(&dir, stem, &report)?;
        let findings = report.findings().count();
        xtask_base::outln!(
            "conformance {}: {} row(s), {findings} finding(s) (DEVIATES/UNSUPPORTED/ERROR); report {}",
            self.sel.model,
            report.rows.len(),
            xtask_base::project::rel(&ctx.root, &dir.join(format!("{stem}.md")))
        );
        // Findings are the product of the sweep, not a failure of it: `lint` acts on them.
        Ok(Outcome::Success)
    }

    /// The command as given, without machine paths (`--root` is not part of it); `backends`
    /// are the QNN backends `--backend` selected, in the order `run` measures them.
    fn command_line(&self, backends: &[BackendKind]) -> String {
        let mut cmd = format!("cargo xtask conformance --model {}", self.sel.model);
        if !self.sel.only.is_empty() {
            cmd += &format!(" --only {}", self.sel.only.join(","));
        }
        if !self.op.is_empty() {
            cmd += &format!(" --op {}", self.op.join(","));
        }
        if backends.len() != 2 {
            let names: Vec<&str> = backends.iter().map(|b| b.label()).collect();
            cmd += &format!(" --backend {}", names.join(","));
        }
        cmd + &seed_flag(self.seed)
    }
}

/// `--op` names that no selected graph runs are refused (exit 2) with the operator types the
/// graphs hold: a sweep of them would measure nothing and say so with 0 rows.
fn refuse_absent_ops(
    ctx: &Ctx,
    comps: &[&xtask_recipe::recipe::Component],
    ops: &[String],
) -> Result<()> {
    if ops.is_empty() {
        return Ok(());
    }
    let mut present = std::collections::BTreeSet::new();
    for comp in comps {
        let onnx = &comp.file.component.onnx;
        let graph = xtask_onnx::onnx::proto::read_summary(&ctx.root.join(onnx))?;
        present.extend(graph.nodes.into_iter().map(|n| n.op_type));
    }
    let absent: Vec<&str> = ops
        .iter()
        .filter(|o| !present.contains(*o))
        .map(String::as_str)
        .collect();
    if absent.is_empty() {
        return Ok(());
    }
    Err(xtask_base::bad_input::BadInput(anyhow::anyhow!(
        "--op {} names no operator of the graphs of {}: the operator types they run are {}",
        absent.join(","),
        comps
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(", "),
        present.into_iter().collect::<Vec<_>>().join(", ")
    ))
    .into())
}
