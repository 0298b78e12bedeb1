//! fp16 hazards (`lint-fp16`, the mask clamp before the HTP) and QNN version checks before a
//! context binary is loaded.

use crate::common;

use common::{Scratch, edit_golden, read_json};

#[test]
fn lint_fp16_reports_the_largest_magnitude_per_tensor() {
    let p = Scratch::tiny();
    let run = p.run(&["lint-fp16", "--model", "tiny"]);
    run.assert_code(0);
    assert!(
        run.stdout.contains("llm_split0       largest |x|"),
        "{}",
        run.all()
    );
    assert!(
        run.stdout.contains("masked scores below -65504"),
        "{}",
        run.all()
    );
    let report = read_json(&p.path("reports/tiny/lint-fp16.json"));
    assert_eq!(report.as_array().unwrap().len(), 7);
    assert!(report[1]["largest_abs"].as_f64().unwrap() > 65504.0);
}

/// A PyTorch-style mask (blocked = f32 minimum): marked `mask = true` it is clamped to -65504
/// before the HTP and parity holds; unmarked, the build stops before the HTP with the fix.
/// (Measured: on this graph the emulated HTP gives the same cosine unclamped, so the test does
/// not claim an inversion here; `--no-clamp` exists to check that on other graphs.)
#[test]
fn an_f32_minimum_mask_is_clamped_for_the_htp_or_refused_when_unmarked() {
    let p = Scratch::tiny();
    edit_golden(
        &p.path("golden/tiny/llm_split0_io.npz"),
        "attention_bias",
        |a| a.mapv_inplace(|v| if v <= -65504.0 { f32::MIN } else { v }),
    );
    p.run(&["build-ctx", "--soc", "77", "--only", "llm_split0"])
        .assert_code(0);
    let lint = p.run(&["lint-fp16", "--only", "llm_split0"]);
    lint.assert_code(0);
    assert!(
        lint.stdout
            .contains("mask below -65504 (min -3.403e38): clamped to -65504 before the HTP"),
        "{}",
        lint.all()
    );
    p.run(&["parity", "--backend", "htp", "--only", "llm_split0"])
        .assert_code(0);

    let recipe = p.path("recipes/tiny/llm_split0.toml");
    std::fs::write(
        &recipe,
        std::fs::read_to_string(&recipe)
            .unwrap()
            .replace("mask = true\n", ""),
    )
    .unwrap();
    let build = p.run(&["build-ctx", "--soc", "77", "--only", "llm_split0"]);
    build.assert_code(1);
    assert!(
        build
            .stdout
            .contains("fp16 hazard before the HTP: input attention_bias")
            && build.stdout.contains("mark it `mask = true`"),
        "{}",
        build.all()
    );
}

#[test]
fn a_binary_recorded_as_built_by_a_newer_qnn_is_refused_before_loading() {
    let p = Scratch::tiny();
    p.run(&["build-ctx", "--soc", "77", "--only", "action_context"])
        .assert_code(0);
    let record_path = p.path("ctx/tiny/action_context.record.json");
    let original = std::fs::read_to_string(&record_path).unwrap();
    let recorded = read_json(&record_path)["steps"]["context@soc77"]["detail"]["ep_sdk_version"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        recorded.starts_with("v2.47.0"),
        "the build records the QNN version: {recorded}"
    );
    std::fs::write(&record_path, original.replace(&recorded, "v2.99.0.1")).unwrap();
    let run = p.run(&["parity", "--backend", "htp", "--only", "action_context"]);
    run.assert_code(2);
    assert!(
        run.all()
            .contains("built with QNN v2.99.0.1, but this runtime is QNN v2.47.0"),
        "{}",
        run.all()
    );
    std::fs::write(&record_path, original.replace(&recorded, "v2.40.0.1")).unwrap();
    let run = p.run(&["parity", "--backend", "htp", "--only", "action_context"]);
    run.assert_refused(0, "is loaded by the newer QNN v2.47.0");
}

/// The fixture's single-head attention takes a PyTorch-style mask (blocked = f32 minimum):
/// clamped, HTP parity holds; unclamped, fp16 on the HTP inverts the mask and the gate fails.
#[test]
fn an_f32_minimum_mask_passes_htp_parity_thanks_to_the_clamp_and_fails_without_it() {
    let p = Scratch::fixture("mask_attention");
    p.run(&["build-ctx", "--soc", "77", "--model", "mask_attention"])
        .assert_code(0);
    p.run(&["parity", "--backend", "htp", "--model", "mask_attention"])
        .assert_code(0);
    let unclamped = p.run(&[
        "parity",
        "--backend",
        "htp",
        "--model",
        "mask_attention",
        "--no-clamp",
    ]);
    unclamped.assert_code(1);
    assert!(
        unclamped.stdout.contains("FAIL attention y: 1 − cosine"),
        "{}",
        unclamped.all()
    );
}
