//! `parity`, `doctor` and recipe validation, run as a user runs them (the real binary, the
//! real runtime, a scratch copy of the project).

use crate::common;

use common::{Scratch, cosines, edit_golden, read_json};

#[test]
fn parity_ort_on_tiny_passes_every_component_with_reports() {
    let p = Scratch::tiny();
    p.run(&["parity", "--backend", "ort", "--model", "tiny"])
        .assert_code(0);
    let report = read_json(&p.path("reports/tiny/parity-ort.json"));
    let all = cosines(&report);
    assert_eq!(
        all.iter()
            .map(|c| &c.0)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        7
    );
    for (comp, out, cos) in &all {
        assert!(*cos >= 0.99999, "{comp} {out} cosine {cos}");
    }
    assert_eq!(report["versions"]["onnxruntime"], "1.24.4");
    assert!(
        report["components"][0]["input_sha256"]["pixel_values"]
            .as_str()
            .unwrap()
            .len()
            == 64
    );
    let md = std::fs::read_to_string(p.path("reports/tiny/parity-ort.md")).unwrap();
    assert!(
        md.contains("| context | output | cosine |") && md.contains("`llm_split3`"),
        "{md}"
    );
}

#[test]
fn parity_cpu_on_tiny_passes_with_every_node_on_qnn() {
    let p = Scratch::tiny();
    p.run(&["parity", "--backend", "cpu", "--only", "vision,action_step"])
        .assert_code(0);
    let report = read_json(&p.path("reports/tiny/parity-cpu.json"));
    for c in report["components"].as_array().unwrap() {
        let per_ep = c["placement"]["nodes_per_ep"].as_object().unwrap();
        assert_eq!(
            per_ep.keys().collect::<Vec<_>>(),
            vec!["QNNExecutionProvider"],
            "{c}"
        );
    }
    assert!(
        report["versions"]["qnn_build"]
            .as_str()
            .unwrap()
            .starts_with("v2.47.0")
    );
}

#[test]
fn perturbed_golden_output_fails_naming_component_output_and_figure() {
    let p = Scratch::tiny();
    edit_golden(&p.path("golden/tiny/action_context_io.npz"), "v_ctx", |a| {
        a.iter_mut().step_by(3).for_each(|v| *v = -*v);
    });
    let run = p.run(&["parity", "--backend", "ort"]);
    run.assert_code(1);
    assert!(
        run.stdout.contains("FAIL action_context v_ctx: 1 − cosine"),
        "{}",
        run.all()
    );
    assert!(run.stdout.contains("< gate 0.9999"), "{}", run.all());
    assert!(
        run.stdout.contains("PASS  action_step"),
        "others still run: {}",
        run.all()
    );
    let report = read_json(&p.path("reports/tiny/parity-ort.json"));
    assert_eq!(report["pass"], false);
}

#[test]
fn nan_in_golden_fails_the_gate() {
    let p = Scratch::tiny();
    edit_golden(
        &p.path("golden/tiny/action_step_io.npz"),
        "next_trajectory",
        |a| {
            a.as_slice_mut().unwrap()[5] = f32::NAN;
        },
    );
    let run = p.run(&["parity", "--backend", "ort", "--only", "action_step"]);
    run.assert_code(1);
    assert!(run.stdout.contains("NaN"), "{}", run.all());
}

#[test]
fn doctor_reports_the_pinned_qnn_and_ort() {
    let p = Scratch::tiny();
    let run = p.run(&["doctor"]);
    run.assert_code(0);
    assert!(run.stdout.contains("ONNX Runtime  1.24.4"), "{}", run.all());
    assert!(
        run.stdout.contains("QNN build     v2.47.0"),
        "{}",
        run.all()
    );
    assert!(
        run.stdout.contains("QNN HTP") && run.stdout.contains("emulated on x86_64 usable"),
        "{}",
        run.all()
    );
}

