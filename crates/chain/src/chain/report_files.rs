//! The three files of a chain run report, `reports/<model>/<stem>.{json,md,html}` (the stem
//! says which run: `RunReport::stem`). The JSON is the record (`record::write`), read back
//! through `RunReport::read`; the Markdown and the page are renderings of it.

use std::path::Path;

use anyhow::{Context, Result};

use super::report::RunReport;

/// Writes the report's JSON, Markdown and HTML page (each atomically).
pub fn write_run_report(dir: &Path, r: &RunReport) -> Result<()> {
    let stem = r.stem();
    xtask_base::record::write(&dir.join(format!("{stem}.json")), r)?;
    for (ext, text) in [
        ("md", super::report_md::markdown(r)),
        ("html", super::html::html(r)),
    ] {
        let path = dir.join(format!("{stem}.{ext}"));
        xtask_base::atomic::write_atomic(&path, text.as_bytes())
            .with_context(|| format!("cannot write the chain run report {}", path.display()))?;
    }
    Ok(())
}
