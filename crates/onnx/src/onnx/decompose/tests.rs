//! The rewrites' structure, without a runtime (their numbers on ORT and QNN are checked by
//! `tests/rewrite_cli.rs`).

use super::*;
use crate::onnx::builder::{Attr, Graph, Node};
use crate::onnx::proto::parse_model;

fn gelu_graph() -> Graph {
    Graph {
        name: "g".into(),
        inputs: vec![("x".into(), vec![2, 4])],
        outputs: vec![("y".into(), vec![2, 4])],
        initializers: vec![],
        nodes: vec![
            Node::new("Gelu", "tanh1", &["x"], &["t"])
                .attr("approximate", Attr::Str("tanh".into())),
            Node::new("Gelu", "exact", &["t"], &["u"]),
            Node::new("Gelu", "", &["u"], &["y"]).attr("approximate", Attr::Str("tanh".into())),
        ],
    }
}

#[test]
fn gelu_tanh_nodes_are_replaced_in_place_and_exact_gelu_is_kept() {
    let (bytes, applied) =
        apply(&gelu_graph().to_bytes(20), &["decompose_gelu_tanh".into()]).unwrap();
    assert_eq!(applied.len(), 1);
    assert_eq!(
        applied[0].nodes,
        ["tanh1", "y"],
        "an unnamed node is named by its output"
    );
    assert_eq!(applied[0].label(), "decompose_gelu_tanh v1 (2 nodes)");
    let s = parse_model(&bytes).unwrap();
    let ops: Vec<&str> = s.nodes.iter().map(|n| n.op_type.as_str()).collect();
    let expansion = ["Mul", "Mul", "Add", "Mul", "Sigmoid", "Mul"];
    assert_eq!(ops, [&expansion[..], &["Gelu"], &expansion[..]].concat());
    assert_eq!(
        s.nodes[6].name, "exact",
        "the exact Gelu is left alone, in order"
    );
    assert_eq!(
        s.nodes[5].outputs,
        ["t"],
        "the expansion ends in the node's output"
    );
    assert_eq!(s.nodes[0].inputs, ["x", "x"]);
    assert_eq!(s.nodes[7].inputs, ["u", "u"]);
    assert_eq!(s.nodes[12].outputs, ["y"]);
    assert_eq!(
        s.initializers.len(),
        4,
        "a and b per replaced node: {:?}",
        s.initializers
    );
    assert_eq!(
        (s.graph_inputs.clone(), s.graph_outputs.clone()),
        (vec!["x".to_string()], vec!["y".to_string()])
    );
    // Applying it again finds nothing left to replace.
    let err = apply(&bytes, &["decompose_gelu_tanh".into()]).unwrap_err();
    assert!(err.to_string().contains("matches no node"), "{err}");
}

#[test]
fn unknown_names_and_clashing_names_are_refused() {
    let err = apply(&gelu_graph().to_bytes(20), &["fuse_everything".into()]).unwrap_err();
    assert!(
        err.to_string()
            .contains("unknown rewrite `fuse_everything`; known rewrites: decompose_gelu_tanh v1"),
        "{err}"
    );
    let mut g = gelu_graph();
    g.nodes.push(Node::new(
        "Identity",
        "tanh1/decompose_gelu_tanh/a",
        &["y"],
        &["z"],
    ));
    let err = apply(&g.to_bytes(20), &["decompose_gelu_tanh".into()]).unwrap_err();
    assert!(err.to_string().contains("already names"), "{err}");
}

#[test]
fn the_key_part_names_every_rewrite_with_its_version() {
    assert_eq!(key_part(&[]), None);
    assert_eq!(
        key_part(&["decompose_gelu_tanh".into()]).as_deref(),
        Some("decompose_gelu_tanh v1")
    );
}

#[test]
fn applying_to_a_parsed_model_is_applying_to_its_bytes() {
    let bytes = gelu_graph().to_bytes(20);
    let names = ["decompose_gelu_tanh".to_string()];
    let parsed = parse_model(&bytes).unwrap();
    let (out, applied) = apply_parsed(&bytes, Some(&parsed), &names).unwrap();
    let (expected, expected_applied) = apply(&bytes, &names).unwrap();
    assert_eq!(out, expected);
    assert_eq!(applied, expected_applied);
}

fn layernorm_graph(with_bias: bool, axis: i64) -> Graph {
    let inputs: Vec<&str> = if with_bias {
        vec!["x", "g", "b"]
    } else {
        vec!["x", "g"]
    };
    Graph {
        name: "ln".into(),
        inputs: vec![("x".into(), vec![2, 4])],
        outputs: vec![("y".into(), vec![2, 4])],
        initializers: vec![],
        nodes: vec![
            Node::new("LayerNormalization", "ln1", &inputs, &["y"])
                .attr("axis", Attr::Int(axis))
                .attr("epsilon", Attr::Float(1e-6)),
        ],
    }
}

#[test]
fn layernorm_becomes_the_nine_operators_of_its_definition_with_its_epsilon() {
    let (bytes, applied) = apply(
        &layernorm_graph(true, -1).to_bytes(20),
        &["decompose_layernorm".into()],
    )
    .unwrap();
    assert_eq!(applied[0].nodes, ["ln1"]);
    let s = parse_model(&bytes).unwrap();
    let ops: Vec<&str> = s.nodes.iter().map(|n| n.op_type.as_str()).collect();
    assert_eq!(
        ops,
        [
            "ReduceMean",
            "Sub",
            "Mul",
            "ReduceMean",
            "Add",
            "Sqrt",
            "Div",
            "Mul",
            "Add"
        ]
    );
    assert_eq!(
        s.nodes[8].outputs,
        ["y"],
        "the expansion ends in the node's output"
    );
    assert_eq!(s.nodes[7].inputs[1], "g");
    assert_eq!(s.nodes[8].inputs[1], "b");
    assert_eq!(
        s.initializers.len(),
        2,
        "axes and epsilon: {:?}",
        s.initializers
    );
}

#[test]
fn layernorm_without_bias_ends_in_the_scale_and_other_axes_are_refused() {
    let (bytes, _) = apply(
        &layernorm_graph(false, -1).to_bytes(20),
        &["decompose_layernorm".into()],
    )
    .unwrap();
    let s = parse_model(&bytes).unwrap();
    assert_eq!(s.nodes.len(), 8);
    assert_eq!(s.nodes[7].op_type, "Mul");
    assert_eq!(s.nodes[7].outputs, ["y"]);
    let err = apply(
        &layernorm_graph(true, 1).to_bytes(20),
        &["decompose_layernorm".into()],
    )
    .unwrap_err();
    assert!(format!("{err:#}").contains("axis 1"), "{err:#}");
}
