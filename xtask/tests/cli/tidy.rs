//! Style, checked by the test command itself (so `cargo test --release`, the README's one test
//! line and what CI runs, also proves the code is formatted and lint-clean): `cargo fmt
//! --check` and `cargo clippy --all-targets -D warnings` on the workspace. Both tools ship in
//! rustup's default profile; when one is missing the test fails and says how to add it,
//! rather than passing without having looked.

use std::process::Command;

use super::common::repo_root;

fn cargo(args: &[&str]) -> std::process::Output {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("cargo runs")
}

fn require(tool: &str) {
    let out = cargo(&[tool, "--version"]);
    assert!(
        out.status.success(),
        "`cargo {tool}` is not installed: `rustup component add {}` adds it",
        if tool == "fmt" { "rustfmt" } else { tool }
    );
}

#[test]
fn the_workspace_is_formatted() {
    require("fmt");
    let out = cargo(&["fmt", "--all", "--", "--check"]);
    assert!(
        out.status.success(),
        "`cargo fmt --all` would change these files (run it):\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn clippy_finds_nothing() {
    require("clippy");
    // The same profile as the tests' own build, so its dependencies are checked once.
    let out = cargo(&[
        "clippy",
        "--release",
        "--workspace",
        "--all-targets",
        "--quiet",
        "--",
        "-D",
        "warnings",
    ]);
    assert!(
        out.status.success(),
        "clippy found these (fix them, or run `cargo clippy --release --all-targets`):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `.ci/run` and the scripts that fetch the tests' own tools pass shellcheck (the pinned one).
#[test]
fn the_ci_and_test_tool_scripts_pass_shellcheck() {
    let root = repo_root();
    let mut scripts = vec![root.join(".ci/run")];
    for entry in std::fs::read_dir(root.join("xtask/tests/tools")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "sh") {
            scripts.push(path);
        }
    }
    assert!(scripts.len() >= 3, "{scripts:?}");
    let out = Command::new(super::common::shellcheck())
        .args(["--shell=bash", "--format=gcc"])
        .args(&scripts)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "shellcheck:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