#[test]
fn unknown_recipe_key_names_file_line_and_key() {
    let p = Scratch::tiny();
    let path = p.path("recipes/tiny/vision.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("fp16 = true", "fp16 = true\nturbo_mode = 1");
    std::fs::write(&path, &text).unwrap();
    let line = common::line_of(&text, "turbo_mode");
    let run = p.run(&["parity", "--backend", "ort"]);
    run.assert_code(2);
    assert!(
        run.stderr
            .contains(&format!("recipes/tiny/vision.toml:{line}:")),
        "{}",
        run.all()
    );
    assert!(run.stderr.contains("turbo_mode"), "{}", run.all());
}

#[test]
fn wrong_shape_in_recipe_names_tensor_and_both_shapes() {
    let p = Scratch::tiny();
    let path = p.path("recipes/tiny/llm_split1.toml");
    let text = std::fs::read_to_string(&path).unwrap().replacen(
        "shape = [1, 130, 64]",
        "shape = [1, 130, 65]",
        1,
    );
    std::fs::write(&path, text).unwrap();
    let run = p.run(&["parity", "--backend", "ort", "--only", "llm_split1"]);
    // Bad input, refused before anything runs: exit 2 (it was 1 before the hardening).
    run.assert_refused(2, "recipes/tiny/llm_split1.toml:");
    assert!(
        run.stderr
            .contains("`hidden_states` is f32 [1, 130, 65] in the recipe but f32 [1, 130, 64]"),
        "{}",
        run.all()
    );
}

#[test]
fn recipe_pointing_at_a_missing_file_names_it() {
    let p = Scratch::tiny();
    let path = p.path("recipes/tiny/action_step.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("onnx/tiny/action_step.onnx", "onnx/tiny/nowhere.onnx");
    std::fs::write(&path, text).unwrap();
    let run = p.run(&["parity", "--backend", "ort"]);
    run.assert_refused(
        2,
        "recipes/tiny/action_step.toml:5: component.onnx = \"onnx/tiny/nowhere.onnx\": not found",
    );
}

#[test]
fn corrupt_golden_npz_is_a_clear_error() {
    let p = Scratch::tiny();
    let path = p.path("golden/tiny/action_context_io.npz");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let run = p.run(&["parity", "--backend", "ort", "--only", "action_context"]);
    // Bad input, like build-ctx: exit 2 (it was 1 before the hardening).
    run.assert_refused(2, "golden/tiny/action_context_io.npz");
}

#[test]
fn graph_not_placed_on_qnn_fails_naming_the_node() {
    let p = Scratch::fixture("erf_gelu");
    p.run(&["parity", "--backend", "ort", "--model", "erf_gelu"])
        .assert_code(0);
    let run = p.run(&["parity", "--backend", "cpu", "--model", "erf_gelu"]);
    run.assert_code(1);
    assert!(
        run.stdout.contains("not placed entirely on QNN"),
        "{}",
        run.all()
    );
    assert!(
        run.stdout
            .contains("Erf (erf_node) on [CPUExecutionProvider]"),
        "{}",
        run.all()
    );
}

#[test]
fn unknown_model_and_component_are_clear_errors() {
    let p = Scratch::tiny();
    let run = p.run(&["parity", "--backend", "ort", "--model", "nope"]);
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("known models: molmoact2-libero-lp-vtp-sd, tiny"),
        "{}",
        run.all()
    );
    let run = p.run(&["parity", "--backend", "ort", "--only", "visoin"]);
    run.assert_refused(2, "unknown component `visoin`");
}

/// An `--only` run's exit code comes from what it ran: a failure kept from an earlier run of
/// another component is shown as such (terminal and Markdown), not turned into this run's FAIL.
#[test]
fn an_only_run_exits_on_what_it_ran_and_shows_kept_results_as_earlier() {
    let p = Scratch::tiny();
    let golden = p.path("golden/tiny/llm_split0_io.npz");
    let good = std::fs::read(&golden).unwrap();
    edit_golden(&golden, "hidden_out", |a| a.mapv_inplace(|v| -v));
    p.run(&["parity", "--backend", "ort", "--only", "llm_split0"])
        .assert_code(1);
    std::fs::write(&golden, good).unwrap();
    let run = p.run(&["parity", "--backend", "ort", "--only", "vision"]);
    run.assert_code(0);
    assert!(
        run.stdout.contains("all 1 component(s) of this run pass")
            && run
                .stdout
                .contains("of these FAILED when last run: llm_split0"),
        "{}",
        run.stdout
    );
    let report = read_json(&p.path("reports/tiny/parity-ort.json"));
    let kept: Vec<_> = report["components"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["from_earlier_run"] == true)
        .map(|c| c["component"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kept, ["llm_split0"]);
    assert_eq!(
        report["pass"], false,
        "the report as a whole still holds the failure"
    );
    let md = std::fs::read_to_string(p.path("reports/tiny/parity-ort.md")).unwrap();
    assert!(
        md.contains("`llm_split0` (earlier run, not re-measured)"),
        "{md}"
    );
}
