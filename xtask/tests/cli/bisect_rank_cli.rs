//! `cargo xtask bisect` without `--threshold`: operators ranked by the error they introduce.
//! The fixture is generated here with the crate's own ONNX builder: a Resize (nearest,
//! half_pixel, round_prefer_floor, scale 1.75, whose ties QNN's CPU backend rounds the other
//! way) fed an almost constant tensor, so picking the neighbouring pixel changes the output by
//! less than 1e-6 in cosine: no cosine threshold catches it, the ranking must name it first.

use crate::common;

use std::collections::BTreeMap;

use common::{Scratch, read_json};
use ndarray::{ArrayD, IxDyn};
use xtask_onnx::onnx::builder::{Attr, Graph, Node};
use xtask_onnx::tensor::{Tensor, write_npz};

const SHAPE: [usize; 4] = [1, 2, 8, 8];
const OUT: [usize; 4] = [1, 2, 14, 14];

/// Writes model `tiny_dev` (component `graph`) into the scratch project.
fn write_fixture(p: &Scratch) {
    let graph = Graph {
        name: "tiny_dev".into(),
        inputs: vec![("x".into(), SHAPE.to_vec())],
        outputs: vec![("y".into(), OUT.to_vec())],
        initializers: vec![
            ("s0".into(), vec![1], vec![1.25]),
            ("b1".into(), vec![1], vec![0.5]),
            ("scales".into(), vec![4], vec![1.0, 1.0, 1.75, 1.75]),
            ("s3".into(), vec![1], vec![2.0]),
            ("b4".into(), vec![1], vec![-0.25]),
        ],
        nodes: vec![
            Node::new("Mul", "n0_mul", &["x", "s0"], &["t0"]),
            Node::new("Add", "n1_add", &["t0", "b1"], &["t1"]),
            Node::new("Resize", "n2_resize", &["t1", "", "scales"], &["t2"])
                .attr("mode", Attr::Str("nearest".into()))
                .attr(
                    "coordinate_transformation_mode",
                    Attr::Str("half_pixel".into()),
                )
                .attr("nearest_mode", Attr::Str("round_prefer_floor".into())),
            Node::new("Mul", "n3_mul", &["t2", "s3"], &["t3"]),
            Node::new("Add", "n4_add", &["t3", "b4"], &["y"]),
        ],
    };
    std::fs::create_dir_all(p.path("onnx/tiny_dev")).unwrap();
    graph
        .write(&p.path("onnx/tiny_dev/graph.onnx"), 20)
        .unwrap();
    // x = 1 + 1e-3 * (a deterministic pattern): neighbouring pixels differ by ~1e-3.
    let n: usize = SHAPE.iter().product();
    let x: Vec<f32> = (0..n)
        .map(|i| 1.0 + 1e-3 * (((i * 7919) % 97) as f32 / 97.0 - 0.5))
        .collect();
    let mut io = BTreeMap::new();
    io.insert(
        "x".to_string(),
        Tensor::F32(ArrayD::from_shape_vec(IxDyn(&SHAPE), x).unwrap()),
    );
    // Bisect compares ORT with the QNN backend on the golden input; the expected output is
    // only there to satisfy the recipe.
    io.insert("y".to_string(), Tensor::F32(ArrayD::zeros(IxDyn(&OUT))));
    std::fs::create_dir_all(p.path("golden/tiny_dev")).unwrap();
    write_npz(&p.path("golden/tiny_dev/graph_io.npz"), &io).unwrap();
    std::fs::create_dir_all(p.path("recipes/tiny_dev")).unwrap();
    std::fs::write(
        p.path("recipes/tiny_dev/model.toml"),
        "[model]\nname = \"tiny_dev\"\nfamily = \"graphs\"\ncomponents = [\"graph\"]\nseq_len = 1\n\n[target]\nqairt = \"2.47.0\"\nsoc = 77\nhtp_arch = 73\n",
    )
    .unwrap();
    std::fs::write(
        p.path("recipes/tiny_dev/graph.toml"),
        format!(
            "[component]\nname = \"graph\"\nonnx = \"onnx/tiny_dev/graph.onnx\"\n\n[golden]\nfile = \"golden/tiny_dev/graph_io.npz\"\n\n\
             [[inputs]]\nname = \"x\"\nshape = {SHAPE:?}\ndtype = \"f32\"\ngolden_key = \"x\"\n\n\
             [[outputs]]\nname = \"y\"\nshape = {OUT:?}\ndtype = \"f32\"\ngolden_key = \"y\"\n\n\
             [convert]\nfloat_bitwidth = 32\npreserve_io_datatype = true\n\n\
             [context]\ngraph_name = \"graph\"\noptimization_level = 3\nfp16 = true\n"
        ),
    )
    .unwrap();
}

