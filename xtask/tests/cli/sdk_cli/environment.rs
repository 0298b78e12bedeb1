//! The SDK's environment: a QAIRT version other than the recipe's is refused unless allowed, a
//! missing SDK is explained, and the converter's `envsetup.sh` variables are set by the tool
//! from `QAIRT_SDK_ROOT` alone (and recorded, and checked by `doctor`).

use crate::common::{self, Run, Scratch, double_root, run_sdk};

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

#[test]
fn the_converter_needs_the_sdk_environment_and_the_tool_provides_it() {
    let p = Scratch::tiny();
    std::fs::create_dir_all(p.path("ctx/tiny")).unwrap();
    let convert = [
        "--input_network",
        "onnx/tiny/action_context.onnx",
        "--output_path",
        "ctx/tiny/action_context.dlc",
        "--float_bitwidth",
        "32",
    ];
    // Without envsetup.sh's variables the real converter cannot import qti.aisw (exit 1).
    for unset in ["PYTHONPATH", "LD_LIBRARY_PATH", "QAIRT_SDK_ROOT"] {
        let mut cmd = std::process::Command::new(
            double_root().join("bin/x86_64-linux-clang/qairt-converter"),
        );
        cmd.args(convert)
            .current_dir(p.dir.path())
            .env("QAIRT_DOUBLE_BIN", crate::common::sdk_double_bin())
            .env("PYTHONPATH", double_root().join("lib/python"))
            .env("QAIRT_SDK_ROOT", double_root())
            .env(
                "LD_LIBRARY_PATH",
                double_root().join("lib/x86_64-linux-clang"),
            )
            .env_remove(unset);
        let run = Run::from(cmd.output().unwrap());
        run.assert_code(1);
        let reason = if unset == "QAIRT_SDK_ROOT" {
            "QAIRT_SDK_ROOT is not set"
        } else {
            "Traceback"
        };
        assert!(run.stderr.contains(reason), "{unset}: {}", run.all());
        assert!(!p.path("ctx/tiny/action_context.dlc").exists());
    }
    // The tool sets them from QAIRT_SDK_ROOT alone (run_sdk clears both) and records them.
    let only = [
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "action_context",
        "--toolchain",
        "sdk",
    ];
    run_sdk(&p, &double_root(), &only, &[]).assert_code(0);
    let record =
        std::fs::read_to_string(p.path("reports/tiny/build-soc77.json")).unwrap_or_default();
    let root = double_root().canonicalize().unwrap();
    assert!(
        record.contains("sdk_env") && record.contains(&format!("{}/lib/python", root.display())),
        "{record}"
    );
    // doctor checks `qairt-converter --help` in that environment
    let doctor = run_sdk(&p, &double_root(), &["doctor", "--need", "ort"], &[]);
    assert!(
        doctor.stdout.contains("qairt-converter --help runs"),
        "{}",
        doctor.all()
    );
}
