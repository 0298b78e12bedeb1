//! `cargo xtask run`: the chain end to end on ort, cpu and htp, its reports, and its errors.

use crate::common;

use common::{Scratch, drop_npz_key, read_json};
use xtask_onnx::tensor::{Tensor, read_npz, write_npz};

/// The trace npz the model's `[host] trace` names (through its `npz` key).
fn trace_npz(p: &Scratch) -> std::path::PathBuf {
    let model = std::fs::read_to_string(p.path("recipes/tiny/model.toml")).unwrap();
    let model: toml::Value = toml::from_str(&model).unwrap();
    let trace_json = p.path(model["host"]["trace"].as_str().unwrap());
    let npz = read_json(&trace_json)["npz"].as_str().unwrap().to_string();
    trace_json.parent().unwrap().join(npz)
}

/// Rewrites one f32 tensor of the trace through `f` (the other tensors are kept as they are).
fn edit_trace(p: &Scratch, key: &str, f: impl Fn(&mut ndarray::ArrayD<f32>)) {
    let path = trace_npz(p);
    let mut all = read_npz(&path).unwrap();
    match all.get_mut(key) {
        Some(Tensor::F32(a)) => f(a),
        other => panic!("trace tensor {key}: {other:?}"),
    }
    write_npz(&path, &all).unwrap();
}

/// The actions' error of a run report (`stem`: `run-cpu-iters3-warmup1`, a quick run's name).
fn actions_err(p: &Scratch, stem: &str) -> f64 {
    read_json(&p.path(&format!("reports/tiny/{stem}.json")))["actions_max_abs_err"]
        .as_f64()
        .unwrap()
}

#[test]
fn chain_on_ort_and_cpu_matches_the_expected_actions() {
    let p = Scratch::tiny();
    for backend in ["ort", "cpu"] {
        let run = p.run(&["run", "--backend", backend, "--iters", "3", "--warmup", "1"]);
        run.assert_code(0);
        let err = actions_err(&p, &format!("run-{backend}-iters3-warmup1"));
        assert!(
            err <= 1e-4,
            "{backend}: actions max abs err {err}\n{}",
            run.all()
        );
        let report = read_json(&p.path(&format!("reports/tiny/run-{backend}-iters3-warmup1.json")));
        let names: Vec<&str> = report["boundaries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["name"].as_str().unwrap())
            .collect();
        for expected in [
            "vision/image_embeds",
            "llm_split3/values",
            "action_context/k_ctx",
            "euler step 1 (t=0.5)/trajectory",
            "normalized actions (before clipping)",
            "actions",
        ] {
            assert!(
                names.contains(&expected),
                "{expected} missing from {names:?}"
            );
        }
        assert_eq!(report["keys_per_layer_cosine"].as_array().unwrap().len(), 8);
        let end_to_end = report["latency"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["name"] == "end-to-end")
            .unwrap();
        assert_eq!(end_to_end["samples"], 3);
    }
}

#[test]
fn the_html_report_is_self_contained_with_three_plots() {
    let p = Scratch::tiny();
    p.run(&["run", "--backend", "ort", "--iters", "2", "--warmup", "0"])
        .assert_code(0);
    let html = std::fs::read_to_string(p.path("reports/tiny/run-ort-iters2-warmup0.html")).unwrap();
    for id in ["id=\"latency\"", "id=\"chain-cosine\"", "id=\"kv-cosine\""] {
        assert!(html.contains(id), "missing plot {id}");
    }
    assert_eq!(html.matches("<svg").count(), 3);
    assert!(
        html.contains("<table>") && !html.contains("<pre>") && !html.contains("|---|"),
        "the figures are HTML tables, not Markdown source"
    );
    assert!(html.contains("golden inputs"), "both lines are plotted");
    let without_ns = html.replace("http://www.w3.org/2000/svg", "");
    assert!(
        !without_ns.contains("http://") && !without_ns.contains("https://"),
        "the page must not need the network"
    );
    assert!(
        !html.contains("<script src") && !html.contains("<link"),
        "no external resources"
    );
}

#[test]
fn streaming_mode_loads_each_component_per_call() {
    let p = Scratch::tiny();
    p.run(&[
        "run",
        "--backend",
        "ort",
        "--streaming",
        "--iters",
        "1",
        "--warmup",
        "0",
    ])
    .assert_code(0);
    let report = read_json(&p.path("reports/tiny/run-ort-iters1-warmup0.json"));
    assert_eq!(report["mode"], "streaming");
    assert_eq!(
        report["load_ms"]["action_step"].as_array().unwrap().len(),
        2,
        "one load per Euler step"
    );
}

#[test]
fn chain_on_the_htp_needs_its_binaries_then_matches_within_the_gate() {
    let p = Scratch::tiny();
    let run = p.run(&["run", "--backend", "htp", "--iters", "1", "--warmup", "0"]);
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("no context binary ctx/tiny/vision_socid77_archv73.bin"),
        "{}",
        run.all()
    );
    p.run(&["build-ctx", "--soc", "77"]).assert_code(0);
    let run = p.run(&["run", "--backend", "htp", "--iters", "1", "--warmup", "0"]);
    run.assert_code(0);
    let err = actions_err(&p, "run-htp-iters1-warmup0");
    assert!(err <= 1e-2, "htp actions max abs err {err}");
    assert!(run.stdout.contains("HTP emulated"), "{}", run.all());
    assert_eq!(
        read_json(&p.path("reports/tiny/run-htp-iters1-warmup0.json"))["htp_emulated"],
        true
    );
}

