//! The operator conformance sweep (`conformance`) and the lint that reads its report (`lint`,
//! and `build-ctx` before it builds).

use crate::common;

use common::{Scratch, read_json};

/// Every operator type of the tiny model's graphs.
const TINY_OPS: [&str; 18] = [
    "Add",
    "Concat",
    "Cos",
    "Div",
    "Gather",
    "GridSample",
    "LayerNormalization",
    "MatMul",
    "Mul",
    "Reciprocal",
    "ReduceMean",
    "Reshape",
    "Sigmoid",
    "Sin",
    "Softmax",
    "Sqrt",
    "Sub",
    "Transpose",
];

#[test]
fn conformance_writes_a_report_with_rows_for_every_op_type_of_the_tiny_model() {
    let p = Scratch::tiny();
    let run = p.run(&["conformance", "--model", "tiny", "--backend", "cpu"]);
    run.assert_code(0);
    assert!(
        run.stdout.contains("operator group(s) from 7 component(s)"),
        "{}",
        run.all()
    );
    // A narrowed sweep (one backend) never replaces the committed report.
    assert!(!p.path("reports/tiny/conformance.json").exists());
    let report = read_json(&p.path("reports/tiny/conformance-partial.json"));
    assert_eq!(
        report["command"],
        "cargo xtask conformance --model tiny --backend cpu"
    );
    assert_eq!(report["seed"], 13);
    assert_eq!(report["inputs"].as_array().unwrap().len(), 7);
    assert!(
        report["versions"]["onnxruntime"]
            .as_str()
            .unwrap()
            .starts_with("1.")
    );
    assert_eq!(report["bounds"][0]["backend"], "cpu");
    let rows = report["rows"].as_array().unwrap();
    for op in TINY_OPS {
        let mine: Vec<_> = rows.iter().filter(|r| r["op"] == op).collect();
        assert!(!mine.is_empty(), "no row for {op}");
        assert!(mine.iter().all(|r| r["backend"] == "cpu"));
        assert!(
            mine.iter().any(|r| r["input_set"] == "real"),
            "{op} has no real-input row"
        );
    }
    let grid: Vec<_> = rows.iter().filter(|r| r["op"] == "GridSample").collect();
    let sets: Vec<&str> = grid
        .iter()
        .map(|r| r["input_set"].as_str().unwrap())
        .collect();
    assert_eq!(
        sets,
        ["real", "random", "zeros", "negative", "large", "fp16-max"]
    );
    for r in &grid {
        for key in ["cosine", "max_abs", "rel_l2"] {
            assert!(r[key].is_f64(), "{key} of {r}");
        }
    }
    // Measured on the QNN 2.47 CPU backend: 1/0 is FLT_MAX there, +inf on ORT.
    let reciprocal = rows
        .iter()
        .find(|r| r["op"] == "Reciprocal" && r["input_set"] == "zeros")
        .unwrap();
    assert_eq!(reciprocal["verdict"], "deviates", "{reciprocal}");
    assert!(
        reciprocal["wrong"]
            .as_str()
            .unwrap()
            .contains("reference inf"),
        "{reciprocal}"
    );
    let md = std::fs::read_to_string(p.path("reports/tiny/conformance-partial.md")).unwrap();
    assert!(
        md.contains("## Findings") && md.contains("| GridSample |"),
        "{md}"
    );
}

/// The committed report, edited by `f`, written where `lint` looks for it.
fn committed_report_edited(p: &Scratch, f: impl Fn(&mut serde_json::Value)) {
    let mut report = read_json(&common::committed().join("reports/tiny/conformance.json"));
    f(&mut report);
    std::fs::create_dir_all(p.path("reports/tiny")).unwrap();
    std::fs::write(
        p.path("reports/tiny/conformance.json"),
        serde_json::to_vec_pretty(&report).unwrap(),
    )
    .unwrap();
}

fn all_ok(report: &mut serde_json::Value) {
    for row in report["rows"].as_array_mut().unwrap() {
        row["verdict"] = "ok".into();
        row["wrong"] = "".into();
    }
}

#[test]
fn lint_warns_for_an_op_the_report_marks_deviating_and_stays_quiet_on_a_clean_one() {
    let p = Scratch::offline();
    let missing = p.run(&["lint"]);
    missing.assert_code(0);
    assert!(
        missing
            .stdout
            .contains("warning: no conformance report at reports/tiny/conformance.json"),
        "{}",
        missing.all()
    );

    // Clean (and measured on these very ONNX files): no warning at all.
    committed_report_edited(&p, all_ok);
    let clean = p.run(&["lint"]);
    clean.assert_code(0);
    assert!(!clean.stdout.contains("warning:"), "{}", clean.all());
    assert!(clean.stdout.contains(", 0 warning(s)"), "{}", clean.all());

    committed_report_edited(&p, |r| {
        all_ok(r);
        for row in r["rows"].as_array_mut().unwrap() {
            if row["op"] == "GridSample" && row["backend"] == "cpu" && row["input_set"] == "real" {
                row["verdict"] = "deviates".into();
                row["max_abs"] = 1.2e-3.into();
                row["wrong"] = "`grid_out`: max-abs 1.200e-3 > 1.0e-5".into();
            }
        }
    });
    let deviating = p.run(&["lint"]);
    deviating.assert_code(0);
    let warnings: Vec<&str> = deviating
        .stdout
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", deviating.all());
    assert!(
        warnings[0].contains("vision: 1 node(s) GridSample {align_corners=0")
            && warnings[0].contains("DEVIATES on cpu (input sets real; worst max-abs 1.20e-3")
            && warnings[0].contains("max-abs 1.200e-3 > 1.0e-5"),
        "{}",
        warnings[0]
    );

    // build-ctx prints it before it builds (a warning: the dry run still succeeds).
    let build = p.run(&["build-ctx", "--soc", "77", "--dry-run", "--only", "vision"]);
    build.assert_code(0);
    assert!(
        build
            .stderr
            .contains("warning: vision: 1 node(s) GridSample"),
        "{}",
        build.all()
    );

    // A report of other ONNX files is stale.
    committed_report_edited(&p, |r| {
        all_ok(r);
        r["inputs"][0]["sha256"] = "0".repeat(64).into();
    });
    let stale = p.run(&["lint", "--only", "vision"]);
    stale.assert_code(0);
    assert!(
        stale
            .stdout
            .contains("warning: vision: reports/tiny/conformance.json is stale"),
        "{}",
        stale.all()
    );
}
