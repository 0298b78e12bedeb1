//! The reports a bundle's card shows, found for the binaries being packaged, and what HTP
//! parity never measured on them: `package` refuses such a bundle unless
//! `--allow-unmeasured`, and then says so on stderr and in the card, so a bundle never ships
//! "Not measured" without anyone having been told.

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
    /// The chain's latency, from the run report of the most telling backend there is.
    pub run: Option<(BackendKind, RunReport)>,
    /// Each component HTP parity did not measure on the packaged binary, with why.
    pub htp_unmeasured: Vec<String>,
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
        let mut run = None;
        for b in super::card::RUN_BACKENDS {
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
        Ok(CardReports {
            htp,
            run,
            htp_unmeasured,
        })
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
