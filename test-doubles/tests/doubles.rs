//! The doubles are as strict as the real tools on their command lines: an unknown argument is
//! refused (the QAIRT tools' argument parsers exit 2; `hf` is a Typer app, whose usage errors
//! exit 2), and a call with no tool or subcommand does nothing useful.

use std::path::Path;
use std::process::Command;

/// The double under its SDK root, in the environment `bin/envsetup.sh` sets.
fn sdk_double(args: &[&str]) -> std::process::Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("qairt-sdk-root");
    Command::new(env!("CARGO_BIN_EXE_qairt-sdk-test-double"))
        .args(args)
        .env("QAIRT_DOUBLE_SDK_ROOT", &root)
        .env("PYTHONPATH", root.join("lib/python"))
        .env("QAIRT_SDK_ROOT", &root)
        .env("LD_LIBRARY_PATH", root.join("lib/x86_64-linux-clang"))
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

#[test]
fn the_converter_without_the_sdk_environment_fails_at_its_first_import() {
    let out = Command::new(env!("CARGO_BIN_EXE_qairt-sdk-test-double"))
        .args(["qairt-converter", "--help"])
        .env_remove("PYTHONPATH")
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("No module named 'qti'"), "{err}");
    assert_eq!(
        sdk_double(&["qairt-converter", "--help"]).status.code(),
        Some(0)
    );
}

#[test]
fn hf_refuses_an_unknown_flag_of_every_verb_with_exit_2() {
    for args in [
        &["upload", "o/n", ".", "--no-such-flag"][..],
        &["download", "o/n", "--no-such-flag"],
        &["repos", "create", "o/n", "--no-such-flag"],
        &["repos", "branch", "create", "o/n", "b", "--no-such-flag"],
        &["repos", "tag", "create", "o/n", "t", "--no-such-flag"],
        &[
            "discussions",
            "create",
            "o/n",
            "--title",
            "t",
            "--no-such-flag",
        ],
        &["discussions", "merge", "o/n", "1", "--no-such-flag"],
    ] {
        let out = hf_double(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
    }
}

/// `hf upload` commits in batches, deletions in the first, later ones titled "(part N)"; a
/// pull request (a draft until it is reopened) gets every batch on `refs/pr/N` and `main` moves
/// only when it is merged.
#[test]
fn hf_uploads_in_batches_into_a_draft_pull_request_opened_then_merged_in_one_step() {
    let scratch = tempfile::tempdir().unwrap();
    let hf = |args: &[&str]| {
        Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("hf/hf"))
            .args(args)
            .env("HF_TEST_DOUBLE_LOG", scratch.path().join("calls.log"))
            .env("HF_TEST_DOUBLE_STORE", scratch.path().join("store"))
            .env("HF_TEST_DOUBLE_BATCH_FILES", "2")
            .output()
            .unwrap()
    };
    let src = scratch.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    for i in 0..5 {
        std::fs::write(src.join(format!("f{i}.txt")), format!("{i}")).unwrap();
    }
    let dir = src.to_str().unwrap();
    assert!(
        hf(&["upload", "o/n", dir, ".", "--commit-message", "m"])
            .status
            .success()
    );
    let repo = scratch.path().join("store/o/n");
    let messages = |repo: &Path| -> Vec<String> {
        let mut m: Vec<String> = std::fs::read_dir(repo.join("commits"))
            .unwrap()
            .filter_map(|e| {
                let p = e.unwrap().path();
                (p.extension()? == "message").then(|| std::fs::read_to_string(p).unwrap())
            })
            .collect();
        m.sort();
        m
    };
    assert_eq!(messages(&repo), ["m\n", "m (part 2)\n", "m (part 3)\n"]);
    let main = std::fs::read_to_string(repo.join("refs/heads/main")).unwrap();
    std::fs::remove_file(src.join("f0.txt")).unwrap();
    std::fs::write(src.join("f1.txt"), "changed").unwrap();
    let pr = hf(&[
        "discussions",
        "create",
        "o/n",
        "--title",
        "t",
        "--pull-request",
        "--format",
        "json",
    ]);
    assert!(
        String::from_utf8_lossy(&pr.stdout).contains("\"ref\": \"refs/pr/1\""),
        "{pr:?}"
    );
    let up = hf(&[
        "upload",
        "o/n",
        dir,
        ".",
        "--revision",
        "refs/pr/1",
        "--delete",
        "*",
        "--format",
        "json",
    ]);
    assert!(up.status.success(), "{up:?}");
    assert_eq!(
        std::fs::read_to_string(repo.join("refs/heads/main")).unwrap(),
        main
    );
    // A pull request made through the API is a draft: the Hub refuses to merge it, and a
    // confirmation-less call aborts as `typer.confirm` does on an empty stdin.
    let draft = hf(&["discussions", "merge", "o/n", "1", "--yes"]);
    assert_eq!(draft.status.code(), Some(1), "{draft:?}");
    assert!(
        String::from_utf8_lossy(&draft.stderr).contains("is a draft"),
        "{draft:?}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("refs/heads/main")).unwrap(),
        main
    );
    let unconfirmed = hf(&["discussions", "reopen", "o/n", "1"]);
    assert_eq!(unconfirmed.status.code(), Some(1), "{unconfirmed:?}");
    assert!(String::from_utf8_lossy(&unconfirmed.stderr).contains("Aborted!"));
    let opened = hf(&["discussions", "reopen", "o/n", "1", "--yes"]);
    assert!(
        String::from_utf8_lossy(&opened.stdout).contains("Reopened #1 in o/n"),
        "{opened:?}"
    );
    let merged = hf(&["discussions", "merge", "o/n", "1", "--yes"]);
    assert!(merged.status.success(), "{merged:?}");
    let head = std::fs::read_to_string(repo.join("refs/heads/main")).unwrap();
    let tree = repo.join("commits").join(head.trim());
    assert!(!tree.join("f0.txt").exists() && tree.join(".gitattributes").is_file());
    assert_eq!(
        std::fs::read_to_string(tree.join("f1.txt")).unwrap(),
        "changed"
    );
}

