//! Tests of the chain report: how boundaries are judged and what the report concludes.

use super::*;
use crate::chain::report_files::write_run_report;
use crate::chain::report_md::markdown;
use ndarray::IxDyn;

fn gate() -> Gate {
    crate::recipe::ChainGate::default().boundary_gate(crate::vocab::BackendKind::Ort)
}

fn arr(shape: &[usize], values: Vec<f32>) -> ArrayD<f32> {
    ArrayD::from_shape_vec(IxDyn(shape), values).unwrap()
}

fn report(boundaries: Vec<BoundaryParity>) -> RunReport {
    RunReport::new(RunInputs {
        model: "m".into(),
        backend: crate::vocab::BackendKind::Ort,
        htp_emulated: None,
        htp: None,
        mode: "resident".into(),
        versions: ToolVersions {
            xtask: "0".into(),
            onnxruntime: "0".into(),
            qnn_build: None,
            qnn_plugin: "0".into(),
            runtime_source: "test".into(),
            data_root: None,
            unverified_inputs: None,
        },
        layout: Default::default(),
        iters: 1,
        warmup: 0,
        boundaries,
        fp32: Vec::new(),
        attribution: None,
        keys_per_layer_cosine: Vec::new(),
        values_per_layer_cosine: Vec::new(),
        actions_max_abs_gate: 1e-4,
        min_cosine_gate: 0.999,
        latency: Vec::new(),
        load_ms: BTreeMap::new(),
        host_fraction: 0.0,
        peak_rss_mb: 0.0,
    })
}

fn actions() -> BoundaryParity {
    let a = arr(&[1, 2], vec![0.5, -0.5]);
    BoundaryParity::new("actions", &a, Ok(&a), &gate())
}

#[test]
fn a_nan_in_the_golden_fails_naming_the_boundary_and_count() {
    let got = arr(&[4], vec![1.0, 2.0, 3.0, 4.0]);
    let want = arr(&[4], vec![1.0, f32::NAN, 3.0, f32::INFINITY]);
    let b = BoundaryParity::new("scatter/hidden_states", &got, Ok(&want), &gate());
    assert_eq!(b.status, Status::Fail);
    let r = report(vec![b, actions()]);
    assert!(!r.pass);
    assert_eq!(r.failures.len(), 1, "{:?}", r.failures);
    let f = &r.failures[0];
    assert!(f.starts_with("scatter/hidden_states: "), "{f}");
    assert!(f.contains("1 NaN / 1 Inf in the golden"), "{f}");
}

#[test]
fn a_shape_mismatch_fails_naming_both_shapes() {
    let got = arr(&[2, 2], vec![1.0; 4]);
    let want = arr(&[4], vec![1.0; 4]);
    let r = report(vec![
        BoundaryParity::new("x", &got, Ok(&want), &gate()),
        actions(),
    ]);
    assert!(!r.pass);
    assert!(
        r.failures[0].starts_with("x: ") && r.failures[0].contains("[2, 2]"),
        "{:?}",
        r.failures
    );
    assert!(r.failures[0].contains("[4]"), "{:?}", r.failures);
}

#[test]
fn a_boundary_without_reference_is_ungated_not_passed() {
    let got = arr(&[1], vec![1.0]);
    let b = BoundaryParity::new(
        "y",
        &got,
        Err("the trace has no tensor `y`".into()),
        &gate(),
    );
    assert_eq!((b.status, b.pass), (Status::Ungated, false));
    let r = report(vec![b, actions()]);
    assert!(r.pass, "ungated is not a failure: {:?}", r.failures);
    assert_eq!(
        r.ungated,
        vec!["y: the trace has no tensor `y`".to_string()]
    );
    assert!(markdown(&r).contains("**UNGATED**: the trace has no tensor `y`"));
}

#[test]
fn the_chain_gate_tolerances_reach_the_metrics() {
    let got = arr(&[2], vec![1.0, 2.0]);
    let want = arr(&[2], vec![1.0, 2.01]);
    let mut loose = gate();
    loose.rtol = 1e-2;
    let strict = BoundaryParity::new("z", &got, Ok(&want), &gate());
    let loose = BoundaryParity::new("z", &got, Ok(&want), &loose);
    assert_eq!(strict.metrics.unwrap().over_tol, 1);
    assert_eq!(loose.metrics.unwrap().over_tol, 0);
}

#[test]
fn a_low_cosine_fails_with_the_cosine_and_gate() {
    let got = arr(&[2], vec![1.0, 0.0]);
    let want = arr(&[2], vec![0.0, 1.0]);
    let r = report(vec![
        BoundaryParity::new("w", &got, Ok(&want), &gate()),
        actions(),
    ]);
    assert!(
        r.failures[0].contains("cosine 0.00000000 < gate 0.999"),
        "{:?}",
        r.failures
    );
}

#[test]
fn the_run_report_round_trips_through_its_type_nan_included() {
    let got = arr(&[2], vec![1.0, 2.0]);
    let want = arr(&[2], vec![1.0, 2.5]);
    let mut r = report(vec![
        BoundaryParity::new("x", &got, Ok(&want), &gate()),
        actions(),
    ]);
    r.run.keys_per_layer_cosine = vec![0.5, f64::NAN];
    r.run.peak_rss_mb = f64::NAN;
    r.run.latency = vec![crate::report::latency::LatencyStats::of("e2e", &[])];
    let dir = tempfile::tempdir().unwrap();
    write_run_report(dir.path(), &r).unwrap();
    let back = RunReport::read(dir.path(), crate::vocab::BackendKind::Ort).unwrap();
    assert_eq!(back.schema_version, <RunReport as Versioned>::SCHEMA);
    assert_eq!(back.run.boundaries.len(), 2);
    assert_eq!(back.run.boundaries[0].metrics, r.run.boundaries[0].metrics);
    assert_eq!(back.failures, r.failures);
    assert_eq!(back.run.keys_per_layer_cosine[0], 0.5);
    assert!(back.run.keys_per_layer_cosine[1].is_nan() && back.run.peak_rss_mb.is_nan());
    assert!(back.run.latency[0].p50_ms.is_nan());
    // Re-serialised, the two are the same document.
    assert_eq!(
        serde_json::to_string(&back).unwrap(),
        serde_json::to_string(&r).unwrap()
    );
}

#[test]
fn a_run_report_without_a_schema_number_is_read_and_a_newer_one_refused() {
    let r = report(vec![actions()]);
    let mut json = serde_json::to_value(&r).unwrap();
    json.as_object_mut().unwrap().remove("schema_version");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run-ort.json");
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    let old = RunReport::read(dir.path(), crate::vocab::BackendKind::Ort).unwrap();
    assert_eq!((old.schema_version, old.pass), (0, r.pass));
    json["schema_version"] = 99.into();
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    let err = format!(
        "{:#}",
        RunReport::read(dir.path(), crate::vocab::BackendKind::Ort).unwrap_err()
    );
    assert!(
        err.contains("run-ort.json") && err.contains("cargo xtask run --backend ort"),
        "{err}"
    );
}
