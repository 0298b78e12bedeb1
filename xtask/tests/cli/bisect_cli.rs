//! `cargo xtask bisect`: a planted operator (a Resize whose tie rounding QNN's CPU backend
//! implements differently from ONNX Runtime) in the middle of an otherwise exact graph must be
//! named, with its inputs shown intact, and the offline HTML report must show the drop
//! (`--threshold` mode; the default ranking mode is tested in `bisect_rank_cli`).

use crate::common;

use common::{Scratch, read_json};

#[test]
fn bisect_names_the_planted_operator() {
    let p = Scratch::fixture("planted_op");
    let parity = p.run(&["parity", "--backend", "cpu", "--model", "planted_op"]);
    parity.assert_code(1);
    assert!(parity.stdout.contains("hint: find where it diverges with `cargo xtask bisect graph --backend cpu --model planted_op`"), "{}", parity.all());
    let run = p.run(&[
        "bisect",
        "graph",
        "--backend",
        "cpu",
        "--model",
        "planted_op",
        "--threshold",
        "0.9999",
    ]);
    run.assert_code(0);
    assert!(
        run.stdout
            .contains("first divergent operator: Resize `n4_resize`"),
        "{}",
        run.all()
    );
    assert!(
        run.stdout.contains("nearest_mode=\"round_prefer_floor\""),
        "{}",
        run.all()
    );
    assert!(
        run.stdout.contains("t3 [1, 2, 8, 8]: cosine 1.0"),
        "its input is intact: {}",
        run.all()
    );
    let report = read_json(&p.path("reports/planted_op/bisect-graph-cpu.json"));
    let points = report["points"].as_array().unwrap();
    let before: Vec<f64> = points
        .iter()
        .take_while(|x| x["node"] != "n4_resize")
        .map(|x| x["cosine"].as_f64().unwrap())
        .collect();
    assert_eq!(before.len(), 4, "four exact nodes before the planted one");
    assert!(before.iter().all(|c| *c > 0.99999));
    let html = std::fs::read_to_string(p.path("reports/planted_op/bisect-graph-cpu.html")).unwrap();
    assert!(html.contains("<svg id=\"bisect-cosine\"") && html.contains("n4_resize"));
}

#[test]
fn bisect_the_same_narrowed_in_rounds() {
    let p = Scratch::fixture("planted_op");
    let run = p.run(&[
        "bisect",
        "graph",
        "--backend",
        "cpu",
        "--model",
        "planted_op",
        "--max-outputs",
        "2",
        "--threshold",
        "0.9999",
    ]);
    run.assert_code(0);
    assert!(
        run.stdout
            .contains("first divergent operator: Resize `n4_resize`"),
        "{}",
        run.all()
    );
    let report = read_json(&p.path("reports/planted_op/bisect-graph-cpu.json"));
    assert!(report["rounds"].as_u64().unwrap() >= 2, "{report}");
}

#[test]
fn bisect_needs_a_qnn_backend() {
    let p = Scratch::tiny();
    let run = p.run(&["bisect", "vision", "--backend", "ort"]);
    run.assert_refused(2, "[possible values: cpu, htp]");
}
