//! Writes the build report's three files (`reports/<model>/build-soc<N>.{json,md,html}`), each
//! atomically; the data is `report`, the renderings `report_md` and `report_html`.

use std::path::Path;

use anyhow::Result;

use super::report::BuildReport;

pub fn write_build_report(dir: &Path, report: &BuildReport) -> Result<()> {
    let stem = format!("build-soc{}", report.soc.id);
    let md = super::report_md::markdown(report);
    xtask_runtime::report::write_json_and_markdown(dir, &stem, report, &md)?;
    xtask_base::atomic::write_atomic(
        &dir.join(format!("{stem}.html")),
        super::report_html::html(report, &md).as_bytes(),
    )
}