#[test]
fn a_tiny_deviation_is_ranked_first_at_default_settings() {
    let p = Scratch::tiny();
    write_fixture(&p);
    let run = p.run(&["bisect", "graph", "--backend", "cpu", "--model", "tiny_dev"]);
    run.assert_code(0);
    eprintln!("{}", run.stdout);
    let report = read_json(&p.path("reports/tiny_dev/bisect-graph-cpu.json"));
    let out_cos = report["output_cosine_untapped"]["y"].as_f64().unwrap();
    assert!(
        out_cos < 1.0 && 1.0 - out_cos < 1e-6,
        "the deviation must be real but below 1e-6 in cosine: {out_cos}\n{}",
        run.all()
    );
    let ranked = report["ranked"].as_array().unwrap();
    assert_eq!(ranked[0]["node"], "n2_resize", "{}", run.all());
    assert_eq!(ranked[0]["worst_input"], "t1");
    assert!(
        ranked[0]["introduced"].as_f64().unwrap()
            > 100.0 * ranked[1]["introduced"].as_f64().unwrap(),
        "{report}"
    );
    assert!(
        run.stdout.contains("1. Resize `n2_resize`"),
        "{}",
        run.all()
    );
    assert!(
        run.stdout
            .contains("verdict: one culprit: Resize `n2_resize`"),
        "{}",
        run.all()
    );
    assert_eq!(report["verdict"]["kind"], "one culprit");
    let tapped = report["output_cosine_tapped"]["y"].as_f64().unwrap();
    assert_eq!(
        report["taps_changed_outputs"],
        (tapped - out_cos).abs() > 1e-9,
        "{report}"
    );
    // The cosine threshold of the old mode does not see it.
    let run = p.run(&[
        "bisect",
        "graph",
        "--backend",
        "cpu",
        "--model",
        "tiny_dev",
        "--threshold",
        "0.9999",
    ]);
    run.assert_code(0);
    assert!(
        run.stdout
            .contains("no intermediate tensor falls below 0.9999"),
        "{}",
        run.all()
    );
}

#[test]
fn the_planted_operator_is_ranked_first_in_rounds() {
    let p = Scratch::fixture("planted_op");
    let run = p.run(&[
        "bisect",
        "graph",
        "--backend",
        "cpu",
        "--model",
        "planted_op",
        "--max-outputs",
        "3",
    ]);
    run.assert_code(0);
    let report = read_json(&p.path("reports/planted_op/bisect-graph-cpu.json"));
    assert_eq!(report["ranked"][0]["node"], "n4_resize", "{}", run.all());
    assert_eq!(
        report["tensors_compared"], 8,
        "every float tensor is measured"
    );
    assert!(report["rounds"].as_u64().unwrap() >= 3, "{report}");
    let html = std::fs::read_to_string(p.path("reports/planted_op/bisect-graph-cpu.html")).unwrap();
    assert!(
        html.contains("<th>introduced</th>") && !html.contains("<pre>"),
        "{html}"
    );
}
