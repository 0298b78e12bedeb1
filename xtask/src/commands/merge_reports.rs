//! `cargo xtask merge-reports --model M DIR...`: the parity reports that CI matrix entries wrote
//! with `parity --only <component>` (each DIR one entry's `reports/<model>/`), merged per
//! backend into `reports/<model>/parity-<backend>.{json,md}` as one run over all of them would
//! have written (`ParityReport::insert_missing`, the one merge `--only` runs use too). Nothing is re-run; each component keeps its own
//! figures, hashes and time. A component measured by two entries, a report of another model, or
//! entries run with different tool versions are refused.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::{Ctx, Outcome};
use xtask_parity::parity::report::ParityReport;
use xtask_parity::parity::report_files::write_parity_report;

#[derive(clap::Args)]
pub struct MergeReports {
    #[command(flatten)]
    sel: super::ModelArgs,
    /// Folders holding `parity-<backend>.json` reports (one per matrix entry).
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
}

impl MergeReports {
    /// Per backend: the entries' reports merged, written, and announced; the exit code says
    /// whether every merged component passed.
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let sel = self.sel.select(ctx)?;
        let order: Vec<&str> = sel.model.components.iter().map(|c| c.name()).collect();
        let out = xtask_base::project::reports_dir(&ctx.root, sel.name());
        let mut pass = true;
        let mut merged_any = false;
        for backend in xtask_base::vocab::BackendKind::ALL {
            let Some(report) = self.merge_backend(backend, sel.name(), &order)? else {
                continue;
            };
            write_parity_report(&out, &report)?;
            announce(backend, &report);
            pass &= report.pass;
            merged_any = true;
        }
        if !merged_any {
            bail!("no parity-<backend>.json in any of the given folders");
        }
        Ok(if pass {
            Outcome::Success
        } else {
            Outcome::GateFailed
        })
    }

    /// The `parity-<backend>.json` of every folder that has one, merged in the order given;
    /// None when no folder has one.
    fn merge_backend(
        &self,
        backend: xtask_base::vocab::BackendKind,
        model: &str,
        order: &[&str],
    ) -> Result<Option<ParityReport>> {
        let mut merged: Option<ParityReport> = None;
        for dir in &self.dirs {
            let file = dir.join(format!("parity-{backend}.json"));
            if !file.is_file() {
                continue;
            }
            let Some(report) = ParityReport::read(dir, backend)? else {
                bail!("{} is not a parity report", file.display());
            };
            check_entry(&report, &file, model, order)?;
            merged = Some(match merged {
                None => report,
                Some(earlier) => join(earlier, report, &file, backend, order)?,
            });
        }
        Ok(merged)
    }
}

/// An entry's report must be of this model and name only its components.
fn check_entry(report: &ParityReport, file: &Path, model: &str, order: &[&str]) -> Result<()> {
    if report.model != model {
        bail!(
            "{} is a report of model `{}`, not `{model}`",
            file.display(),
            report.model,
        );
    }
    for c in &report.components {
        if !order.contains(&c.component.as_str()) {
            bail!(
                "{}: model `{model}` has no component `{}`",
                file.display(),
                c.component
            );
        }
    }
    Ok(())
}

/// `report` (read from `file`) merged with the entries before it: refused when it measures a
/// component again or was run with other tools (the entries of one release share them).
fn join(
    earlier: ParityReport,
    mut report: ParityReport,
    file: &Path,
    backend: xtask_base::vocab::BackendKind,
    order: &[&str],
) -> Result<ParityReport> {
    let twice: Vec<&str> = report
        .components
        .iter()
        .filter(|c| {
            earlier
                .components
                .iter()
                .any(|e| e.component == c.component)
        })
        .map(|c| c.component.as_str())
        .collect();
    if !twice.is_empty() {
        bail!(
            "{} measures {} again on `{backend}`: each component must come from one entry",
            file.display(),
            twice.join(", ")
        );
    }
    let (a, b) = (
        serde_json::to_value(&earlier.versions)?,
        serde_json::to_value(&report.versions)?,
    );
    if a != b {
        bail!(
            "{} was run with other tools than the reports before it ({b} vs {a}): not one release",
            file.display()
        );
    }
    // CI entries of one release: none is an earlier run of another.
    report.insert_missing(earlier.components, order);
    Ok(report)
}

/// The line saying what was merged for `backend` and whether all of it passed.
fn announce(backend: xtask_base::vocab::BackendKind, report: &ParityReport) {
    xtask_base::outln!(
        "parity-{backend}: {} component(s) merged ({}), {}",
        report.components.len(),
        report
            .components
            .iter()
            .map(|c| c.component.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        if report.pass {
            "all passed"
        } else {
            "NOT all passed"
        }
    );
}