#[test]
fn a_golden_without_host_tensors_is_a_clear_error() {
    let p = Scratch::tiny();
    drop_npz_key(&p.path("golden/tiny/trace.npz"), "initial_noise");
    let run = p.run(&["run", "--backend", "ort", "--iters", "1"]);
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("golden/tiny/trace.npz: the golden has no host tensors [\"initial_noise\"]"),
        "{}",
        run.all()
    );
}

#[test]
fn a_wrong_model_toml_is_a_clear_error() {
    let p = Scratch::tiny();
    let path = p.path("recipes/tiny/model.toml");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "action_context = \"action_context\"",
        "action_context = \"action_ctx\"",
    );
    std::fs::write(&path, text).unwrap();
    let run = p.run(&["run", "--backend", "ort"]);
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("recipes/tiny/model.toml: [host] names component `action_ctx`"),
        "{}",
        run.all()
    );
}

#[test]
fn a_nan_in_a_golden_boundary_fails_the_chain_gate() {
    let p = Scratch::tiny();
    edit_trace(&p, "hidden_states", |a| {
        a.as_slice_mut().unwrap()[3] = f32::NAN;
    });
    let run = p.run(&["run", "--backend", "ort", "--iters", "1", "--warmup", "0"]);
    run.assert_code(1);
    assert!(
        run.stdout.contains(
            "FAIL scatter/hidden_states: non-finite values: 0 NaN / 0 Inf in the output, 1 NaN / 0 Inf in the golden"
        ),
        "{}",
        run.all()
    );
    let report = read_json(&p.path("reports/tiny/run-ort-iters1-warmup0.json"));
    let b = report["boundaries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "scatter/hidden_states")
        .unwrap();
    assert_eq!(b["status"], "fail");
    assert_eq!(report["pass"], false);
}

#[test]
fn a_perturbed_trace_tensor_fails_naming_its_boundary() {
    let p = Scratch::tiny();
    // Every other value tripled: finite, same shape, but no longer parallel (cosine ~0.9).
    edit_trace(&p, "trajectory_step0_out", |a| {
        a.iter_mut().step_by(2).for_each(|v| *v *= 3.0);
    });
    let run = p.run(&["run", "--backend", "ort", "--iters", "1", "--warmup", "0"]);
    run.assert_code(1);
    assert!(
        run.stdout
            .contains("FAIL euler step 0 (t=0)/trajectory: 1 − cosine"),
        "{}",
        run.all()
    );
    assert!(
        !run.stdout.contains("FAIL euler step 1"),
        "only the perturbed boundary fails: {}",
        run.all()
    );
}

#[test]
fn a_boundary_without_reference_is_listed_as_ungated() {
    let p = Scratch::tiny();
    drop_npz_key(&trace_npz(&p), "hidden_states");
    let run = p.run(&["run", "--backend", "ort", "--iters", "1", "--warmup", "0"]);
    run.assert_code(0);
    assert!(
        run.stdout
            .contains("UNGATED scatter/hidden_states: the trace has no tensor `hidden_states`"),
        "{}",
        run.all()
    );
    let report = read_json(&p.path("reports/tiny/run-ort-iters1-warmup0.json"));
    assert_eq!(report["ungated"].as_array().unwrap().len(), 1);
}

#[test]
fn every_boundary_is_also_measured_on_its_golden_inputs() {
    let p = Scratch::tiny();
    let run = p.run(&["run", "--backend", "cpu", "--iters", "1", "--warmup", "0"]);
    run.assert_code(0);
    assert!(run.stdout.contains("golden-inputs"), "{}", run.all());
    let report = read_json(&p.path("reports/tiny/run-cpu-iters1-warmup0.json"));
    for b in report["boundaries"].as_array().unwrap() {
        let forced = b["golden_inputs"]["rel_l2_err"].as_f64();
        assert!(
            forced.is_some(),
            "{} has no golden-inputs figure",
            b["name"]
        );
        if let Some(share) = b["introduced"].as_f64() {
            assert!((0.0..=1.0).contains(&share), "{}: {share}", b["name"]);
        }
    }
    // The scatter is host arithmetic: fed the golden image embeddings it is exact, so all of
    // its error is inherited from vision.
    let scatter = report["boundaries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "scatter/hidden_states")
        .unwrap();
    assert!(scatter["introduced"].as_f64().unwrap() < 0.01, "{scatter}");
    let md = std::fs::read_to_string(p.path("reports/tiny/run-cpu-iters1-warmup0.md")).unwrap();
    assert!(
        md.contains("## Introduced vs inherited error")
            && md.contains("| rel L2 (chain inputs) | rel L2 (golden inputs) | introduced |"),
        "{md}"
    );
    // Loads of the golden-inputs pass are not counted with the chain's.
    assert_eq!(
        report["load_ms"]["vision"].as_array().unwrap().len(),
        1,
        "{report}"
    );
}
