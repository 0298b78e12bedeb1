//! The files of one parity report: `<stem>.json` (the record), `<stem>.md` and `<stem>.html`.
//! Apart from `report` so that the record's module does not import the pages rendered from it.

use std::path::Path;

use anyhow::Result;

use super::report::ParityReport;

/// Writes the report as JSON, Markdown and HTML under its stem (`ParityReport::stem`) in `dir`.
pub fn write_parity_report(dir: &Path, report: &ParityReport) -> Result<()> {
    let md = super::markdown::parity_markdown(report);
    xtask_runtime::report::write_json_and_markdown(dir, &report.stem(), report, &md)?;
    xtask_base::atomic::write_atomic(
        &dir.join(format!("{}.html", report.stem())),
        super::html::html(report).as_bytes(),
    )
}
