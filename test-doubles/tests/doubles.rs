//! The doubles are as strict as the real tools on their command lines: an unknown argument is
//! refused (the QAIRT tools' argument parsers exit 2; `hf` is a Typer app, whose usage errors
//! exit 2), and a call with no tool or subcommand does nothing useful.

use std::path::Path;
use std::process::Command;

fn sdk_double(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_qairt-sdk-test-double"))
        .args(args)
        .output()
        .unwrap()
}

fn hf_double(args: &[&str]) -> std::process::Output {
    let scratch = tempfile::tempdir().unwrap();
    Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("hf/hf"))
        .args(args)
        .env("HF_TEST_DOUBLE_LOG", scratch.path().join("calls.log"))
        .env("HF_TEST_DOUBLE_STORE", scratch.path().join("store"))
        .output()
        .unwrap()
}

#[test]
fn sdk_tools_refuse_an_unknown_argument_with_exit_2() {
    for tool in [
        "qairt-converter",
        "qnn-net-run",
        "qnn-context-binary-generator",
        "qnn-context-binary-utility",
        "qnn-profile-viewer",
    ] {
        let out = sdk_double(&[tool, "--no_such_flag"]);
        assert_eq!(out.status.code(), Some(2), "{tool}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("unrecognized argument --no_such_flag"),
            "{tool}: {err}"
        );
    }
}

#[test]
fn sdk_double_refuses_a_tool_it_does_not_stand_in_for() {
    let out = sdk_double(&["qnn-onnx-converter"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a tool this test double"));
}

#[test]
fn hf_refuses_an_unknown_subcommand_with_exit_2() {
    let out = hf_double(&["no-such-verb"]);
    assert_eq!(out.status.code(), Some(2));
}

/// As click parses it: `--` ends the options, so a repository id after it that starts with
/// `-` is a positional (here: not found, exit 1), while the same value before it is an
/// unknown option (exit 2).
#[test]
fn hf_treats_everything_after_the_double_dash_as_positional() {
    let out = hf_double(&["download", "--repo-type", "model", "--", "-h/x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("404: repository -h/x not found"));
    let out = hf_double(&["download", "-h/x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("No such option"));
}
