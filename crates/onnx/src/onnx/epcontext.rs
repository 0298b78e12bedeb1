//! Checks the EPContext wrapper ORT wrote, because a context generation can "succeed" without
//! writing a context: the wrapper must hold exactly one `EPContext` node (com.microsoft,
//! source QNN, main_context=1, embed_mode=0) pointing at a non-empty `.bin` beside it. The
//! wrapper is then pointed at the binary's final name (relative, so the pair can move).

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::onnx::proto::parse_model;
use crate::onnx::rewrite::set_node_string_attr;

#[derive(Debug, Clone, Serialize)]
pub struct ContextInfo {
    /// The QNN graph name inside the binary (ORT's EPContext node name / partition name).
    pub graph_name: String,
    pub ep_sdk_version: Option<String>,
    pub bin_file: String,
}

pub fn check_and_retarget_wrapper(
    wrapper: &Path,
    bin: &Path,
    final_bin_name: &str,
) -> Result<ContextInfo> {
    let bytes = std::fs::read(wrapper).with_context(|| {
        format!(
            "ORT wrote no EPContext wrapper {} (the session succeeded without a context)",
            wrapper.display()
        )
    })?;
    let summary = parse_model(&bytes)
        .with_context(|| format!("{} is not a valid ONNX wrapper", wrapper.display()))?;
    let ep_nodes: Vec<_> = summary
        .nodes
        .iter()
        .filter(|n| n.op_type == "EPContext")
        .collect();
    let others: Vec<String> = summary
        .nodes
        .iter()
        .filter(|n| n.op_type != "EPContext")
        .map(|n| format!("{} ({})", n.op_type, n.name))
        .collect();
    if ep_nodes.len() != 1 || !others.is_empty() {
        bail!(
            "the wrapper holds {} EPContext node(s) and {} other node(s) [{}]: the graph was not compiled into one HTP context",
            ep_nodes.len(),
            others.len(),
            others.join(", ")
        );
    }
    let node = ep_nodes[0];
    let source = node
        .attr_str("source")
        .unwrap_or_default()
        .to_ascii_lowercase();
    if source != "qnn" && source != "qnnexecutionprovider" {
        bail!("EPContext node source is {source:?}, not QNN");
    }
    if node.attr_int("main_context") != Some(1) || node.attr_int("embed_mode") != Some(0) {
        bail!(
            "EPContext node must have main_context=1 and embed_mode=0, found {:?} / {:?}",
            node.attr_int("main_context"),
            node.attr_int("embed_mode")
        );
    }
    let cache = node
        .attr_str("ep_cache_context")
        .context("EPContext node has no ep_cache_context")?;
    let expected = bin
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if cache != expected {
        bail!("EPContext node points at {cache:?}, expected {expected:?}");
    }
    let size = std::fs::metadata(bin).map(|m| m.len()).unwrap_or(0);
    if size == 0 {
        bail!("the context binary {} is missing or empty", bin.display());
    }
    let retargeted = set_node_string_attr(&bytes, "EPContext", "ep_cache_context", final_bin_name)?;
    xtask_base::atomic::write_atomic(wrapper, &retargeted)?;
    Ok(ContextInfo {
        graph_name: node.name.clone(),
        ep_sdk_version: node.attr_str("ep_sdk_version").map(str::to_string),
        bin_file: final_bin_name.to_string(),
    })
}
