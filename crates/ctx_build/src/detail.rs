//! What a step's run looked like, for reports: memory, CPU time, the compiler's stages, when
//! it ran, what the toolchain said. Typed, so the build report, its Markdown and HTML, and the
//! scheduler's memory model read the same fields the step wrote; never read back as facts
//! (those are `facts::StepFacts`). Every field is optional and omitted when unset, so the JSON
//! holds only what the step knew.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use xtask_parity::parity::component::ComponentResult;
use xtask_runtime::runtime::placement::Placement;

/// Whether the recipe's `graph_name` is the name inside the binary, and if not why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphNameHonoured {
    pub recipe: String,
    pub honoured: bool,
    pub why: Option<String>,
}

/// Run details of one step (`StepRecord::detail`, `StepOutcome::detail`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StepDetail {
    /// One line for the report's table (the facts' summary, or the rewrites').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// CPU parity: every output's figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ComponentResult>,
    /// Convert (embedded): where ORT placed the nodes while the DLC was dumped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// Convert (embedded): the file name QNN's IR backend gave the DLC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dlc_from: Option<String>,
    /// Context: the graph name inside the binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_name: Option<String>,
    /// Context: the QNN build the binary names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ep_sdk_version: Option<String>,
    /// Context: the binary's file name as the wrapper names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bin_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_name_honoured: Option<GraphNameHonoured>,
    /// SDK toolchain: its label and the environment its tools ran in (the SDK's own folders).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolchain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sdk_env: Option<BTreeMap<String, String>>,
    /// The process's peak resident memory during the step, and at its start (MB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_rss_mb: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_start_mb: Option<f64>,
    /// The largest child process's peak resident memory during the step (MB), when known
    /// (see `rss::StepCost::child_peak_rss_mb`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_peak_rss_mb: Option<f64>,
    /// CPU seconds of the process (children included) during the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_s: Option<f64>,
    /// Measured while another step of the process ran (`--jobs` > 1): the figures above are
    /// the process's, an upper bound of the step's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub beside_other_steps: bool,
    /// The HTP compiler's stages and their seconds, as it reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_stages: Option<Vec<(String, f64)>>,
    /// The scheduler's memory estimate for the step (MB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_estimate_mb: Option<f64>,
    /// When it ran (to see what overlapped with `--jobs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_unix_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_unix_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited_for_memory_seconds: Option<f64>,
    /// Restored from the build cache: under which key, and how long its build took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_from_cache: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_seconds: Option<f64>,
}

impl StepDetail {
    /// The memory the step added to the process (peak minus start), when both were measured.
    pub fn memory_added_mb(&self) -> Option<f64> {
        Some((self.peak_rss_mb? - self.rss_start_mb?).max(0.0))
    }

    /// The compiler's slowest stage and its seconds.
    pub fn slowest_stage(&self) -> Option<(&str, f64)> {
        self.compile_stages
            .as_ref()?
            .iter()
            .map(|(name, s)| (name.as_str(), *s))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_detail_round_trips_and_omits_what_it_does_not_know() {
        let d = StepDetail {
            graph_name: Some("g".into()),
            peak_rss_mb: Some(300.0),
            rss_start_mb: Some(100.0),
            compile_stages: Some(vec![("a".into(), 0.5), ("b".into(), 2.0)]),
            beside_other_steps: true,
            ..StepDetail::default()
        };
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(json["graph_name"], "g");
        assert!(json.get("summary").is_none() && json.get("cpu_s").is_none());
        let back: StepDetail = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), json);
        assert_eq!(back.memory_added_mb(), Some(200.0));
        assert_eq!(back.slowest_stage(), Some(("b", 2.0)));
        let plain = serde_json::to_value(StepDetail::default()).unwrap();
        assert_eq!(plain, serde_json::json!({}));
    }
}
