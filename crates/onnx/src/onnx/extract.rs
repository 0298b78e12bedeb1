//! One node of a graph as a model of its own (the conformance sweep runs operators alone): the
//! node's bytes copied as they are (every attribute kept, whatever its kind), the initializers
//! it reads copied as they are (external data stays where it points), constants the graph
//! computes written as initializers, and typed inputs and outputs. Everything else of the model
//! (IR version, opset imports, metadata) is copied byte for byte.

use std::collections::BTreeMap;

use anyhow::{Context, Result};

use super::builder::raw_initializer;
pub use super::proto::elem_type_of;
use super::rewrite::{put_bytes, rewrite_fields};
use super::wire::{Fields, Wire, packed_varints};
use super::writer::{WrapperTensor, value_info_typed};
use crate::tensor::Tensor;

/// An initializer as stored: its `TensorProto` bytes, element type and dims.
#[derive(Debug, Clone)]
pub struct Initializer<'a> {
    pub bytes: &'a [u8],
    pub elem_type: i32,
    pub dims: Vec<i64>,
}

/// The raw pieces of a model's graph, by position: nodes in file order (the order of
/// `OnnxSummary::nodes`) and initializers by name.
pub struct GraphIndex<'a> {
    pub nodes: Vec<&'a [u8]>,
    pub initializers: BTreeMap<String, Initializer<'a>>,
}

pub fn index_graph(model: &[u8]) -> Result<GraphIndex<'_>> {
    let mut index = GraphIndex {
        nodes: Vec::new(),
        initializers: BTreeMap::new(),
    };
    for field in Fields::new(model) {
        let (7, Wire::Bytes(graph)) = field? else {
            continue;
        };
        for g in Fields::new(graph) {
            match g? {
                (1, Wire::Bytes(node)) => index.nodes.push(node),
                (5, Wire::Bytes(tensor)) => {
                    let (name, init) = initializer(tensor)?;
                    index.initializers.insert(name, init);
                }
                _ => {}
            }
        }
    }
    Ok(index)
}

/// `TensorProto`: dims (1, packed or not), data_type (2), name (8).
fn initializer(bytes: &[u8]) -> Result<(String, Initializer<'_>)> {
    let (mut name, mut elem_type, mut dims) = (String::new(), 0, Vec::new());
    for field in Fields::new(bytes) {
        match field? {
            (1, Wire::Varint(d)) => dims.push(d as i64),
            (1, Wire::Bytes(packed)) => dims.extend(packed_varints(packed)?),
            (2, Wire::Varint(t)) => elem_type = t as i32,
            (8, Wire::Bytes(b)) => name = String::from_utf8_lossy(b).into_owned(),
            _ => {}
        }
    }
    Ok((
        name,
        Initializer {
            bytes,
            elem_type,
            dims,
        },
    ))
}

/// The short name of an ONNX element type, for keys and reports.
pub fn elem_name(elem_type: i32) -> String {
    match elem_type {
        1 => "f32".into(),
        10 => "f16".into(),
        7 => "i64".into(),
        6 => "i32".into(),
        9 => "bool".into(),
        11 => "f64".into(),
        16 => "bf16".into(),
        2 => "u8".into(),
        3 => "i8".into(),
        other => format!("elem{other}"),
    }
}

/// A tensor as an inline `TensorProto` (raw little-endian data).
pub fn tensor_proto(name: &str, t: &Tensor) -> Vec<u8> {
    raw_initializer(name, &t.shape(), elem_type_of(t.dtype()), &t.to_le_bytes())
}

/// What the single-node model holds besides the node.
pub struct SingleNode<'a> {
    /// The node, by position in the graph.
    pub node: usize,
    /// Initializers of the original graph the node reads, copied as they are.
    pub initializers: Vec<&'a str>,
    /// Constants the graph computes (folded by ORT before a QNN backend sees them), by value.
    pub constants: Vec<(String, &'a Tensor)>,
    pub inputs: Vec<WrapperTensor>,
    pub outputs: Vec<WrapperTensor>,
}

/// The model bytes of one node alone (see the module docs).
pub fn single_node_model(
    model: &[u8],
    index: &GraphIndex<'_>,
    one: &SingleNode<'_>,
) -> Result<Vec<u8>> {
    let node = index
        .nodes
        .get(one.node)
        .with_context(|| format!("the graph has no node #{}", one.node))?;
    let mut graph = Vec::new();
    put_bytes(&mut graph, 1, node);
    put_bytes(&mut graph, 2, b"conformance");
    for name in &one.initializers {
        let init = index
            .initializers
            .get(*name)
            .with_context(|| format!("no initializer `{name}`"))?;
        put_bytes(&mut graph, 5, init.bytes);
    }
    for (name, t) in &one.constants {
        put_bytes(&mut graph, 5, &tensor_proto(name, t));
    }
    for t in &one.inputs {
        put_bytes(&mut graph, 11, &value_info_typed(t));
    }
    for t in &one.outputs {
        put_bytes(&mut graph, 12, &value_info_typed(t));
    }
    rewrite_fields(model, &mut |num, _| Ok((num == 7).then(|| graph.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::builder::{Attr, Graph, Node};
    use crate::onnx::proto::{AttrValue, parse_model};

    #[test]
    fn one_node_keeps_its_attributes_initializers_and_gets_typed_io() {
        let g = Graph {
            name: "g".into(),
            inputs: vec![("x".into(), vec![2, 3])],
            outputs: vec![("z".into(), vec![3, 2])],
            initializers: vec![("w".into(), vec![3], vec![1.0, 2.0, 3.0])],
            nodes: vec![
                Node::new("Mul", "m", &["x", "w"], &["y"]),
                Node::new("Transpose", "t", &["y"], &["z"]).attr("perm", Attr::Ints(vec![1, 0])),
            ],
        };
        let bytes = g.to_bytes(20);
        let index = index_graph(&bytes).unwrap();
        assert_eq!(index.nodes.len(), 2);
        assert_eq!(index.initializers["w"].dims, vec![3]);
        let io = |name: &str, dims: Vec<usize>| WrapperTensor {
            name: name.into(),
            dims,
            elem_type: 1,
        };
        let t = single_node_model(
            &bytes,
            &index,
            &SingleNode {
                node: 1,
                initializers: vec![],
                constants: vec![],
                inputs: vec![io("y", vec![2, 3])],
                outputs: vec![io("z", vec![3, 2])],
            },
        )
        .unwrap();
        let s = parse_model(&t).unwrap();
        assert_eq!(s.nodes.len(), 1);
        assert_eq!(s.nodes[0].attributes[0].1, AttrValue::Ints(vec![1, 0]));
        assert_eq!(s.io_types[0], ("y".to_string(), 1, vec![2, 3]));

        let c = Tensor::I64(ndarray::ArrayD::from_shape_vec(vec![2], vec![3, 2]).unwrap());
        let m = single_node_model(
            &bytes,
            &index,
            &SingleNode {
                node: 0,
                initializers: vec!["w"],
                constants: vec![("k".into(), &c)],
                inputs: vec![io("x", vec![2, 3])],
                outputs: vec![io("y", vec![2, 3])],
            },
        )
        .unwrap();
        let s = parse_model(&m).unwrap();
        assert_eq!(s.initializers, vec!["w".to_string(), "k".to_string()]);
        let index = index_graph(&m).unwrap();
        assert_eq!(index.initializers["k"].elem_type, 7);
    }
}
