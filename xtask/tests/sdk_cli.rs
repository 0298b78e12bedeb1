//! `build-ctx --toolchain sdk` with the QAIRT SDK test double
//! (`tests/fixtures/qairt-sdk-test-double`): the full build, the exact commands and configs for
//! the real recipes, and every failure path leaving the previous artifacts untouched.

mod common;

use std::path::{Path, PathBuf};

use common::{Run, Scratch, read_json, repo_root, sha256_hex};

fn double_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qairt-sdk-test-double")
}

fn run_sdk(p: &Scratch, sdk_root: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = p.command(args);
    cmd.env(
        "PATH",
        common::path_with(&sdk_root.join("bin/x86_64-linux-clang")),
    )
    .env("QAIRT_SDK_ROOT", sdk_root)
    .env(
        "QAIRT_DOUBLE_BIN",
        env!("CARGO_BIN_EXE_qairt-sdk-test-double"),
    );
    cmd.env_remove("QAIRT_DOUBLE_FAIL")
        .env_remove("XTASK_SDK_TIMEOUT_SECS");
    for (k, v) in env {
        cmd.env(k, v);
    }
    Run::from(cmd.output().unwrap())
}

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
    // The HTP run through the SDK's qnn-net-run --retrieve_context, profiled.
    let htp = run_sdk(
        &p,
        &double_root(),
        &[
            "parity",
            "--backend",
            "htp",
            "--toolchain",
            "sdk",
            "--only",
            "action_context,action_step",
        ],
        &[],
    );
    htp.assert_code(0);
    let report = read_json(&p.path("reports/tiny/parity-htp.json"));
    for c in report["components"].as_array().unwrap() {
        assert!(
            c["run_seconds"].as_f64().unwrap() > 0.0,
            "the profiled execute time is reported: {c}"
        );
        assert!(c["outputs"][0]["metrics"]["cosine"].as_f64().unwrap() >= 0.999);
    }
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

#[test]
fn a_failing_a_hanging_and_a_silent_tool_are_clear_errors_and_keep_the_previous_artifacts() {
    let p = Scratch::tiny();
    let only = [
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "action_context",
        "--toolchain",
        "sdk",
        "--force",
    ];
    run_sdk(&p, &double_root(), &only, &[]).assert_code(0);
    let bin = p.path("ctx/tiny/action_context_socid77_archv73.bin");
    let dlc = p.path("ctx/tiny/action_context.dlc");
    let bin_before = sha256_hex(&bin);

    let failed = run_sdk(
        &p,
        &double_root(),
        &only,
        &[("QAIRT_DOUBLE_FAIL", "qnn-context-binary-generator:exit1")],
    );
    failed.assert_code(1);
    assert!(
        failed
            .stdout
            .contains("qnn-context-binary-generator --backend")
            && failed.stdout.contains("exit status: 1")
            && failed.stdout.contains("simulated failure"),
        "{}",
        failed.all()
    );

    let hung = run_sdk(
        &p,
        &double_root(),
        &only,
        &[
            ("QAIRT_DOUBLE_FAIL", "qnn-net-run:hang"),
            ("XTASK_SDK_TIMEOUT_SECS", "3"),
        ],
    );
    hung.assert_code(1);
    assert!(
        hung.stdout
            .contains("did not finish within 3 s and was stopped"),
        "{}",
        hung.all()
    );

    // (convert succeeded in the runs above and rightly replaced the DLC with a complete one)
    let dlc_before = sha256_hex(&dlc);
    let silent = run_sdk(
        &p,
        &double_root(),
        &only,
        &[("QAIRT_DOUBLE_FAIL", "qairt-converter:no-output")],
    );
    silent.assert_code(1);
    assert!(
        silent
            .stdout
            .contains("qairt-converter exited 0 but wrote no"),
        "{}",
        silent.all()
    );

    assert_eq!(
        sha256_hex(&bin),
        bin_before,
        "the previous binary is untouched"
    );
    assert_eq!(
        sha256_hex(&dlc),
        dlc_before,
        "the DLC is untouched by the converter that wrote nothing"
    );
}

#[test]
fn an_sdk_of_another_version_is_refused_unless_allowed_and_a_missing_sdk_is_explained() {
    let p = Scratch::tiny();
    let other = p.path("sdk-2.46");
    common::copy_tree(&double_root(), &other);
    std::fs::write(other.join("sdk.yaml"), "version: 2.46.0.1\n").unwrap();
    for tool in std::fs::read_dir(other.join("bin/x86_64-linux-clang"))
        .unwrap()
        .flatten()
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tool.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let run = run_sdk(
        &p,
        &other,
        &[
            "build-ctx",
            "--soc",
            "77",
            "--only",
            "action_context",
            "--toolchain",
            "sdk",
        ],
        &[],
    );
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("is 2.46.0.1, the recipe asks for 2.47.0; pass --allow-sdk-version"),
        "{}",
        run.all()
    );
    run_sdk(
        &p,
        &other,
        &[
            "build-ctx",
            "--soc",
            "77",
            "--only",
            "action_context",
            "--toolchain",
            "sdk",
            "--allow-sdk-version",
        ],
        &[],
    )
    .assert_code(0);
    let none = p
        .command(&["build-ctx", "--toolchain", "sdk"])
        .env_remove("QAIRT_SDK_ROOT")
        .env_remove("QNN_SDK_ROOT")
        .output()
        .unwrap();
    let none = Run::from(none);
    none.assert_code(2);
    assert!(none.stderr.contains("set QAIRT_SDK_ROOT"), "{}", none.all());
}
