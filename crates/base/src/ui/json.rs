//! `--json` on `doctor`, `parity`, `run`, `bisect` and `verify`: ONE document on stdout,
//! `{"schema_version", "command", "exit_code", "report", "error"}`, where `report` is the
//! same serialisation the command writes to `reports/` (no parallel structs). The human
//! lines go to stderr meanwhile.

use std::sync::Mutex;

use serde::Serialize;

/// Bumped when a field of the envelope changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 1;

static REPORT: Mutex<Option<serde_json::Value>> = Mutex::new(None);

/// Hands the command's report to the JSON document (a no-op without `--json`).
pub fn offer(report: &impl Serialize) {
    if !super::json() {
        return;
    }
    if let Ok(value) = serde_json::to_value(report) {
        *REPORT.lock().unwrap_or_else(|e| e.into_inner()) = Some(value);
    }
}

/// The envelope of one command's result.
pub fn document(command: &str, exit_code: u8, error: Option<String>) -> serde_json::Value {
    let report = REPORT.lock().unwrap_or_else(|e| e.into_inner()).take();
    serde_json::json!({
        "schema_version": SCHEMA_VERSION,
        "command": command,
        "exit_code": exit_code,
        "report": report,
        "error": error,
    })
}

/// Prints the document on the tool's stdout.
pub fn emit(command: &str, exit_code: u8, error: Option<String>) {
    let doc = document(command, exit_code, error);
    let text = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| doc.to_string());
    crate::ui::stdio::write_stdout(&text);
}
