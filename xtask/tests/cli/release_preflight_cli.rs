//! What a user learns before publishing: `verify` ends with the next command (a release dry
//! run), and `release --dry-run` checks what a real release would stop at (`hf` on PATH and
//! logged in, through the `hf` test double, as strict as huggingface_hub's CLI) and says what
//! `--delete "*"` removes, uploading nothing.

use std::path::Path;
use std::process::Command;

use crate::common::{Run, Scratch, path_with, repo_root};

/// A tiny bundle of one component (`action_context`: the fastest to build and load).
fn bundle() -> Scratch {
    let s = Scratch::tiny();
    let only = ["--only", "action_context"];
    s.run(&["build-ctx", "--soc", "77", only[0], only[1]])
        .assert_code(0);
    s.package("dist/tiny", "action_context", &[]).assert_code(0);
    s
}

/// `release --dry-run` with a PATH of `path` and, when `token`, a Hugging Face token.
fn dry_run(s: &Scratch, path: &str, token: bool) -> Run {
    let mut cmd: Command = s.command(&[
        "release",
        "--repo",
        "someone/tiny",
        "--bundle",
        s.path("dist/tiny").to_str().unwrap(),
        "--dry-run",
    ]);
    cmd.env("PATH", path)
        .env("HF_TEST_DOUBLE_LOG", s.path("hf.log"))
        .env("HF_TEST_DOUBLE_STORE", s.path("hf-store"))
        .env_remove("HF_TEST_DOUBLE_FAIL");
    if token {
        cmd.env("HF_TOKEN", "test-token");
    } else {
        cmd.env_remove("HF_TOKEN");
    }
    Run::from(cmd.output().unwrap())
}

fn hf_calls(s: &Scratch) -> String {
    std::fs::read_to_string(s.path("hf.log")).unwrap_or_default()
}

#[test]
fn verify_prints_the_release_dry_run_as_the_next_step() {
    let s = bundle();
    let dir = s.path("dist/tiny");
    let verify = s.run(&["verify", dir.to_str().unwrap()]);
    verify.assert_code(0);
    let next = format!(
        "next: cargo xtask release --repo OWNER/NAME --bundle {} --dry-run",
        dir.display()
    );
    assert!(verify.stdout.contains(&next), "{}", verify.all());
}

#[test]
fn a_release_dry_run_checks_hf_and_the_login_and_says_what_delete_removes() {
    let s = bundle();
    let with_hf = path_with(&repo_root().join("test-doubles/hf"));

    let ready = dry_run(&s, &with_hf, true);
    ready.assert_code(0);
    for said in [
        "hf: huggingface_hub 2.4.0",
        "hf login: test-user",
        "--delete \"*\": the uploaded revision's tree becomes the bundle's",
        "every file of someone/tiny (branch main) that is not in the bundle is deleted",
        "dry run: nothing was uploaded; `hf` is ready",
    ] {
        assert!(
            ready.stdout.contains(said),
            "{said:?} not in {}",
            ready.all()
        );
    }

    let logged_out = dry_run(&s, &with_hf, false);
    logged_out.assert_refused(
        2,
        "not logged in to Hugging Face: set HF_TOKEN or run `hf auth login`",
    );
    assert!(
        logged_out.stderr.contains("a release would stop here"),
        "{}",
        logged_out.all()
    );
    assert!(
        logged_out
            .stdout
            .contains("ctx/action_context_socid77_archv73.bin"),
        "the plan is still listed"
    );

    // No `hf` anywhere on PATH: said with how to install it.
    let bare = Path::new("/usr/bin:/bin").to_str().unwrap();
    dry_run(&s, bare, true).assert_refused(2, "`hf` is not on PATH: install it with");

    let calls = hf_calls(&s);
    assert!(calls.contains("auth whoami"), "{calls}");
    for verb in ["upload", "repos create", "discussions"] {
        assert!(!calls.contains(verb), "a dry run ran `hf {verb}`: {calls}");
    }
}
