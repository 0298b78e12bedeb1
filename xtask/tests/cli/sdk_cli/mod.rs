//! `build-ctx --toolchain sdk` with the QAIRT SDK test double (`test-doubles/qairt-sdk-root`,
//! built from `test-doubles/qairt_sdk`): the full build, the exact commands and configs for the
//! real recipes, and every failure path leaving the previous artifacts untouched.
//!
//! This module holds what the files below share: one tool of the double run directly, a
//! conversion to a DLC, and the SDK path's CPU parity of one component.

mod build;
mod environment;
mod failures;
mod odd_io;
mod parity;
mod raw_io;

use crate::common::{Run, Scratch, double_root, read_json, run_sdk};

/// One tool of the double run directly from the scratch project's root, in the environment the
/// SDK's `bin/envsetup.sh` sets (as a user who sourced it).
fn tool(p: &Scratch, name: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let root = double_root();
    let mut cmd = std::process::Command::new(root.join("bin/x86_64-linux-clang").join(name));
    cmd.args(args)
        .current_dir(p.dir.path())
        .env("QAIRT_DOUBLE_BIN", crate::common::sdk_double_bin())
        .env("PYTHONPATH", root.join("lib/python"))
        .env("QAIRT_SDK_ROOT", &root)
        .env("LD_LIBRARY_PATH", root.join("lib/x86_64-linux-clang"))
        .env_remove("QAIRT_DOUBLE_FAIL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    Run::from(cmd.output().unwrap())
}

fn convert_to(p: &Scratch, onnx: &str, dlc: &str, bitwidth: &str) {
    tool(
        p,
        "qairt-converter",
        &[
            "--input_network",
            onnx,
            "--output_path",
            dlc,
            "--float_bitwidth",
            bitwidth,
            "--preserve_io_datatype",
        ],
        &[],
    )
    .assert_code(0);
}

/// (cosine, max abs error) of every output of a component's `parity --backend cpu --toolchain sdk`.
fn sdk_cpu_parity(p: &Scratch, comp: &str, code: i32) -> Vec<(f64, f64)> {
    std::fs::create_dir_all(p.path("ctx/tiny")).unwrap();
    run_sdk(
        p,
        &double_root(),
        &[
            "parity",
            "--backend",
            "cpu",
            "--toolchain",
            "sdk",
            "--only",
            comp,
        ],
        &[],
    )
    .assert_code(code);
    let report = read_json(&p.path("reports/tiny/parity-cpu.json"));
    let c = &report["components"][0];
    assert_eq!(c["session_model"], format!("ctx/tiny/{comp}.dlc"), "{c}");
    c["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["metrics"]["cosine"].as_f64().unwrap(),
                o["metrics"]["max_abs_err"].as_f64().unwrap(),
            )
        })
        .collect()
}
