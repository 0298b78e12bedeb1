//! Where ORT placed a session's nodes, parsed from its verbose "Node placements" log, and the
//! proof that a QNN session runs entirely on QNN (through `ort`, a node falling back to ORT's
//! CPU EP is otherwise silent).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Result, bail};

use super::backend::QNN_EP;

/// Where each node of a session runs, from ORT's placement log.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Placement {
    /// Node count per execution provider.
    pub nodes_per_ep: BTreeMap<String, usize>,
    /// Nodes not on the QNN EP, as `op_type (name)` lines from the log.
    pub off_qnn: Vec<String>,
}

/// Parses ORT's verbose placement report, one log message per line:
/// `All nodes placed on [EP]. Number of nodes: N`, or per EP
/// `Node(s) placed on [EP]. Number of nodes: N` followed by one `  OpType (name)` message per node.
pub fn parse_placement(log: &[String]) -> Placement {
    let mut placement = Placement::default();
    let mut current_ep: Option<String> = None;
    for msg in log {
        if let Some(idx) = msg.find("placed on [") {
            let rest = &msg[idx + "placed on [".len()..];
            let Some(end) = rest.find(']') else { continue };
            let ep = rest[..end].to_string();
            let count = rest
                .split("Number of nodes:")
                .nth(1)
                .and_then(|s| s.split_whitespace().next())
                .and_then(|s| s.trim_end_matches('.').parse::<usize>().ok())
                .unwrap_or(0);
            *placement.nodes_per_ep.entry(ep.clone()).or_default() += count;
            current_ep = Some(ep);
            continue;
        }
        match &current_ep {
            Some(ep) if msg.starts_with("  ") && msg.trim_end().ends_with(')') => {
                if ep != QNN_EP {
                    placement.off_qnn.push(format!("{} on [{ep}]", msg.trim()));
                }
            }
            _ => current_ep = None,
        }
    }
    placement
}

pub fn require_all_on_qnn(placement: &Placement, log: &[String], model: &Path) -> Result<()> {
    if placement.nodes_per_ep.is_empty() {
        let tail: Vec<&String> = log.iter().rev().take(8).collect();
        bail!(
            "{}: ORT reported no node placement, so QNN placement cannot be proven (log tail: {:?})",
            model.display(),
            tail
        );
    }
    let on_qnn = placement.nodes_per_ep.get(QNN_EP).copied().unwrap_or(0);
    let off: usize = placement
        .nodes_per_ep
        .iter()
        .filter(|(ep, _)| *ep != QNN_EP)
        .map(|(_, n)| n)
        .sum();
    if on_qnn == 0 || off > 0 {
        let mut reasons: Vec<&str> = log
            .iter()
            .flat_map(|l| l.lines())
            .filter(|l| l.contains("REASON"))
            .map(str::trim)
            .collect();
        reasons.dedup();
        return Err(anyhow::Error::new(NotOnQnn {
            model: model.display().to_string(),
            on_qnn,
            off,
            off_qnn: placement.off_qnn.clone(),
            qnn_reasons: reasons.iter().map(|r| r.to_string()).collect(),
        }));
    }
    Ok(())
}

/// A graph QNN did not take entirely: what was left elsewhere and QNN's own reasons, typed so
/// that callers (the conformance sweep) read the reasons without parsing the message.
#[derive(Debug)]
pub struct NotOnQnn {
    pub model: String,
    pub on_qnn: usize,
    pub off: usize,
    pub off_qnn: Vec<String>,
    pub qnn_reasons: Vec<String>,
}

impl std::fmt::Display for NotOnQnn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: not placed entirely on QNN ({} node(s) on QNN, {} elsewhere):\n  {}\n  QNN said: {}",
            self.model,
            self.on_qnn,
            self.off,
            if self.off_qnn.is_empty() {
                "(node names not logged)".to_string()
            } else {
                self.off_qnn.join("\n  ")
            },
            self.said()
        )
    }
}

impl NotOnQnn {
    /// QNN's reasons, or why there are none: a QNN that took no node and logged nothing did
    /// not load (its backend library or a library it needs), and the EP fell back silently.
    fn said(&self) -> String {
        match (self.qnn_reasons.is_empty(), self.on_qnn) {
            (false, _) => self.qnn_reasons.join(" | "),
            (true, 0) => "nothing: the QNN backend did not load (its library or one it needs, \
                          such as the plugin's bundled libc++ in ../onnxruntime_qnn.libs, is \
                          missing), so ONNX Runtime fell back to its CPU EP"
                .to_string(),
            (true, _) => "nothing (no reason logged for the nodes left elsewhere)".to_string(),
        }
    }
}

impl std::error::Error for NotOnQnn {}

#[cfg(test)]
mod tests {
    use super::*;
    const CPU_EP: &str = "CPUExecutionProvider";

    #[test]
    fn placement_names_nodes_left_on_cpu() {
        let log: Vec<String> = [
            " Node(s) placed on [QNNExecutionProvider]. Number of nodes: 1",
            "  QNNExecutionProvider_1672_1 (QNNExecutionProvider_QNNExecutionProvider_1672_1_0)",
            " Node(s) placed on [CPUExecutionProvider]. Number of nodes: 1",
            "  Erf (erf_node)",
            "Some nodes were not assigned to the preferred execution providers",
        ]
        .map(String::from)
        .to_vec();
        let p = parse_placement(&log);
        assert_eq!(p.nodes_per_ep[QNN_EP], 1);
        assert_eq!(p.nodes_per_ep[CPU_EP], 1);
        assert_eq!(
            p.off_qnn,
            vec!["Erf (erf_node) on [CPUExecutionProvider]".to_string()]
        );
        assert!(
            require_all_on_qnn(&p, &log, Path::new("m.onnx"))
                .unwrap_err()
                .to_string()
                .contains("erf_node")
        );
    }

    #[test]
    fn all_nodes_on_qnn_passes() {
        let log =
            vec![" All nodes placed on [QNNExecutionProvider]. Number of nodes: 1".to_string()];
        let p = parse_placement(&log);
        assert!(p.off_qnn.is_empty());
        assert!(require_all_on_qnn(&p, &log, Path::new("m.onnx")).is_ok());
    }

    #[test]
    fn a_qnn_that_took_nothing_and_said_nothing_is_called_not_loaded() {
        let log = vec![" All nodes placed on [CPUExecutionProvider]. Number of nodes: 1".into()];
        let err = require_all_on_qnn(&parse_placement(&log), &log, Path::new("m.onnx"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("QNN said: nothing: the QNN backend did not load"),
            "{err}"
        );
    }

    #[test]
    fn no_placement_log_is_not_a_proof() {
        assert!(require_all_on_qnn(&Placement::default(), &[], Path::new("m.onnx")).is_err());
    }
}
