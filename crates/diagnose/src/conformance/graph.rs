//! What of a graph the sweep measures and the lint checks: which tensors are constant, which
//! nodes a QNN backend really runs, and each node's operator and attribute set as text (the
//! key that joins a graph node to the report's rows).

use std::collections::BTreeSet;

use xtask_onnx::onnx::proto::{OnnxNode, OnnxSummary};

/// `op_type`, with its domain when not the default one (`com.microsoft::Gelu`).
pub fn op_label(node: &OnnxNode) -> String {
    match node.domain.as_str() {
        "" | "ai.onnx" => node.op_type.clone(),
        d => format!("{d}::{}", node.op_type),
    }
}

/// The attribute set as written, sorted by name: `axis=-1, epsilon=1e-6`; empty for none.
pub fn attr_set(node: &OnnxNode) -> String {
    let mut attrs: Vec<String> = node
        .attributes
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    attrs.sort();
    attrs.join(", ")
}

/// Tensors whose value does not depend on the graph's inputs: initializers, `Constant`
/// outputs and outputs of nodes that read only constants. ORT folds these before a QNN
/// backend sees the graph, so they are never measured as operators and stay exact values.
pub fn constant_tensors(graph: &OnnxSummary) -> BTreeSet<String> {
    let mut consts: BTreeSet<String> = graph.initializers.iter().cloned().collect();
    // Graph inputs shadow initializers of the same name (old exporters list both).
    for input in &graph.graph_inputs {
        if !graph.initializers.contains(input) {
            consts.remove(input);
        }
    }
    // Nodes are in topological order (ONNX requires it), so one pass suffices.
    for node in &graph.nodes {
        if node_is_constant(node, &consts) {
            consts.extend(node.outputs.iter().filter(|o| !o.is_empty()).cloned());
        }
    }
    consts
}

fn node_is_constant(node: &OnnxNode, consts: &BTreeSet<String>) -> bool {
    node.op_type == "Constant"
        || node
            .inputs
            .iter()
            .filter(|i| !i.is_empty())
            .all(|i| consts.contains(i))
}

/// The nodes a backend runs (positions in the graph): every node with at least one input that
/// depends on the graph's inputs.
pub fn swept_nodes(graph: &OnnxSummary, consts: &BTreeSet<String>) -> Vec<usize> {
    (0..graph.nodes.len())
        .filter(|&i| !node_is_constant(&graph.nodes[i], consts))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use xtask_onnx::onnx::builder::{Attr, Graph, Node};
    use xtask_onnx::onnx::proto::parse_model;

    #[test]
    fn nodes_reading_only_constants_are_folded_and_attributes_sorted() {
        let g = Graph {
            name: "g".into(),
            inputs: vec![("x".into(), vec![2])],
            outputs: vec![("y".into(), vec![2])],
            initializers: vec![("a".into(), vec![2], vec![1.0, 2.0])],
            nodes: vec![
                Node::new("Neg", "folded", &["a"], &["b"]),
                Node::new("Softmax", "s", &["x"], &["s"])
                    .attr("axis", Attr::Int(-1))
                    .attr("a_first", Attr::Float(0.5)),
                Node::new("Add", "add", &["s", "b"], &["y"]),
            ],
        };
        let s = parse_model(&g.to_bytes(20)).unwrap();
        let consts = constant_tensors(&s);
        assert!(consts.contains("b") && !consts.contains("s"));
        assert_eq!(swept_nodes(&s, &consts), vec![1, 2]);
        assert_eq!(attr_set(&s.nodes[1]), "a_first=0.5, axis=-1");
        assert_eq!(op_label(&s.nodes[1]), "Softmax");
    }
}
