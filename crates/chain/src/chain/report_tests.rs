//! Tests of the chain report: how boundaries are judged and what the report concludes.

use super::*;
use crate::chain::report_files::write_run_report;
use crate::chain::report_md::markdown;
use ndarray::IxDyn;

fn gate() -> Gate {
    xtask_recipe::recipe::ChainGate::default().boundary_gate(xtask_base::vocab::BackendKind::Ort)
}

fn arr(shape: &[usize], values: Vec<f32>) -> ArrayD<f32> {
    ArrayD::from_shape_vec(IxDyn(shape), values).unwrap()
}

fn report(boundaries: Vec<BoundaryParity>) -> RunReport {
    RunReport::new(RunInputs {
        model: "m".into(),
        backend: xtask_base::vocab::BackendKind::Ort,
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
        iters: DEFAULT_ITERS,
        warmup: DEFAULT_WARMUP,
        boundaries,
        fp32: Vec::new(),
        precisions: Default::default(),
        attribution: None,
        keys_per_layer_cosine: Vec::new(),
        values_per_layer_cosine: Vec::new(),
        actions_max_abs_gate: 1e-4,
        min_cosine_gate: 0.999,
        latency: Vec::new(),
        load_ms: BTreeMap::new(),
        host_fraction: 0.0,
        peak_rss_mb: 0.0,
        device: None,
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
    assert_eq!(b.status, Verdict::Fail);
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
    assert_eq!((b.status, b.pass), (Verdict::Ungated, false));
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
    r.run.latency = vec![xtask_runtime::report::latency::LatencyStats::of("e2e", &[])];
    let dir = tempfile::tempdir().unwrap();
    write_run_report(dir.path(), &r).unwrap();
    let back = RunReport::read(dir.path(), xtask_base::vocab::BackendKind::Ort).unwrap();
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

/// A run on a board, as `device::chain` reports it: no latency measured here, the device's
/// figures instead.
fn device_report(boundaries: Vec<BoundaryParity>) -> RunReport {
    use crate::chain::device_figures::{DeviceComponentTimes, DeviceFigures};
    let info = crate::chain::device_figures::DeviceInfo {
        url: "ssh://me@board:22/~/xtask-device".into(),
        arch: "aarch64".into(),
        arch_dir: Some("aarch64-oe-linux-gcc11.2".into()),
        sdk_root: Some("/opt/qairt".into()),
        sdk_root_from: Some("ssh-env".into()),
        sdk_is_dir: true,
        sdk_version: Some("2.47.0.250101".into()),
        sdk_bin_dirs: vec!["aarch64-oe-linux-gcc11.2".into()],
        present: Default::default(),
        free_bytes: 1 << 30,
        workdir_abs: "/home/me/xtask-device".into(),
        lib_stubs: Vec::new(),
        dsp_library_path: None,
    };
    let times = |component: &str, calls: usize, samples: &[f64]| {
        let execute = xtask_runtime::report::latency::ExecuteStats::of("NETRUN", samples);
        DeviceComponentTimes {
            component: component.into(),
            calls_per_chain: calls,
            per_chain_us: calls as f64 * execute.p50_us,
            execute,
        }
    };
    let mut run = report(Vec::new()).run;
    run.backend = xtask_base::vocab::BackendKind::Htp;
    run.mode = "device".into();
    run.host_fraction = f64::NAN;
    run.boundaries = boundaries;
    run.device = Some(DeviceFigures::new(
        &info,
        vec![
            times("vision", 1, &[100.0, 120.0]),
            times("action_step", 2, &[10.0, 11.0, 12.0, 13.0]),
        ],
        5,
    ));
    RunReport::new(run)
}

/// A quick run never replaces the default run's report: other counts name a variant.
#[test]
fn a_run_with_other_iterations_or_warm_ups_has_a_variant_stem() {
    let mut r = report(vec![actions()]);
    assert_eq!(r.stem(), "run-ort");
    r.run.iters = 2;
    assert_eq!(r.stem(), "run-ort-iters2-warmup2");
    (r.run.iters, r.run.warmup) = (DEFAULT_ITERS, 0);
    assert_eq!(r.stem(), "run-ort-iters10-warmup0");
}

#[test]
fn a_device_run_report_round_trips_under_its_own_stem() {
    let r = device_report(vec![actions()]);
    assert_eq!(r.stem(), "run-htp-device");
    let d = r.run.device.as_ref().unwrap();
    assert_eq!(d.chain_estimate_us, 120.0 + 2.0 * 12.0, "{d:?}");
    let dir = tempfile::tempdir().unwrap();
    write_run_report(dir.path(), &r).unwrap();
    for ext in ["json", "md", "html"] {
        assert!(
            dir.path().join(format!("run-htp-device.{ext}")).exists(),
            "{ext}"
        );
    }
    assert!(!dir.path().join("run-htp.json").exists());
    let back = RunReport::read_on_device(dir.path(), xtask_base::vocab::BackendKind::Htp).unwrap();
    assert_eq!(back.schema_version, <RunReport as Versioned>::SCHEMA);
    assert!(back.pass && back.run.host_fraction.is_nan());
    let bd = back.run.device.as_ref().unwrap();
    assert_eq!(bd.components.len(), 2);
    assert_eq!(bd.components[1].execute, d.components[1].execute);
    assert_eq!(
        (bd.binaries_uploaded, bd.info.url.as_str()),
        (5, d.info.url.as_str())
    );
    assert_eq!(
        serde_json::to_string(&back).unwrap(),
        serde_json::to_string(&r).unwrap()
    );
    // The Markdown carries the device's figures in place of this host's latency.
    let md = markdown(&r);
    assert!(md.contains("## Device execute time (NETRUN rows)"), "{md}");
    assert!(md.contains("**Chain estimate: 144.0 µs**"), "{md}");
    assert!(md.contains("timed inferences per component call"), "{md}");
    assert!(!md.contains("## Latency (ms)"), "{md}");
    assert!(
        !md.contains("Introduced vs inherited"),
        "no golden-inputs pass on a board"
    );
}

#[test]
fn a_device_run_is_judged_like_any_run() {
    let got = arr(&[2], vec![1.0, 0.0]);
    let want = arr(&[2], vec![0.0, 1.0]);
    let r = device_report(vec![BoundaryParity::new("w", &got, Ok(&want), &gate())]);
    assert!(!r.pass);
    assert!(r.failures[0].starts_with("w: "), "{:?}", r.failures);
    assert_eq!(
        r.failures[1], "actions: the golden holds no expected actions",
        "{:?}",
        r.failures
    );
}

#[test]
fn a_schema_1_run_report_is_read_as_a_run_on_this_host() {
    let r = report(vec![actions()]);
    let mut json = serde_json::to_value(&r).unwrap();
    assert!(
        json.get("device").is_none(),
        "a host run writes no device section"
    );
    json["schema_version"] = 1.into();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("run-ort.json"),
        serde_json::to_vec(&json).unwrap(),
    )
    .unwrap();
    let old = RunReport::read(dir.path(), xtask_base::vocab::BackendKind::Ort).unwrap();
    assert_eq!((old.schema_version, old.pass), (1, true));
    assert!(old.run.device.is_none());
    assert_eq!(old.stem(), "run-ort");
}

#[test]
fn a_run_report_without_a_schema_number_is_read_and_a_newer_one_refused() {
    let r = report(vec![actions()]);
    let mut json = serde_json::to_value(&r).unwrap();
    json.as_object_mut().unwrap().remove("schema_version");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run-ort.json");
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    let old = RunReport::read(dir.path(), xtask_base::vocab::BackendKind::Ort).unwrap();
    assert_eq!((old.schema_version, old.pass), (0, r.pass));
    json["schema_version"] = 99.into();
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    let err = format!(
        "{:#}",
        RunReport::read(dir.path(), xtask_base::vocab::BackendKind::Ort).unwrap_err()
    );
    assert!(
        err.contains("run-ort.json") && err.contains("cargo xtask run --backend ort"),
        "{err}"
    );
}
