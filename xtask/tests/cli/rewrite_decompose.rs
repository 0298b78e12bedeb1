//! `decompose_gelu_tanh` against the operator it replaces: equal on ONNX Runtime's CPU EP for
//! inputs across the operator's range, and on QNN's CPU backend the operator deviates while its
//! decomposition does not (measured here, on graphs built with the crate's own ONNX builder).

use crate::common;

use std::collections::BTreeMap;

use ndarray::{ArrayD, IxDyn};
use xtask_onnx::onnx::builder::{Attr, Graph, Node};
use xtask_onnx::onnx::decompose;
use xtask_onnx::onnx::writer::seeded_weights;
use xtask_onnx::tensor::Tensor;
use xtask_parity::parity::metrics::{Metrics, compare};
use xtask_runtime::runtime::bootstrap::ensure_runtime;
use xtask_runtime::runtime::{Backend, Runtime};

fn f32_tensor(shape: &[usize], v: Vec<f32>) -> Tensor {
    Tensor::F32(ArrayD::from_shape_vec(IxDyn(shape), v).unwrap())
}

/// Runs a one-output graph on a backend.
fn run(rt: &Runtime, g: &Graph, backend: &Backend, x: &Tensor, dir: &std::path::Path) -> Tensor {
    let path = dir.join(format!("{}.onnx", g.name));
    g.write(&path, 20).unwrap();
    run_file(rt, &path, backend, x)
}

fn run_file(rt: &Runtime, path: &std::path::Path, backend: &Backend, x: &Tensor) -> Tensor {
    let inputs = BTreeMap::from([("x".to_string(), x.clone())]);
    let mut out = rt.open(path, backend).unwrap().run(&inputs).unwrap();
    out.remove("y").unwrap()
}

/// The graph with `decompose_gelu_tanh` applied, written as `<name>-rewritten.onnx`, run on a
/// backend; and what the rewrite replaced.
fn run_rewritten(
    rt: &Runtime,
    g: &Graph,
    backend: &Backend,
    x: &Tensor,
    dir: &std::path::Path,
) -> (Tensor, Vec<decompose::Applied>) {
    let (bytes, applied) =
        decompose::apply(&g.to_bytes(20), &["decompose_gelu_tanh".into()]).unwrap();
    let path = dir.join(format!("{}-rewritten.onnx", g.name));
    std::fs::write(&path, bytes).unwrap();
    (run_file(rt, &path, backend, x), applied)
}

fn against(actual: &Tensor, reference: &Tensor) -> Metrics {
    compare(&actual.to_f64_vec(), &reference.to_f64_vec(), 0.0, 0.0)
}

/// The decomposition equals ONNX Runtime's own `Gelu(approximate="tanh")`, for inputs across
/// the operator's range (tails, saturation, zeros, values whose cube overflows f32), alone and
/// next to an exact Gelu it must leave alone; and on QNN's CPU backend the operator deviates
/// while its decomposition does not (both measured here).
#[test]
fn the_decomposition_equals_the_operator_on_ort_and_fixes_it_on_qnn_cpu() {
    let rt = Runtime::load(ensure_runtime(&common::repo_root()).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tanh = |n: Node| n.attr("approximate", Attr::Str("tanh".into()));
    let graphs = [
        ("single", vec![tanh(Node::new("Gelu", "a", &["x"], &["y"]))]),
        (
            "tanh_then_exact",
            vec![
                tanh(Node::new("Gelu", "a", &["x"], &["t"])),
                Node::new("Gelu", "b", &["t"], &["y"]),
            ],
        ),
        (
            "exact_then_tanh",
            vec![
                Node::new("Gelu", "a", &["x"], &["t"])
                    .attr("approximate", Attr::Str("none".into())),
                tanh(Node::new("Gelu", "", &["t"], &["y"])),
            ],
        ),
    ];
    let mut special = vec![
        0.0, -0.0, 1e-20, -1e-20, 1e20, -1e20, 30.0, -30.0, 88.0, -88.0,
    ];
    special.resize(64, 0.5);
    let inputs = [
        (
            "uniform [-4, 4]",
            vec![4usize, 64],
            seeded_weights(256, 1, 4.0),
        ),
        (
            "tails [-12, 12]",
            vec![2, 3, 50],
            seeded_weights(300, 2, 12.0),
        ),
        ("near zero", vec![64], seeded_weights(64, 3, 1e-3)),
        ("special values", vec![64], special),
    ];
    for (gname, nodes) in &graphs {
        for (iname, shape, values) in &inputs {
            let g = Graph {
                name: gname.to_string(),
                inputs: vec![("x".into(), shape.clone())],
                outputs: vec![("y".into(), shape.clone())],
                initializers: vec![],
                nodes: nodes.clone(),
            };
            let x = f32_tensor(shape, values.clone());
            let original = run(&rt, &g, &Backend::OrtCpu, &x, dir.path());
            let (rewritten, applied) = run_rewritten(&rt, &g, &Backend::OrtCpu, &x, dir.path());
            assert_eq!(
                applied[0].nodes.len(),
                1,
                "{gname}: only the tanh Gelu is replaced"
            );
            let m = against(&rewritten, &original);
            // Elementwise, relative to the value where it is large (1e20 stays 1e20).
            let worst = rewritten
                .to_f64_vec()
                .iter()
                .zip(original.to_f64_vec())
                .map(|(a, r)| (a - r).abs() / r.abs().max(1.0))
                .fold(0.0f64, f64::max);
            eprintln!(
                "{gname} on {iname}: rewritten vs Gelu on ORT: cosine {:.12}, max abs {:.3e}, worst relative {worst:.3e}",
                m.cosine, m.max_abs_err
            );
            assert_eq!((m.nan_actual, m.inf_actual), (0, 0), "{gname} {iname}");
            assert!(
                worst <= 1e-6,
                "{gname} on {iname}: the decomposition differs from the operator: {m:?}"
            );
        }
    }
    // QNN's CPU backend: the operator as QNN computes it, then the decomposition.
    let g = Graph {
        name: "qnn".into(),
        inputs: vec![("x".into(), vec![4, 64])],
        outputs: vec![("y".into(), vec![4, 64])],
        initializers: vec![],
        nodes: vec![tanh(Node::new("Gelu", "a", &["x"], &["y"]))],
    };
    let x = f32_tensor(&[4, 64], seeded_weights(256, 1, 4.0));
    let reference = run(&rt, &g, &Backend::OrtCpu, &x, dir.path());
    let before = against(&run(&rt, &g, &Backend::QnnCpu, &x, dir.path()), &reference);
    let (rewritten, _) = run_rewritten(&rt, &g, &Backend::QnnCpu, &x, dir.path());
    let after = against(&rewritten, &reference);
    eprintln!(
        "QNN CPU vs ORT: Gelu(tanh) cosine {:.12} max abs {:.3e}; decomposed cosine {:.12} max abs {:.3e}",
        before.cosine, before.max_abs_err, after.cosine, after.max_abs_err
    );
    assert!(
        before.max_abs_err > 1e-4,
        "QNN's CPU Gelu(tanh) no longer deviates: {before:?}"
    );
    assert!(after.cosine > before.cosine, "{before:?} -> {after:?}");
    assert!(
        after.max_abs_err < before.max_abs_err / 50.0,
        "{before:?} -> {after:?}"
    );
}
