//! Splicing a rewrite into serialized protobuf: each node the rewrite handles is replaced, at
//! its place (the graph stays topologically sorted), by its expansion; the expansions'
//! constants are appended as initializers. Everything else is copied byte for byte.

use std::collections::BTreeSet;

use anyhow::{Result, bail};

use super::Rewrite;
use crate::onnx::builder::{float_initializer, node_bytes, raw_initializer};
use crate::onnx::proto::{OnnxNode, OnnxSummary, parse_node};
use crate::onnx::rewrite::put_bytes;
use crate::onnx::wire::{Fields, Wire};

/// Fresh tensor and node names for expansions: `<base>/<rewrite>/<part>`, refused when the
/// graph already uses the name (a silent clash would rewire the graph).
pub struct Namer {
    taken: BTreeSet<String>,
}

impl Namer {
    pub fn new(summary: &OnnxSummary) -> Self {
        let mut taken: BTreeSet<String> = summary
            .nodes
            .iter()
            .flat_map(|n| n.inputs.iter().chain(&n.outputs).chain([&n.name]))
            .cloned()
            .collect();
        taken.extend(summary.initializers.iter().cloned());
        taken.extend(summary.graph_inputs.iter().cloned());
        taken.extend(summary.graph_outputs.iter().cloned());
        Namer { taken }
    }

    /// A new name for `part` of the expansion of `node` by `rewrite`.
    pub fn fresh(&mut self, node: &OnnxNode, rewrite: &str, part: &str) -> Result<String> {
        let name = format!("{}/{rewrite}/{part}", node_label(node));
        if !self.taken.insert(name.clone()) {
            bail!(
                "cannot rewrite node `{}`: the graph already names a tensor or node `{name}`",
                node_label(node)
            );
        }
        Ok(name)
    }
}

/// A node's name, or its first output when it has none.
pub fn node_label(node: &OnnxNode) -> String {
    if node.name.is_empty() {
        node.outputs.first().cloned().unwrap_or_default()
    } else {
        node.name.clone()
    }
}

/// The model with every node `rewrite` handles replaced; the replaced nodes' labels.
/// `summary` is `model` parsed.
pub(super) fn replace_nodes(
    model: &[u8],
    summary: &OnnxSummary,
    rewrite: &Rewrite,
) -> Result<(Vec<u8>, Vec<String>)> {
    let mut namer = Namer::new(summary);
    let mut replaced = Vec::new();
    let mut out = Vec::with_capacity(model.len());
    let mut fields = Fields::new(model);
    let mut start = 0;
    while fields.pos < model.len() {
        let (num, wire) = fields.next_field()?;
        match wire {
            Wire::Bytes(graph) if num == 7 => {
                let graph = replace_in_graph(graph, rewrite, &mut namer, &mut replaced)?;
                put_bytes(&mut out, 7, &graph);
            }
            _ => out.extend_from_slice(&model[start..fields.pos]),
        }
        start = fields.pos;
    }
    Ok((out, replaced))
}

fn replace_in_graph(
    graph: &[u8],
    rewrite: &Rewrite,
    namer: &mut Namer,
    replaced: &mut Vec<String>,
) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(graph.len());
    let mut constants = Vec::new();
    let mut int_constants = Vec::new();
    let mut fields = Fields::new(graph);
    let mut start = 0;
    while fields.pos < graph.len() {
        let (num, wire) = fields.next_field()?;
        let expansion = match wire {
            Wire::Bytes(node) if num == 1 => {
                let node = parse_node(node)?;
                (rewrite.expand)(&node, namer)?.map(|e| (node_label(&node), e))
            }
            _ => None,
        };
        match expansion {
            Some((label, e)) => {
                for n in &e.nodes {
                    put_bytes(&mut out, 1, &node_bytes(n));
                }
                constants.extend(e.constants);
                int_constants.extend(e.int_constants);
                replaced.push(label);
            }
            None => out.extend_from_slice(&graph[start..fields.pos]),
        }
        start = fields.pos;
    }
    for (name, dims, values) in &constants {
        put_bytes(&mut out, 5, &float_initializer(name, dims, values));
    }
    for (name, dims, values) in &int_constants {
        let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        put_bytes(&mut out, 5, &raw_initializer(name, dims, 7, &raw));
    }
    Ok(out)
}
