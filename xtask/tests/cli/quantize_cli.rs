//! Quantized components (`[quantize]` in a recipe): a w8a16 `action_step` builds through the
//! quantize step, is smaller than its fp16 binary, passes the HTP against the *float* golden,
//! and the card says so; a precision outside the four is refused; a calibration change re-runs
//! quantize and what follows and nothing else; the quantize step restores from the cache; the
//! precision search proposes a configuration, writes its reports and `--apply` edits the recipes.

use std::path::Path;

use crate::common::{Scratch, add_quantize_table, double_root, link_quantizer, read_json, run_sdk};

fn bin_bytes(p: &Scratch, component: &str) -> u64 {
    std::fs::metadata(p.path(&format!("ctx/tiny/{component}_socid77_archv73.bin")))
        .unwrap()
        .len()
}

/// (component, step, status) of the last build report.
fn statuses(p: &Scratch) -> Vec<(String, String, String)> {
    let report = read_json(&p.path("reports/tiny/build-soc77.json"));
    let mut out = Vec::new();
    for c in report["components"].as_array().unwrap() {
        for s in c["steps"].as_array().unwrap() {
            out.push((
                c["component"].as_str().unwrap().into(),
                s["step"].as_str().unwrap().into(),
                s["status"].as_str().unwrap().into(),
            ));
        }
    }
    out
}

fn status_of(p: &Scratch, component: &str, step: &str) -> String {
    statuses(p)
        .into_iter()
        .find(|(c, s, _)| c == component && s == step)
        .unwrap_or_else(|| panic!("no {component} {step} in {:?}", statuses(p)))
        .2
}