/// As click parses it: `--` ends the options, so a repository id after it that starts with
/// `-` is a positional (here: not found, exit 1), while the same value before it is an
/// unknown option (exit 2).
#[test]
fn hf_treats_everything_after_the_double_dash_as_positional() {
    let out = hf_double(&["download", "--repo-type", "model", "--", "-h/x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("Repository Not Found for url: https://huggingface.co/api/models/-h/x")
    );
    let out = hf_double(&["download", "-h/x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("No such option"));
}

/// `hf auth whoami` judges the token it is handed: none is "Not logged in" (exit 1, on stderr,
/// huggingface_hub >= 1.9), `--token T` or `--token=T` logs in like HF_TOKEN, and an option it
/// does not have is a usage error (exit 2).
#[test]
fn hf_whoami_is_logged_in_by_the_token_it_is_handed() {
    let scratch = tempfile::tempdir().unwrap();
    let whoami = |extra: &[&str]| {
        Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("hf/hf"))
            .args(["auth", "whoami"])
            .args(extra)
            .env_remove("HF_TOKEN")
            .env("HF_TEST_DOUBLE_LOG", scratch.path().join("calls.log"))
            .env("HF_TEST_DOUBLE_STORE", scratch.path().join("store"))
            .output()
            .unwrap()
    };
    let none = whoami(&[]);
    assert_eq!(none.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&none.stderr).contains("Not logged in"));
    for args in [&["--token", "hf_x"][..], &["--token=hf_x"][..]] {
        let out = whoami(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "✓ Logged in\n  user: test-user"
        );
    }
    assert_eq!(whoami(&["--bogus"]).status.code(), Some(2));
}
