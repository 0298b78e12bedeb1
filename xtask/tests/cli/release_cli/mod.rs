//! Packaging, verification, release, fetch and CI regeneration, as a user runs them; the
//! Hugging Face CLI is the test double in test-doubles/hf (it records its calls).
//!
//! This module holds what the files below share: the `hf` double's environment, the tree of a
//! revision in its store, and a packaged tiny bundle to release.

mod entries;
mod gather;
mod interrupted;
mod package_verify;
mod revisions;
mod workflow;

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Run, Scratch};

fn hf_double_dir() -> PathBuf {
    crate::common::repo_root().join("test-doubles/hf")
}

/// The `hf` test double first on `cmd`'s PATH, recording its calls in `p`'s `hf.log` and
/// keeping its Hub in `p`'s `hf-store`.
fn with_hf_double<'a>(cmd: &'a mut Command, p: &Scratch) -> &'a mut Command {
    cmd.env("PATH", common::path_with(&hf_double_dir()))
        .env("HF_TEST_DOUBLE_LOG", p.path("hf.log"))
        .env("HF_TEST_DOUBLE_STORE", p.path("hf-store"))
}

/// Runs the tool with the `hf` test double first on PATH.
fn run_with_hf(p: &Scratch, args: &[&str], token: bool, fail: Option<&str>) -> Run {
    let mut cmd = p.command(args);
    with_hf_double(&mut cmd, p);
    if token {
        cmd.env("HF_TOKEN", "test-token");
    } else {
        cmd.env_remove("HF_TOKEN");
    }
    match fail {
        Some(f) => cmd.env("HF_TEST_DOUBLE_FAIL", f),
        None => cmd.env_remove("HF_TEST_DOUBLE_FAIL"),
    };
    Run::from(cmd.output().unwrap())
}

/// The tree of `rev` (a branch or tag) of `repo` in the `hf` double's store.
fn remote_tree(store: &Path, repo: &str, rev: &str) -> PathBuf {
    let d = store.join(repo);
    let oid = ["refs/heads", "refs/tags"]
        .iter()
        .find_map(|r| std::fs::read_to_string(d.join(r).join(rev)).ok())
        .unwrap_or_else(|| panic!("no revision {rev} in {}", d.display()));
    d.join("commits").join(oid.trim())
}

/// `action_context` and `action_step` built and packaged into `dist/tiny`.
fn packaged(p: &Scratch) -> PathBuf {
    p.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "action_context,action_step",
    ])
    .assert_code(0);
    let out = p.path("dist/tiny");
    p.run(&[
        "package",
        "--allow-unmeasured",
        "--soc",
        "77",
        "--only",
        "action_context,action_step",
        "--out",
        out.to_str().unwrap(),
    ])
    .assert_code(0);
    out
}

/// `release --repo someone/tiny --bundle <bundle> <extra…>` with a token and the `hf` double
/// (no failure, no pause), ready for more environment before it runs.
fn release_cmd(p: &Scratch, bundle: &Path, extra: &[&str]) -> Command {
    let mut args = vec![
        "release",
        "--repo",
        "someone/tiny",
        "--bundle",
        bundle.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let mut cmd = p.command(&args);
    with_hf_double(&mut cmd, p)
        .env("HF_TOKEN", "t")
        .env_remove("HF_TEST_DOUBLE_FAIL")
        .env_remove("HF_TEST_DOUBLE_PAUSE_AFTER_COMMIT");
    cmd
}

/// Every file under `dir` with its bytes, sorted by path.
fn walk(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            (
                e.path().strip_prefix(dir).unwrap().display().to_string(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}
