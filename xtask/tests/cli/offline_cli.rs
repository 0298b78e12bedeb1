//! The offline tier: checks that need neither the runtime nor any network. Run them alone with
//! `XTASK_OFFLINE=1 cargo test --release --test cli -- offline_cli::` (`XTASK_OFFLINE=1` makes
//! any download attempt fail), so a broken recipe or plan is reported in seconds.

use crate::common;

use common::Scratch;

#[test]
fn the_real_models_plan_needs_no_runtime_and_parses_as_json() {
    let p = Scratch::offline();
    for model in ["tiny", "molmoact2-libero-lp-vtp-sd"] {
        let run = p.run(&[
            "build-ctx",
            "--soc",
            "77",
            "--model",
            model,
            "--dry-run",
            "--json",
        ]);
        run.assert_code(0);
        let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(doc["components"].as_array().unwrap().len(), 7, "{model}");
        let plan = p.run(&["plan", "--json", "--model", model]);
        plan.assert_code(0);
        let matrix: serde_json::Value = serde_json::from_str(&plan.stdout).unwrap();
        assert_eq!(matrix["include"].as_array().unwrap().len(), 7, "{model}");
    }
    assert!(
        !p.path("target/qnn-runtime").exists(),
        "nothing was downloaded"
    );
}

#[test]
fn recipe_errors_are_reported_without_the_runtime() {
    for (file, from, to, says) in [
        (
            "recipes/tiny/vision.toml",
            "min_cosine = 0.9999",
            "min_cosine = nan",
            "parity.min_cosine = NaN",
        ),
        (
            "recipes/tiny/model.toml",
            "components = [\"vision\",",
            "components = [\"vision\", \"vision\",",
            "lists component `vision` twice",
        ),
        (
            "recipes/tiny/vision.toml",
            "onnx = \"onnx/tiny/vision.onnx\"",
            "onnx = \"/etc/hostname\"",
            "outside the project root",
        ),
    ] {
        let p = Scratch::offline();
        let path = p.path(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{file} lacks {from}");
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
        let run = p.run(&["parity", "--backend", "ort"]);
        run.assert_code(2);
        assert!(run.stderr.contains(says), "{says}\n{}", run.all());
    }
    let p = Scratch::offline();
    let run = p.run(&["plan", "--model", "../tiny"]);
    run.assert_code(2);
    assert!(run.stderr.contains("is not a model name"), "{}", run.all());
}

#[test]
fn a_command_that_needs_the_runtime_says_so_offline() {
    let p = Scratch::offline();
    let run = p.run(&["parity", "--backend", "ort", "--only", "action_step"]);
    run.assert_code(2);
    assert!(run.stderr.contains("XTASK_OFFLINE=1"), "{}", run.all());
}
