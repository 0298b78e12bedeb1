//! The hostile suite, part three: bundles a compromised download or a hostile folder would
//! bring (links to host files, FIFOs, `..` and absolute manifest paths, a missing manifest),
//! and repository ids and revisions that would become `hf` options. Every case: exit 2 naming
//! the path, the sentinel
//! folder untouched, the secret's bytes never inside the project, nothing about it disclosed.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, Run, copy_tree, read_json};
use crate::sandbox::Sandbox;

fn hf_double_dir() -> PathBuf {
    common::repo_root().join("test-doubles/hf")
}

/// The tool with the `hf` double first on PATH, its store and log inside the project.
pub(crate) fn with_hf(s: &Sandbox, args: &[&str]) -> Run {
    let mut cmd = s.p.command(args);
    cmd.current_dir(s.p.dir.path())
        .env("PATH", common::path_with(&hf_double_dir()))
        .env("HF_TEST_DOUBLE_LOG", s.p.path("hf.log"))
        .env("HF_TEST_DOUBLE_STORE", s.p.path("hf-store"))
        .env("HF_TOKEN", "t")
        .env_remove("HF_TEST_DOUBLE_FAIL");
    Run::from(cmd.output().unwrap())
}

/// Builds and packages `action_context` into `dist/t`; returns the bundle.
pub(crate) fn bundle(s: &Sandbox) -> PathBuf {
    s.run(
        &["build-ctx", "--soc", "77", "--only", "action_context"],
        &[],
    )
    .assert_code(0);
    s.run(
        &[
            "package",
            "--allow-unmeasured",
            "--soc",
            "77",
            "--only",
            "action_context",
            "--out",
            "dist/t",
        ],
        &[],
    )
    .assert_code(0);
    s.p.path("dist/t")
}

/// The stored tree of `someone/tiny`'s `main` in the `hf` double's store (a commit folder the
/// branch points at), where a test plants what a compromised download would bring.
pub(crate) fn remote_tree(s: &Sandbox) -> PathBuf {
    let repo = s.p.path("hf-store/someone/tiny");
    for d in ["refs/heads", "refs/tags", "refs/pr", "prs", "commits"] {
        std::fs::create_dir_all(repo.join(d)).unwrap();
    }
    std::fs::write(repo.join("refs/heads/main"), "planted\n").unwrap();
    repo.join("commits/planted")
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

fn sha256_of(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Rewrites the manifest through `f` (and SHA256SUMS to match, as an attacker would).
pub(crate) fn edit_manifest(dir: &Path, f: impl Fn(&mut Vec<serde_json::Value>)) {
    let mut m = read_json(&dir.join("manifest.json"));
    f(m["files"].as_array_mut().unwrap());
    let sums: String = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{}  {}\n",
                e["sha256"].as_str().unwrap(),
                e["path"].as_str().unwrap()
            )
        })
        .collect();
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_vec_pretty(&m).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.join("SHA256SUMS"), sums).unwrap();
}

type Mutation = fn(&Sandbox, &Path);

