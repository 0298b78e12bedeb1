//! What every report shares: the tool versions it carries, its timestamp, the JSON + Markdown
//! pair it is written as, the cosine format, and (in `html`) the self-contained HTML page with
//! its SVG plots. Each domain's report lives with its domain (`parity::report`,
//! `chain::report`, `build::report`).

pub mod html;
pub mod latency;
pub mod provenance;

use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolVersions {
    pub xtask: String,
    pub onnxruntime: String,
    pub qnn_build: Option<String>,
    pub qnn_plugin: String,
    pub runtime_source: String,
    /// `XTASK_DATA_ROOT`, when inputs were allowed to live outside the project (recorded so a
    /// report always says where its data came from).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_root: Option<String>,
    /// Set when some of the model's input files were fetched without a manifest
    /// (`fetch --unverified`): which, and from where (`bundle::provenance`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unverified_inputs: Option<String>,
}

impl ToolVersions {
    /// The versions the loaded libraries report, for every report.
    pub fn of(rt: &crate::runtime::Runtime) -> Self {
        ToolVersions {
            xtask: xtask_base::identity::xtask_id().into(),
            onnxruntime: rt.ort_version.clone(),
            qnn_build: rt.qnn_build_version(),
            qnn_plugin: crate::runtime::bootstrap::QNN_WHEEL.requirement.into(),
            runtime_source: rt.libs.source.into(),
            data_root: xtask_recipe::recipe::paths::data_root().map(|d| d.display().to_string()),
            unverified_inputs: None,
        }
    }

    /// These versions with the model's unverified inputs, if any (`fetch --unverified`).
    pub fn with_provenance(mut self, root: &Path, model: &str) -> Self {
        self.unverified_inputs = crate::report::provenance::note(root, model);
        self
    }

    /// The one line every Markdown report opens with: what produced its figures.
    pub fn summary(&self) -> String {
        let mut line = format!(
            "ONNX Runtime {} · QNN {} · {} · xtask {} · runtime: {}",
            self.onnxruntime,
            self.qnn_build.as_deref().unwrap_or("(not loaded)"),
            self.qnn_plugin,
            self.xtask,
            self.runtime_source
        );
        if let Some(d) = &self.data_root {
            line.push_str(&format!(" · data: XTASK_DATA_ROOT={d}"));
        }
        if let Some(u) = &self.unverified_inputs {
            line.push_str(&format!(" · **{u}**"));
        }
        line
    }
}

pub fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Writes `<dir>/<stem>.json` (every figure) and `<dir>/<stem>.md` (for people), atomically.
pub fn write_json_and_markdown<T: Serialize>(
    dir: &Path,
    stem: &str,
    report: &T,
    markdown: &str,
) -> Result<()> {
    xtask_base::atomic::write_atomic(
        &dir.join(format!("{stem}.json")),
        &serde_json::to_vec_pretty(report)?,
    )?;
    xtask_base::atomic::write_atomic(&dir.join(format!("{stem}.md")), markdown.as_bytes())
}

/// A Markdown table: the header row, its rule, one row per entry, each line ending in a
/// newline. A `|` inside a cell is escaped and a line break becomes a space, so no cell can
/// break the table (the HTML reports render these tables, `report::html`).
pub fn md_table<R, C>(headers: &[&str], rows: R) -> String
where
    R: IntoIterator<Item = C>,
    C: IntoIterator<Item = String>,
{
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    // A `|` inside a cell (`|y|/|golden|`) is escaped, header or row, else it splits the cell.
    let mut md = line(headers.iter().map(|h| h.replace('|', "\\|")).collect());
    md.push_str(&line(vec!["---".into(); headers.len()]).replace(' ', ""));
    for row in rows {
        md.push_str(&line(
            row.into_iter()
                .map(|c| c.replace('|', "\\|").replace('\n', " "))
                .collect(),
        ));
    }
    md
}

/// Cosines as the model card prints them: 1.0 when exactly one, else 8 decimals.
pub fn fmt_cosine(c: f64) -> String {
    if c == 1.0 {
        "1.0".into()
    } else {
        format!("{c:.8}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_markdown_table_escapes_what_would_break_it() {
        let t = super::md_table(&["a", "b"], [vec!["x|y".to_string(), "1\n2".to_string()]]);
        assert_eq!(t, "| a | b |\n|---|---|\n| x\\|y | 1 2 |\n");
    }
}
