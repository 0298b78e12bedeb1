use super::*;
use crate::parity::component::OutputResult;
use crate::parity::gate::{Gate, Judgement};
use xtask_base::vocab::BackendKind;

/// A report of two components, one with NaN figures (a NaN cosine, an empty profile).
fn report() -> ParityReport {
    let gate = Gate {
        min_cosine: 0.999,
        max_norm_ratio_error: f64::NAN,
        atol: 1e-3,
        rtol: 1e-2,
        waiver: Some("fp16 rounding".into()),
        source: "recipes/tiny/model.toml [[parity.override]]".into(),
        replaced_min_cosine: Some(0.9999),
    };
    let metrics = crate::parity::metrics::compare(&[1.0, 2.0], &[1.0, 2.5], 1e-3, 1e-2);
    let component = |name: &str, cosine: f64| ComponentResult {
        component: name.into(),
        backend: BackendKind::Cpu,
        session_model: format!("onnx/tiny/{name}.onnx"),
        input_sha256: [("x".to_string(), "ab".repeat(32))].into(),
        golden_sha256: "cd".repeat(32),
        placement: None,
        run_seconds: 0.5,
        latency: Some(xtask_runtime::report::latency::ExecuteStats::of(
            "NETRUN",
            &[],
        )),
        outputs: vec![OutputResult {
            name: "y".into(),
            shape: vec![2],
            gate: gate.clone(),
            metrics: crate::parity::metrics::Metrics {
                cosine,
                ..metrics.clone()
            },
            max_abs_at: vec![1],
            verdict: Judgement {
                pass: cosine >= 0.999,
                reasons: Vec::new(),
            },
        }],
        pass: cosine >= 0.999,
        error: None,
        measured_unix: 1,
        from_earlier_run: false,
        precision: None,
        stage: None,
    };
    let components = vec![component("vision", 1.0), component("action_step", f64::NAN)];
    ParityReport {
        schema_version: ParityReport::SCHEMA,
        model: "tiny".into(),
        backend: BackendKind::Cpu,
        created_unix: 2,
        versions: ToolVersions {
            xtask: "0.1.0".into(),
            onnxruntime: "1.24.4".into(),
            qnn_build: None,
            qnn_plugin: "onnxruntime-qnn==2.3.0".into(),
            runtime_source: "embedded".into(),
            data_root: None,
            unverified_inputs: None,
        },
        htp_emulated: None,
        htp: None,
        device: None,
        pass: false,
        components,
    }
}

#[test]
fn the_parity_report_round_trips_through_its_type_nan_included() {
    let r = report();
    let dir = tempfile::tempdir().unwrap();
    crate::parity::report_files::write_parity_report(dir.path(), &r).unwrap();
    let back = ParityReport::read(dir.path(), BackendKind::Cpu)
        .unwrap()
        .expect("the report was written");
    assert_eq!(back.schema_version, ParityReport::SCHEMA);
    let y = |r: &ParityReport, c: usize| r.components[c].outputs[0].clone();
    assert!(y(&back, 1).metrics.cosine.is_nan());
    assert!(y(&back, 0).gate.max_norm_ratio_error.is_nan());
    assert!(back.components[0].latency.as_ref().unwrap().p50_us.is_nan());
    assert_eq!(y(&back, 0).metrics, y(&r, 0).metrics);
    // Re-serialised, the two are the same document, and render the same Markdown.
    assert_eq!(
        serde_json::to_string(&back).unwrap(),
        serde_json::to_string(&r).unwrap()
    );
    assert_eq!(
        crate::parity::markdown::parity_markdown(&back),
        crate::parity::markdown::parity_markdown(&r)
    );
}

/// An override reads as what it did to the recipe's gate, with its reason; a report
/// written before the replaced gate was recorded still says which gate applied.
#[test]
fn the_markdown_says_which_gate_an_override_lowered_and_why() {
    let md = crate::parity::markdown::parity_markdown(&report());
    assert!(
        md.contains("## Gate overrides")
            && md.contains(
                "- `vision` y: gate lowered from 0.9999 to 0.999 (reason: fp16 rounding)"
            ),
        "{md}"
    );
    assert!(!md.contains("waive"), "{md}");
    let mut old = report();
    old.components[0].outputs[0].gate.replaced_min_cosine = None;
    let md = crate::parity::markdown::parity_markdown(&old);
    assert!(
        md.contains("- `vision` y: gate 0.999 set by an override (reason: fp16 rounding)"),
        "{md}"
    );
}

#[test]
fn a_parity_report_without_a_schema_number_is_read_and_a_newer_one_refused() {
    let mut json = serde_json::to_value(report()).unwrap();
    json.as_object_mut().unwrap().remove("schema_version");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("parity-cpu.json");
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    let old = ParityReport::read(dir.path(), BackendKind::Cpu)
        .unwrap()
        .unwrap();
    assert_eq!((old.schema_version, old.components.len()), (0, 2));
    json["schema_version"] = 2.into();
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    let err = format!(
        "{:#}",
        ParityReport::read(dir.path(), BackendKind::Cpu).unwrap_err()
    );
    assert!(
        err.contains("parity-cpu.json")
            && err.contains("newer than this tool reads")
            && err.contains("cargo xtask parity --backend cpu"),
        "{err}"
    );
    assert!(
        ParityReport::read(dir.path(), BackendKind::Htp)
            .unwrap()
            .is_none()
    );
}
