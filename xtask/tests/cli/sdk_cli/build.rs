//! The full build with the SDK double: every artifact and report of the tiny model, the
//! binaries loading in the embedded runtime, the profiled HTP run through `qnn-net-run`, a
//! no-op rebuild; and the dry run's exact commands and configs for the real recipes.

use crate::common::{Run, Scratch, double_root, read_json, repo_root, run_sdk};

#[test]
fn build_ctx_with_the_sdk_toolchain_gives_the_same_artifacts_and_reports() {
    let p = Scratch::tiny();
    let run = run_sdk(
        &p,
        &double_root(),
        &[
            "build-ctx",
            "--soc",
            "77",
            "--model",
            "tiny",
            "--toolchain",
            "sdk",
        ],
        &[],
    );
    run.assert_code(0);
    for c in [
        "vision",
        "llm_split0",
        "llm_split1",
        "llm_split2",
        "llm_split3",
        "action_context",
        "action_step",
    ] {
        for f in [
            format!("{c}.dlc"),
            format!("{c}_socid77_archv73.bin"),
            format!("{c}_socid77_archv73_ctx.onnx"),
        ] {
            assert!(p.path(&format!("ctx/tiny/{f}")).is_file(), "missing {f}");
        }
        assert!(
            p.path(&format!("reports/tiny/logs/{c}-context.log"))
                .is_file()
        );
    }
    let report = read_json(&p.path("reports/tiny/build-soc77.json"));
    assert_eq!(report["pass"], true);
    // The double's binary holds the embedded runtime's real QNN bytes, whose graph name it
    // cannot change (its header says so): the report states the name is not the recipe's.
    let named = &report["components"][0]["steps"][2]["detail"]["graph_name_honoured"];
    assert_eq!(named["recipe"], "vision", "{named}");
    assert!(
        named["why"].as_str().unwrap().contains("not `vision`"),
        "{named}"
    );
    let cpu =
        &report["components"][0]["steps"][1]["detail"]["result"]["outputs"][0]["metrics"]["cosine"];
    assert!(cpu.as_f64().unwrap() >= 0.9999, "{cpu}");
    let record = read_json(&p.path("ctx/tiny/vision.record.json"));
    assert_eq!(
        record["steps"]["convert"]["key"]["parts"]["toolchain"],
        "qairt-sdk 2.47.0.260601114230"
    );
    // The SDK-built binaries load in the embedded runtime through the generated wrappers.
    p.run(&["parity", "--backend", "htp"]).assert_code(0);
    the_htp_run_through_net_run_is_profiled(&p);
    // A no-op with the same toolchain runs nothing.
    let again = run_sdk(
        &p,
        &double_root(),
        &["build-ctx", "--soc", "77", "--toolchain", "sdk"],
        &[],
    );
    assert!(
        again.stdout.contains("0 step(s) ran, 21 fresh"),
        "{}",
        again.all()
    );
}

/// The HTP run through the SDK's qnn-net-run --retrieve_context, profiled.
fn the_htp_run_through_net_run_is_profiled(p: &Scratch) {
    let htp = run_sdk(
        p,
        &double_root(),
        &[
            "parity",
            "--backend",
            "htp",
            "--toolchain",
            "sdk",
            "--only",
            "action_context,action_step",
            "--iters",
            "3",
        ],
        &[],
    );
    htp.assert_code(0);
    let report = read_json(&p.path("reports/tiny/parity-htp.json"));
    // The report also keeps the earlier run's other components (merged per component).
    for c in
        report["components"].as_array().unwrap().iter().filter(|c| {
            ["action_context", "action_step"].contains(&c["component"].as_str().unwrap())
        })
    {
        assert!(
            c["run_seconds"].as_f64().unwrap() > 0.0,
            "the profiled execute time is reported: {c}"
        );
        // Three inferences in one qnn-net-run call: their NETRUN execute times' distribution.
        let l = &c["latency"];
        assert_eq!(l["timing_source"], "NETRUN", "{c}");
        assert_eq!(l["samples"], 3, "{c}");
        let (min, p50, max) = (
            l["min_us"].as_f64().unwrap(),
            l["p50_us"].as_f64().unwrap(),
            l["max_us"].as_f64().unwrap(),
        );
        assert!(0.0 < min && min <= p50 && p50 <= max && max < 60e6, "{l}");
        assert!((c["run_seconds"].as_f64().unwrap() - p50 / 1e6).abs() < 1e-9);
        assert!(c["outputs"][0]["metrics"]["cosine"].as_f64().unwrap() >= 0.999);
    }
}

#[test]
fn the_dry_run_prints_the_exact_commands_and_configs_of_the_real_recipes() {
    let p = Scratch::tiny();
    let out = p
        .command(&[
            "build-ctx",
            "--soc",
            "77",
            "--model",
            "molmoact2-libero-lp-vtp-sd",
            "--toolchain",
            "sdk",
            "--dry-run",
        ])
        .env_remove("QAIRT_SDK_ROOT")
        .env_remove("QNN_SDK_ROOT")
        .output()
        .unwrap();
    let run = Run::from(out);
    run.assert_code(0);
    let printed: String = run
        .stdout
        .split_once("QAIRT SDK")
        .map(|(_, rest)| format!("QAIRT SDK{rest}"))
        .unwrap_or_default();
    let expected_path =
        repo_root().join("xtask/tests/expected/sdk-commands-molmoact2-libero-lp-vtp-sd.txt");
    if std::env::var_os("XTASK_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&expected_path, &printed).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&expected_path).unwrap();
    assert_eq!(
        printed, expected,
        "the SDK commands changed; if intended, regenerate the expected file with XTASK_BLESS=1 cargo test"
    );
}
