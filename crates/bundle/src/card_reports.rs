//! The reports a bundle's card shows, found for the binaries being packaged, and what HTP
//! parity never measured on them: `package` refuses such a bundle unless
//! `--allow-unmeasured`, and then says so on stderr and in the card, so a bundle never ships
//! "Not measured" without anyone having been told.

use std::path::Path;

use anyhow::{Result, bail};

use super::checks::{ContextBuilt, unmeasured, usable_report};
use super::package_request::PackageRequest;
use xtask_base::record::Unreadable;
use xtask_base::vocab::BackendKind;
use xtask_chain::chain::report::RunReport;
use xtask_parity::parity::report::ParityReport;

/// The reports the card shows: each only when it passes and is about these binaries.
pub struct CardReports {
    pub htp: Option<ParityReport>,
    /// The chain's verdict and latency: the newest run of the whole chain on the HTP (this
    /// host's emulator or a board) after the packaged binaries were built, else (only with
    /// `--allow-unmeasured`) the latency of the most telling other backend.
    pub run: Option<(BackendKind, RunReport)>,
    /// Each component HTP parity did not measure on the packaged binary, with why.
    pub htp_unmeasured: Vec<String>,
    /// Why the chain never ran on the HTP with these binaries (None: `run` is that run).
    pub chain_unmeasured: Option<String>,
}

impl CardReports {
    pub fn find(req: &PackageRequest<'_>, built: &ContextBuilt) -> Result<Self> {
        let reports = xtask_base::project::reports_dir(req.root, req.model_name());
        let model = req.model_name();
        let htp_path = reports.join(format!("parity-{}.json", BackendKind::Htp));
        let htp_rebuild = format!("cargo xtask parity --backend htp --model {model}");
        let htp = usable_report(&htp_path, &htp_rebuild, req.comps, built, "HTP parity")?;
        let htp_unmeasured = match htp {
            Some(_) => Vec::new(),
            None => {
                match xtask_base::record::read_or_missing::<ParityReport>(&htp_path, &htp_rebuild) {
                    Ok(r) => unmeasured(&r, req.comps, built),
                    Err(Unreadable::Missing) => req
                        .comps
                        .iter()
                        .map(|c| format!("{}: no HTP parity report", c.name()))
                        .collect(),
                    Err(Unreadable::Refused(e)) => return Err(e),
                }
            }
        };
        let chain = htp_chain_run(&reports, model, built)?;
        let chain_unmeasured = match &chain {
            Some(_) => None,
            None => Some(format!(
                "no run of the whole chain on the HTP after its binaries were built (`cargo xtask run --backend htp --model {model}` runs it)"
            )),
        };
        let mut run = chain.map(|r| (BackendKind::Htp, r));
        if run.is_none() {
            for b in [BackendKind::Cpu, BackendKind::Ort] {
                let found = usable_report(
                    &reports.join(format!("run-{b}.json")),
                    &format!("cargo xtask run --backend {b} --model {model}"),
                    &[],
                    built,
                    "the chain run",
                )?;
                if let Some(r) = found {
                    run = Some((b, r));
                    break;
                }
            }
        }
        Ok(CardReports {
            htp,
            run,
            htp_unmeasured,
            chain_unmeasured,
        })
    }

    /// Refuses (exit 2) a bundle whose chain never ran on the HTP with these binaries, naming
    /// the run to do, unless `--allow-unmeasured`: then a warning says the same, and so does
    /// the card at its top. (A chain that ran and failed is refused by `find`, always.)
    pub fn refuse_chain_unmeasured(&self, req: &PackageRequest<'_>) -> Result<()> {
        let Some(why) = &self.chain_unmeasured else {
            return Ok(());
        };
        if !req.allow_unmeasured {
            bail!(
                "the bundle's verdict is its chain's, and {why}; run it, or pass --allow-unmeasured to package anyway (the card's verdict is then UNMEASURED, said at its top)"
            );
        }
        xtask_base::ui::warning(&format!(
            "packaging a bundle whose chain was never measured on the HTP (--allow-unmeasured; the card says so at its top): {why}"
        ));
        Ok(())
    }

    /// Refuses (exit 2) a bundle with binaries HTP parity never measured, naming each and the
    /// command that measures them, unless `--allow-unmeasured`: then a warning says the same.
    pub fn refuse_unmeasured(&self, req: &PackageRequest<'_>) -> Result<()> {
        if self.htp_unmeasured.is_empty() {
            return Ok(());
        }
        let list = self.htp_unmeasured.join("\n  ");
        let measure = format!(
            "cargo xtask parity --backend htp --soc {} --model {}",
            req.soc.id,
            req.model_name()
        );
        if !req.allow_unmeasured {
            bail!(
                "HTP parity was never measured on {} of the {} binaries to package:\n  {list}\nmeasure them with `{measure}`, or pass --allow-unmeasured to package them anyway (the card then says so)",
                self.htp_unmeasured.len(),
                req.comps.len()
            );
        }
        xtask_base::ui::warning(&format!(
            "packaging {} binaries whose HTP parity was never measured (--allow-unmeasured; the card says so):\n  {list}\nmeasure them with `{measure}`",
            self.htp_unmeasured.len()
        ));
        Ok(())
    }
}

/// The newest report of the whole chain on the HTP in `reports` (`run-htp.json`, a quick run's
/// `run-htp-iters<N>-warmup<M>.json`, a board's `run-htp-device*.json`; never a what-if's
/// `-fp32-`/`-attribute` report) written after every packaged binary was built. A failed one
/// is refused here: no flag packages a bundle whose chain fails. None when there is none.
fn htp_chain_run(reports: &Path, model: &str, built: &ContextBuilt) -> Result<Option<RunReport>> {
    let newest_binary = built.values().copied().max().unwrap_or(0);
    let mut best: Option<(u64, std::path::PathBuf, RunReport)> = None;
    let entries = match std::fs::read_dir(reports) {
        Ok(e) => e,
        Err(_) => return Ok(None),
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".json") else {
            continue;
        };
        if !is_chain_run_stem(stem) {
            continue;
        }
        let path = entry.path();
        let rerun = format!("cargo xtask run --backend htp --model {model}");
        let report: RunReport = match xtask_base::record::read_or_missing(&path, &rerun) {
            Ok(r) => r,
            Err(Unreadable::Missing) => continue,
            Err(Unreadable::Refused(e)) => return Err(e),
        };
        if report.run.model != model || report.created_unix < newest_binary {
            continue;
        }
        if best
            .as_ref()
            .is_none_or(|(t, _, _)| report.created_unix > *t)
        {
            best = Some((report.created_unix, path, report));
        }
    }
    match best {
        Some((_, path, report)) if !report.pass => bail!(
            "the chain on the HTP failed ({}: {}); a bundle's verdict is its chain's, and no flag packages a failing chain: fix it (its report names the next steps) or change the gate in the recipe",
            path.display(),
            report.failures.join("; ")
        ),
        Some((_, _, report)) => Ok(Some(report)),
        None => Ok(None),
    }
}

/// `run-htp`, `run-htp-iters2-warmup1`, `run-htp-device`, `run-htp-device-iters…`: a run of
/// the whole chain as built, not a what-if.
fn is_chain_run_stem(stem: &str) -> bool {
    let Some(rest) = stem.strip_prefix("run-htp") else {
        return false;
    };
    let rest = rest.strip_prefix("-device").unwrap_or(rest);
    rest.is_empty() || (rest.starts_with("-iters") && rest.contains("-warmup"))
}