/// What a compromised download or a hostile bundle folder can hold, the words that name it,
/// and whether `fetch --only action_context` selects it too.
fn mutations() -> Vec<(&'static str, Mutation, &'static str, bool)> {
    vec![
        (
            "unlisted symlink ctx/stolen -> the secret",
            |s, d| std::os::unix::fs::symlink(s.secret_path(), d.join("ctx/stolen")).unwrap(),
            "not a regular file: ctx/stolen is a symbolic link",
            false,
        ),
        (
            "selected symlink ctx/action_context.stolen -> the secret",
            |s, d| {
                std::os::unix::fs::symlink(s.secret_path(), d.join("ctx/action_context.stolen"))
                    .unwrap()
            },
            "ctx/action_context.stolen is a symbolic link",
            true,
        ),
        (
            "onnx/action_context as a symlink to an outside folder",
            |s, d| {
                std::fs::remove_dir_all(d.join("onnx/action_context")).unwrap();
                std::os::unix::fs::symlink(s.outside(), d.join("onnx/action_context")).unwrap();
            },
            "onnx/action_context is a symbolic link",
            false,
        ),
        (
            "a FIFO in ctx/",
            |_, d| mkfifo(&d.join("ctx/action_context.pipe")),
            "not a regular file: ctx/action_context.pipe is a FIFO",
            true,
        ),
        (
            "a listed file replaced by a symlink to an outside copy",
            |_, d| {
                let rel = "golden/action_context_io.npz";
                let copy =
                    std::env::temp_dir().join(format!("xtask-outside-copy-{}", std::process::id()));
                std::fs::copy(d.join(rel), &copy).unwrap();
                std::fs::remove_file(d.join(rel)).unwrap();
                std::os::unix::fs::symlink(&copy, d.join(rel)).unwrap();
            },
            "golden/action_context_io.npz is a symbolic link",
            true,
        ),
        (
            "a manifest entry ../../secret with the secret's size and sha256",
            |s, d| {
                let secret = std::fs::read(s.secret_path()).unwrap();
                edit_manifest(d, |files| {
                    files.push(serde_json::json!({
                        "path": "../../../secret.txt", "bytes": secret.len(),
                        "sha256": sha256_of(&secret), "role": "golden"}))
                });
            },
            "\"../../../secret.txt\": it climbs out with `..`",
            true,
        ),
        (
            "a manifest entry with the secret's absolute path and a wrong hash",
            |s, d| {
                let abs = s.secret_path().display().to_string();
                edit_manifest(d, move |files| {
                    files.push(serde_json::json!({
                        "path": abs, "bytes": 1, "sha256": "00", "role": "golden"}))
                });
            },
            "it is absolute",
            true,
        ),
    ]
}

/// What no message may say: the secret's hash, its size, or whether it exists.
#[track_caller]
fn discloses_nothing(s: &Sandbox, run: &Run) {
    let secret = std::fs::read(s.secret_path()).unwrap();
    let all = run.all();
    assert!(
        !all.contains(&sha256_of(&secret)),
        "the secret's sha256 was shown: {all}"
    );
    assert!(
        !all.contains(&format!("{} bytes", secret.len())),
        "its size was shown: {all}"
    );
    assert!(
        !all.contains("SENTINEL-SECRET"),
        "its bytes were shown: {all}"
    );
}

#[test]
fn fetch_refuses_links_fifos_and_paths_that_leave_the_bundle() {
    let s = Sandbox::new();
    let pristine = bundle(&s);
    let remote = remote_tree(&s);
    for (name, mutate, says, selected) in mutations() {
        let modes = if selected {
            vec![None, Some("action_context")]
        } else {
            vec![None]
        };
        for only in modes {
            let _ = std::fs::remove_dir_all(&remote);
            copy_tree(&pristine, &remote);
            mutate(&s, &remote);
            let mut args = vec!["fetch", "--repo", "someone/tiny"];
            if let Some(c) = only {
                args.extend(["--only", c]);
            }
            let run = with_hf(&s, &args);
            run.assert_refused(2, says);
            assert!(
                run.stderr.contains("nothing was laid out"),
                "{name}: {}",
                run.all()
            );
            discloses_nothing(&s, &run);
            assert!(!s.p.path("ctx/tiny/stolen").exists(), "{name}");
            s.assert_untouched(name);
        }
    }
}

