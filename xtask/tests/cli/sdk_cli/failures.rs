//! The SDK path's failures are clear errors that keep the previous artifacts: a failing, a
//! hanging and a silent tool; a tampered, foreign or corrupted context binary.

use std::path::Path;

use super::tool;
use crate::common::{Scratch, double_root, read_json, run_sdk, sha256_hex};

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
fn a_tampered_or_foreign_context_binary_is_an_error_of_the_sdk_path() {
    let p = Scratch::tiny();
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
    let bin = p.path("ctx/tiny/action_context_socid77_archv73.bin");
    let utility = |bin: &Path| {
        tool(
            &p,
            "qnn-context-binary-utility",
            &[
                "--context_binary",
                bin.to_str().unwrap(),
                "--json_file",
                p.path("info.json").to_str().unwrap(),
            ],
            &[],
        )
    };
    utility(&bin).assert_code(0);
    let info = read_json(&p.path("info.json"));
    assert_eq!(
        info["info"]["graphs"][0]["info"]["graphInputs"][0]["info"]["dataType"],
        "QNN_DATATYPE_FLOAT_32"
    );
    // One byte changed: no longer the binary the generator wrote.
    let mut bytes = std::fs::read(&bin).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 1;
    let tampered = p.path("tampered.bin");
    std::fs::write(&tampered, &bytes).unwrap();
    let run = utility(&tampered);
    run.assert_code(1);
    assert!(run.stderr.contains("modified since"), "{}", run.all());
    // A binary the double never wrote.
    std::fs::write(p.path("foreign.bin"), b"not a context binary").unwrap();
    utility(&p.path("foreign.bin")).assert_code(1);
    // A generator that writes a corrupted binary fails the SDK context step.
    let corrupt = run_sdk(
        &p,
        &double_root(),
        &[&only[..], &["--force"]].concat(),
        &[("QAIRT_DOUBLE_FAIL", "qnn-context-binary-generator:corrupt")],
    );
    corrupt.assert_code(1);
    assert!(
        corrupt.stdout.contains("qnn-context-binary-utility")
            && corrupt.stdout.contains("modified since"),
        "{}",
        corrupt.all()
    );
}
