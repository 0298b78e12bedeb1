//! `cargo xtask lint [--model M] [--only C,…] [--report FILE]`: every node of the graphs
//! against the committed conformance report (`reports/<model>/conformance.json`): a warning
//! for each operator and attribute set that deviates there or that it does not cover, and for
//! a report that is missing or stale. Deviations seen on edge-case inputs only are counted in
//! one line (listed with `-v`). Warnings exit 0, unless `--deny` (CI): then any finding other
//! than an edge-case-only one exits 1. `build-ctx` prints the same warnings before it builds.

use std::path::PathBuf;

use anyhow::Result;

use super::{Ctx, Outcome};
use xtask_diagnose::conformance::lint::{lint, report_path};

#[derive(clap::Args)]
pub struct Lint {
    #[command(flatten)]
    sel: super::ModelArgs,
    /// Another conformance report to lint against (default: the model's committed one).
    #[arg(long)]
    report: Option<PathBuf>,
    /// Exit 1 when there is any finding other than an edge-case-only deviation (for CI).
    #[arg(long)]
    deny: bool,
}

impl Lint {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let sel = self.sel.select(ctx)?;
        let comps = sel.components();
        super::require_files(ctx, &sel.model, &comps)?;
        let report = match &self.report {
            Some(path) => {
                let path = std::path::absolute(path)?;
                let problem = match std::fs::metadata(&path) {
                    Err(_) => Some("no such file"),
                    Ok(m) if !m.is_file() => Some(
                        "not a regular file (a folder, device or FIFO): give a conformance report (JSON)",
                    ),
                    Ok(_) => None,
                };
                if let Some(problem) = problem {
                    return Err(xtask_base::bad_input::BadInput(anyhow::anyhow!(
                        "--report {}: {problem}",
                        path.display()
                    ))
                    .into());
                }
                path
            }
            None => report_path(&ctx.root, &self.sel.model),
        };
        let found = lint(&ctx.root, &self.sel.model, &comps, &report)?;
        let verbose = xtask_base::ui::verbose();
        let edge = found.warnings.iter().filter(|w| w.edge_only).count();
        for w in found.warnings.iter().filter(|w| verbose || !w.edge_only) {
            xtask_base::outln!("warning: {}", w.text);
        }
        if edge > 0 && !verbose {
            xtask_base::outln!(
                "{edge} operator(s) deviate on edge-case inputs only (zeros, negative, large, fp16-max); -v lists them"
            );
        }
        let denied = found.warnings.len() - edge;
        xtask_base::outln!(
            "lint {}: {} node(s) checked against {}, {} warning(s) ({edge} on edge-case inputs only)",
            self.sel.model,
            found.nodes,
            xtask_base::project::rel(&ctx.root, &report),
            found.warnings.len()
        );
        Ok(match self.deny && denied > 0 {
            true => Outcome::GateFailed,
            false => Outcome::Success,
        })
    }
}

/// The lint's warnings for `build-ctx`, printed before it builds (to stderr, so a
/// `--dry-run --json` plan on stdout stays JSON). A lint that cannot run says so and the
/// build goes on.
pub fn warn_before_build(ctx: &Ctx, model: &str, comps: &[&xtask_recipe::recipe::Component]) {
    match lint(&ctx.root, model, comps, &report_path(&ctx.root, model)) {
        Ok(found) => {
            let (edge, listed): (Vec<_>, Vec<_>) =
                found.warnings.into_iter().partition(|w| w.edge_only);
            for w in listed {
                xtask_base::ui::warning(&w.text);
            }
            // Known fp16 edge cases are noise on every build: counted only with -v.
            if !edge.is_empty() && xtask_base::ui::verbose() {
                xtask_base::ui::warning(&format!(
                    "{} operator(s) of these graphs deviate on edge-case inputs only (zeros, negative, large, fp16-max); `cargo xtask lint -v --model {model}` lists them",
                    edge.len()
                ));
            }
        }
        Err(e) => xtask_base::ui::warning(&format!("the conformance lint could not run: {e:#}")),
    }
}