#[test]
fn a_w8a16_component_is_smaller_passes_the_htp_against_the_float_golden_and_says_so() {
    let p = Scratch::tiny();
    link_quantizer(&p);
    let build = |only: &str| p.run(&["build-ctx", "--soc", "77", "--only", only, "--jobs", "1"]);
    build("action_step,action_context").assert_code(0);
    let float_bytes = bin_bytes(&p, "action_step");

    add_quantize_table(&p, "action_step", "precision = \"w8a16\"");
    let q = build("action_step,action_context");
    q.assert_code(0);
    assert!(
        q.stdout
            .contains("action_step is w8a16 (calibration sha256:"),
        "{}",
        q.all()
    );
    assert_eq!(status_of(&p, "action_step", "quantize"), "ran");
    // The quantizer's Python is a child process: its own peak is reported beside the tool's.
    let report = read_json(&p.path("reports/tiny/build-soc77.json"));
    let quantize_step = report["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["component"] == "action_step")
        .and_then(|c| {
            c["steps"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["step"] == "quantize")
        })
        .unwrap();
    let child_mb = quantize_step["detail"]["child_peak_rss_mb"].as_f64();
    assert!(child_mb.is_some_and(|mb| mb > 50.0), "{quantize_step}");
    for step in ["convert", "cpu parity", "context binary"] {
        assert_eq!(status_of(&p, "action_context", step), "fresh", "{step}");
    }
    let quant_bytes = bin_bytes(&p, "action_step");
    assert!(
        quant_bytes < float_bytes,
        "w8a16 {quant_bytes} B is not smaller than fp16 {float_bytes} B"
    );

    // The HTP stage: the quantized binary against the float golden, labelled with its precision.
    let htp = p.run(&["parity", "--backend", "htp", "--only", "action_step"]);
    htp.assert_code(0);
    assert!(
        htp.stdout.contains("w8a16 vs the float golden"),
        "{}",
        htp.all()
    );
    let r = read_json(&p.path("reports/tiny/parity-htp.json"));
    let c = r["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["component"] == "action_step")
        .unwrap();
    assert_eq!(c["precision"], "w8a16", "{c}");
    assert_eq!(c["pass"], true, "{c}");
    let golden = crate::common::sha256_hex(&p.path("golden/tiny/action_step_io.npz"));
    assert_eq!(
        c["golden_sha256"],
        golden.as_str(),
        "the float golden, unchanged"
    );

    // The CPU stage is the QDQ simulation (QNN's CPU backend cannot run QDQ graphs).
    let cpu = p.run(&["parity", "--backend", "cpu", "--only", "action_step"]);
    cpu.assert_code(0);
    assert!(
        cpu.stdout.contains("QDQ simulation (ORT CPU EP)"),
        "{}",
        cpu.all()
    );

    // The card says which context is quantized, with its calibration set.
    p.package("bundle", "action_step,action_context", &[])
        .assert_code(0);
    let card = std::fs::read_to_string(p.path("bundle/README.md")).unwrap();
    assert!(card.contains("action_step w8a16"), "{card}");
    assert!(
        card.contains("| `action_step` | embedded | w8a16 (see Quantized contexts) |"),
        "{card}"
    );
    // Its precision, CPU stage, calibration and gate, and never "QNN CPU" for its QDQ stage.
    let row = card
        .lines()
        .find(|l| l.starts_with("| `action_step` | w8a16 | QDQ simulation (ORT CPU EP) | trace |"))
        .expect(&card);
    assert!(row.contains("0.999, 0.02 (the w8a16 default"), "{row}");
    let cpu_row = card
        .lines()
        .find(|l| l.starts_with("| `action_step` | QDQ simulation"))
        .expect(&card);
    assert!(!cpu_row.contains("QNN CPU"), "{cpu_row}");
    assert!(card.contains("## Verdict: UNMEASURED"), "{card}");
    let info = read_json(&p.path("bundle/reports/bundle.json"));
    let comp = info["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "action_step")
        .unwrap();
    assert_eq!(comp["quantized"]["precision"], "w8a16", "{comp}");

    // A context-only change re-runs the context step alone; a calibration change re-runs
    // quantize and every step after it, and nothing of the other component.
    let recipe = p.path("recipes/tiny/action_step.toml");
    let text = std::fs::read_to_string(&recipe).unwrap();
    std::fs::write(
        &recipe,
        text.replace("optimization_level = 3", "optimization_level = 2"),
    )
    .unwrap();
    build("action_step,action_context").assert_code(0);
    assert_eq!(status_of(&p, "action_step", "quantize"), "fresh");
    assert_eq!(status_of(&p, "action_step", "convert"), "fresh");
    assert_eq!(status_of(&p, "action_step", "context binary"), "ran");
    let text = std::fs::read_to_string(&recipe).unwrap();
    std::fs::write(
        &recipe,
        text.replace(
            "precision = \"w8a16\"",
            "precision = \"w8a16\"\ncalibration = \"golden\"",
        ),
    )
    .unwrap();
    build("action_step,action_context").assert_code(0);
    for step in ["quantize", "convert", "cpu parity", "context binary"] {
        assert_eq!(status_of(&p, "action_step", step), "ran", "{step}");
    }
    for step in ["convert", "cpu parity", "context binary"] {
        assert_eq!(status_of(&p, "action_context", step), "fresh", "{step}");
    }
}

#[test]
fn a_precision_outside_the_four_is_refused_with_its_line_before_anything_runs() {
    let p = Scratch::tiny();
    add_quantize_table(&p, "action_step", "precision = \"w4a3\"");
    let out = p.run(&["build-ctx", "--soc", "77", "--only", "action_step"]);
    out.assert_refused(
        2,
        "\"w4a3\" is not a precision: one of fp16, w8a16, w8a8, w4a16",
    );
    assert!(
        out.stderr.contains("recipes/tiny/action_step.toml:"),
        "{}",
        out.all()
    );
    assert!(!p.path("ctx/tiny").exists(), "nothing ran");
    // What a toolchain cannot express is refused before anything runs: the SDK's quantizer
    // has no way to keep `exclude`d operators in float.
    let recipe = p.path("recipes/tiny/action_step.toml");
    let text = std::fs::read_to_string(&recipe).unwrap();
    let text = text.replace("\"w4a3\"", "\"w8a16\"\nexclude = [\"MatMul\"]");
    std::fs::write(&recipe, text).unwrap();
    let sdk = p.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "action_step",
        "--toolchain",
        "sdk",
    ]);
    sdk.assert_refused(
        2,
        "--toolchain sdk cannot build action_step: `exclude` keeps operators in float",
    );
    assert!(!p.path("ctx/tiny").exists(), "nothing ran");
}

#[test]
fn a_quantized_component_on_the_sdk_toolchain_runs_the_double_with_the_quantizer_flags() {
    let p = Scratch::tiny();
    link_quantizer(&p);
    add_quantize_table(&p, "action_step", "precision = \"w8a16\"");
    let sdk = |args: &[&str]| {
        let mut all = vec!["build-ctx", "--soc", "77", "--only", "action_step"];
        all.extend_from_slice(args);
        all.extend(["--toolchain", "sdk"]);
        run_sdk(&p, &double_root(), &all, &[])
    };
    let plan = sdk(&["--dry-run"]);
    plan.assert_code(0);
    for wanted in [
        "--output_path STAGING/action_step.float.dlc",
        "--quantization_overrides ctx/tiny/action_step.encodings.json",
        "qairt-quantizer --input_dlc STAGING/action_step.float.dlc --output_dlc STAGING/action_step.dlc --input_list STAGING/calibration/input_list.txt --weights_bitwidth 8 --act_bitwidth 16 --bias_bitwidth 32 --act_quantizer_calibration min-max --preserve_io_datatype --use_per_channel_quantization",
    ] {
        assert!(plan.stdout.contains(wanted), "{wanted}\n{}", plan.all());
    }
    let build = sdk(&["--jobs", "1"]);
    build.assert_code(0);
    assert!(
        build.stdout.contains("action_step is w8a16"),
        "{}",
        build.all()
    );
    // The double's quantizer saw the calibration set and the bit widths (its log).
    let log =
        std::fs::read_to_string(p.path("reports/tiny/logs/action_step-quantize-dlc.log")).unwrap();
    assert!(
        log.contains("weights 8-bit, activations 16-bit, per channel")
            && !log.contains(" 0 activation override(s)"),
        "{log}"
    );
    // The SDK's quantized binary, loaded by the embedded runtime, against the float golden.
    let htp = p.run(&["parity", "--backend", "htp", "--only", "action_step"]);
    htp.assert_code(0);
    let report = read_json(&p.path("reports/tiny/parity-htp.json"));
    let c = &report["components"][0];
    assert_eq!(c["precision"], "w8a16", "{c}");
    let cosine = c["outputs"][0]["metrics"]["cosine"].as_f64().unwrap();
    assert!((0.999..1.0).contains(&cosine), "{cosine}");
}

#[test]
fn the_quantize_step_restores_from_the_cache_in_another_copy() {
    let cache = tempfile::tempdir().unwrap();
    let cache_arg = cache.path().to_str().unwrap().to_string();
    let build = |p: &Scratch| {
        p.run(&[
            "build-ctx",
            "--soc",
            "77",
            "--only",
            "action_step",
            "--cache",
            &cache_arg,
        ])
    };
    let first = Scratch::tiny();
    link_quantizer(&first);
    add_quantize_table(&first, "action_step", "precision = \"w8a16\"");
    build(&first).assert_code(0);
    let second = Scratch::tiny();
    add_quantize_table(&second, "action_step", "precision = \"w8a16\"");
    // No quantizer environment here at all: the step is restored, never run.
    build(&second).assert_code(0);
    assert_eq!(status_of(&second, "action_step", "quantize"), "restored");
    assert!(!second.path("target/quant-venv").exists());
    let bytes = |p: &Scratch| std::fs::read(p.path("ctx/tiny/action_step.qdq.onnx")).unwrap();
    assert_eq!(bytes(&first), bytes(&second));
    assert_eq!(
        bin_bytes(&first, "action_step"),
        bin_bytes(&second, "action_step")
    );
}

/// Building action_step in the w8a16 variant names its own precision line, not again
/// llm_split3's, built before it in the same variant.
fn each_precision_line_once(out: &crate::common::Run) {
    for c in ["llm_split3", "action_step"] {
        let line = format!("  {c} is w8a16 (calibration");
        let n = out.stdout.matches(&line).count();
        assert_eq!(n, 1, "{line}\n{}", out.all());
    }
}

#[test]
fn the_precision_search_proposes_writes_its_reports_and_applies() {
    let p = Scratch::tiny();
    link_quantizer(&p);
    let out = p.run(&[
        "precision",
        "--budget",
        "1e-2",
        "--only",
        "llm_split3,action_step",
        "--precisions",
        "w8a16",
        "--apply",
    ]);
    out.assert_code(0);
    let r = read_json(&p.path("reports/tiny/precision.json"));
    assert_eq!(r["complete"], true);
    assert_eq!(r["status"], "complete");
    assert!(r["htp_confirmation"].is_null(), "on the HTP already");
    each_precision_line_once(&out);
    let tried = r["tried"].as_array().unwrap();
    // The baseline, then each component alone: at least three chains measured.
    assert!(tried.len() >= 3, "{r}");
    assert_eq!(tried[0]["why"], "baseline: every component fp16");
    for t in tried.iter().filter(|t| t["error"].is_null()) {
        let err = t["actions_max_abs"].as_f64().unwrap();
        assert!(err.is_finite() && err >= 0.0, "{t}");
        assert_eq!(t["within_budget"], err <= 1e-2, "{t}");
    }
    let proposal = r["proposal"].as_object().unwrap();
    let i = r["proposal_index"].as_u64().unwrap() as usize;
    assert!(tried[i]["actions_max_abs"].as_f64().unwrap() <= 1e-2);
    assert!(tried[i]["bytes"].as_u64().unwrap() <= tried[0]["bytes"].as_u64().unwrap());
    assert!(!r["frontier"].as_array().unwrap().is_empty());
    let html = std::fs::read_to_string(p.path("reports/tiny/precision.html")).unwrap();
    assert!(html.contains("<svg"), "the frontier is drawn");
    assert!(p.path("reports/tiny/precision.md").is_file());
    assert!(out.stdout.contains("--apply: "), "{}", out.all());
    // --apply wrote the proposal; the next build quantizes exactly those components.
    for (component, precision) in proposal {
        let recipe =
            std::fs::read_to_string(p.path(&format!("recipes/tiny/{component}.toml"))).unwrap();
        if precision.as_str() != Some("fp16") {
            assert!(
                recipe.contains(&format!("precision = {precision}")),
                "{recipe}"
            );
        }
    }
    let quantized: Vec<&String> = proposal
        .iter()
        .filter(|(_, p)| p.as_str() != Some("fp16"))
        .map(|(c, _)| c)
        .collect();
    p.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "llm_split3,action_step",
    ])
    .assert_code(0);
    for c in ["llm_split3", "action_step"] {
        let has_quantize = statuses(&p)
            .iter()
            .any(|(comp, s, _)| comp == c && s == "quantize");
        assert_eq!(has_quantize, quantized.iter().any(|q| *q == c), "{c}");
    }
    assert!(
        Path::new(&p.path("ctx/tiny.w8a16")).is_dir(),
        "the variants live apart"
    );
}