#[test]
fn verify_and_release_refuse_the_same_bundles_without_reading_outside() {
    let s = Sandbox::new();
    let pristine = bundle(&s);
    let local = s.p.path("dist/hostile");
    for (name, mutate, says, _) in mutations() {
        let _ = std::fs::remove_dir_all(&local);
        copy_tree(&pristine, &local);
        mutate(&s, &local);
        let verify = s.run(&["verify", "dist/hostile"], &[]);
        verify.assert_refused(2, says);
        discloses_nothing(&s, &verify);
        let release = with_hf(
            &s,
            &[
                "release",
                "--repo",
                "someone/tiny",
                "--bundle",
                "dist/hostile",
                "--dry-run",
            ],
        );
        release.assert_refused(2, says);
        assert!(
            !release.stdout.contains("hf upload"),
            "{name}: {}",
            release.all()
        );
        discloses_nothing(&s, &release);
        s.assert_untouched(name);
    }
    assert!(!s.p.path("hf.log").exists(), "no hf was run");
}

#[test]
fn repo_ids_and_revisions_never_reach_hf_as_options() {
    let s = Sandbox::new();
    for (flag, value, says) in [
        ("--repo", "-h/x", "is not a Hugging Face repository id"),
        ("--repo", "../..", "is not a Hugging Face repository id"),
        ("--repo", "owner/..", "is not a Hugging Face repository id"),
        ("--repo", ".../...", "is not a Hugging Face repository id"),
        ("--repo", "owner/na--me", "`--` and `..` are forbidden"),
        (
            "--revision",
            "-x",
            "--revision \"-x\" is not a git revision",
        ),
        ("--revision", "a..b", "is not a git revision"),
    ] {
        let assign = format!("{flag}={value}");
        let mut fetch = vec!["fetch", &assign];
        let mut release = vec!["release", &assign, "--dry-run"];
        if flag == "--revision" {
            fetch.extend(["--repo", "someone/tiny"]);
            release.extend(["--repo", "someone/tiny"]);
        }
        for args in [fetch, release] {
            with_hf(&s, &args).assert_refused(2, says);
        }
    }
    assert!(!s.p.path("hf.log").exists(), "hf was never run");
    s.assert_untouched("repo ids");
}

#[test]
fn a_download_without_manifest_needs_unverified_which_every_report_and_card_records() {
    let s = Sandbox::new();
    let pristine = bundle(&s);
    let remote = remote_tree(&s);
    copy_tree(&pristine, &remote);
    std::fs::remove_file(remote.join("manifest.json")).unwrap();
    let refused = with_hf(&s, &["fetch", "--repo", "someone/tiny"]);
    refused.assert_refused(2, "pass --unverified");
    assert!(!s.p.path("reports/tiny/unverified-inputs.json").exists());

    let fetched = with_hf(&s, &["fetch", "--repo", "someone/tiny", "--unverified"]);
    fetched.assert_code(0);
    assert!(fetched.stderr.contains("UNVERIFIED"), "{}", fetched.all());
    s.run(
        &["parity", "--backend", "ort", "--only", "action_context"],
        &[],
    )
    .assert_code(0);
    let report = read_json(&s.p.path("reports/tiny/parity-ort.json"));
    let note = report["versions"]["unverified_inputs"]
        .as_str()
        .unwrap_or_default();
    assert!(note.contains("someone/tiny@main"), "{report}");
    let md = std::fs::read_to_string(s.p.path("reports/tiny/parity-ort.md")).unwrap();
    assert!(md.contains("UNVERIFIED"), "{md}");
    s.run(
        &[
            "package",
            "--allow-unmeasured",
            "--soc",
            "77",
            "--only",
            "action_context",
            "--out",
            "dist/u",
        ],
        &[],
    )
    .assert_code(0);
    let card = std::fs::read_to_string(s.p.path("dist/u/README.md")).unwrap();
    assert!(card.contains("UNVERIFIED"), "{card}");
    s.run(&["verify", "dist/u"], &[]).assert_code(0);

    // A verified fetch of the same files clears the record.
    copy_tree(&pristine, &remote);
    with_hf(&s, &["fetch", "--repo", "someone/tiny"]).assert_code(0);
    assert!(!s.p.path("reports/tiny/unverified-inputs.json").exists());
    s.assert_untouched("unverified fetch");
}
