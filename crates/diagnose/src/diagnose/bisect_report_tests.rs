use super::*;
use xtask_base::vocab::BackendKind;

/// A ranking-mode report with every kind of figure, NaN where the tool can write one.
fn report() -> BisectReport {
    let point = |index: usize, cosine: f64| TensorPoint {
        index,
        tensor: format!("t{index}"),
        node: format!("n{index}"),
        op_type: "Resize".into(),
        cosine,
        max_abs_err: 0.5,
        rel_l2_err: if cosine.is_nan() { f64::NAN } else { 1e-3 },
    };
    let mut report = BisectReport {
        schema_version: BisectReport::SCHEMA,
        model: "planted_op".into(),
        component: "graph".into(),
        backend: BackendKind::Cpu,
        qdq: false,
        threshold: None,
        ranked: vec![Ranked {
            tensor: "t1".into(),
            node: "n1".into(),
            op_type: "Resize".into(),
            attributes: vec![("mode".into(), "\"nearest\"".into())],
            cosine: f64::NAN,
            rel_l2_err: f64::NAN,
            worst_input: Some("t0".into()),
            worst_input_rel_l2: 0.0,
            introduced: 2.5e4,
        }],
        exact_floor: super::super::rank::EXACT_FLOOR,
        output_cosine_untapped: BTreeMap::from([("y".into(), f64::NAN)]),
        output_vs_golden: BTreeMap::new(),
        output_cosine_tapped: BTreeMap::from([("y".into(), 0.25)]),
        taps_changed_outputs: true,
        rounds: 2,
        tensors_compared: 2,
        points: vec![point(0, 1.0), point(1, f64::NAN)],
        first_divergence: Some(Divergence {
            node: "n1".into(),
            op_type: "Resize".into(),
            attributes: Vec::new(),
            output: "t1".into(),
            cosine: f64::NAN,
            inputs: vec![("t0".into(), vec![1, 2], "cosine 1.0".into())],
        }),
        verdict: None,
    };
    report.verdict = Some(super::super::verdict::judge(&report));
    report
}

fn write(dir: &Path, r: &BisectReport) -> std::path::PathBuf {
    let path = dir.join(format!("{}.json", r.stem()));
    xtask_base::record::write(&path, r).unwrap();
    path
}

#[test]
fn the_bisect_report_round_trips_through_its_type_nan_included() {
    let r = report();
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), &r);
    assert!(
        path.ends_with("bisect-graph-cpu.json"),
        "{}",
        path.display()
    );
    let back = BisectReport::read(dir.path(), "planted_op", "graph", BackendKind::Cpu).unwrap();
    assert_eq!(back.schema_version, BisectReport::SCHEMA);
    assert!(back.points[1].cosine.is_nan() && back.points[1].rel_l2_err.is_nan());
    assert!(back.ranked[0].cosine.is_nan() && back.output_cosine_untapped["y"].is_nan());
    assert!(back.first_divergence.as_ref().unwrap().cosine.is_nan());
    assert_eq!(back.verdict, r.verdict);
    assert_eq!(back.verdict.as_ref().unwrap().kind, VerdictKind::OneCulprit);
    // Re-serialised, the two are the same document, and render the same pages.
    assert_eq!(
        serde_json::to_string(&back).unwrap(),
        serde_json::to_string(&r).unwrap()
    );
    assert_eq!(markdown(&back), markdown(&r));
    assert_eq!(html(&back), html(&r));
}

#[test]
fn a_bisect_report_without_a_schema_number_is_read_and_a_newer_one_refused() {
    let r = report();
    let mut json = serde_json::to_value(&r).unwrap();
    json.as_object_mut().unwrap().remove("schema_version");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bisect-graph-cpu.json");
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    let read = || BisectReport::read(dir.path(), "planted_op", "graph", BackendKind::Cpu);
    let old = read().unwrap();
    assert_eq!((old.schema_version, old.points.len()), (0, 2));
    assert_eq!(old.verdict.unwrap().kind.label(), "one culprit");
    json["schema_version"] = 99.into();
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    let err = format!("{:#}", read().unwrap_err());
    assert!(
        err.contains("bisect-graph-cpu.json")
            && err.contains("newer than this tool reads")
            && err.contains("cargo xtask bisect graph --backend cpu --model planted_op"),
        "{err}"
    );
}
