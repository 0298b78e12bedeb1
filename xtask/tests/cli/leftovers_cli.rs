//! Nothing left behind: a failed `fetch`, `package` or `release` removes its temporary folders,
//! and the next run of each removes what a killed one left (under the lock that makes it the
//! project's only one, so nothing removed is in use).

use std::path::Path;

use crate::common::{self, Run};
use crate::hostile_bundle_cli::{bundle, with_hf};
use crate::sandbox::Sandbox;

/// The tool with the `hf` double, one of its commands failing like a network error.
fn with_failing_hf(s: &Sandbox, fail: &str, args: &[&str]) -> Run {
    let mut cmd = s.p.command(args);
    cmd.current_dir(s.p.dir.path())
        .env(
            "PATH",
            common::path_with(&common::repo_root().join("test-doubles/hf")),
        )
        .env("HF_TEST_DOUBLE_LOG", s.p.path("hf.log"))
        .env("HF_TEST_DOUBLE_STORE", s.p.path("hf-store"))
        .env("HF_TOKEN", "t")
        .env("HF_TEST_DOUBLE_FAIL", fail);
    Run::from(cmd.output().unwrap())
}

/// A folder (with a file in it) as a killed run leaves it.
fn plant_folder(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("partial"), b"left by a killed run").unwrap();
}

/// The entries of `dir` whose names start with `prefix` (none when `dir` is absent).
fn named(dir: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(prefix) && !n.ends_with(".lock"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn failed_runs_leave_no_temporary_folder_and_the_next_run_removes_a_killed_ones() {
    let s = Sandbox::new();
    let built = bundle(&s);
    let (fetches, target, dist) = (
        s.p.path("target/fetch"),
        s.p.path("target"),
        s.p.path("dist"),
    );

    // fetch: a killed one's download folder and staged copy; this one fails to download.
    plant_folder(&fetches.join("tiny-killed"));
    let staged =
        s.p.path("ctx/tiny/.action_context_socid77_archv73.bin.fetching");
    std::fs::write(&staged, b"half a binary").unwrap();
    let failed = with_failing_hf(&s, "download", &["fetch", "--repo", "someone/tiny"]);
    assert_ne!(failed.code, 0, "{}", failed.all());
    assert!(
        failed.stderr.contains("removed target/fetch/tiny-killed"),
        "{}",
        failed.all()
    );
    assert_eq!(
        named(&fetches, ""),
        Vec::<String>::new(),
        "{}",
        failed.all()
    );
    assert!(
        !staged.exists(),
        "the staged copy of a killed fetch is still there"
    );

    // release: a killed one's download-back folder; this one fails to upload.
    plant_folder(&target.join("release-verify-killed"));
    let out = built.display().to_string();
    let failed = with_failing_hf(
        &s,
        "upload",
        &["release", "--repo", "someone/tiny", "--bundle", &out],
    );
    assert_ne!(failed.code, 0, "{}", failed.all());
    assert!(
        failed
            .stderr
            .contains("removed target/release-verify-killed"),
        "{}",
        failed.all()
    );
    assert_eq!(named(&target, "release-verify-"), Vec::<String>::new());

    // package: a killed one's staging folder; this one fails (a component never built).
    plant_folder(&dist.join(".bundle-killed"));
    let failed = s.run(
        &[
            "package",
            "--allow-unmeasured",
            "--soc",
            "77",
            "--only",
            "action_step",
            "--out",
            "dist/never",
        ],
        &[],
    );
    failed.assert_code(2);
    assert!(
        failed.stderr.contains("removed .bundle-killed"),
        "{}",
        failed.all()
    );
    assert_eq!(named(&dist, ".bundle-"), Vec::<String>::new());
    assert!(!dist.join("never").exists());

    // And a fetch that succeeds leaves no folder either.
    let remote = crate::hostile_bundle_cli::remote_tree(&s);
    common::copy_tree(&built, &remote);
    with_hf(&s, &["fetch", "--repo", "someone/tiny"]).assert_code(0);
    assert_eq!(named(&fetches, ""), Vec::<String>::new());
    s.assert_untouched("leftovers");
}

/// A build (its context compiles link the graph's folder under the system temp folder while
/// they run) and a chain run leave no `xtask-*` entry in the system temp folder, and two
/// projects compiling the same graphs at once both finish (the link is shared while in use).
#[test]
fn a_build_and_a_chain_run_leave_nothing_in_the_system_temp_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let a = common::Scratch::tiny();
    let b = common::Scratch::tiny();
    let build = |p: &common::Scratch| {
        let mut cmd = p.command(&[
            "build-ctx",
            "--soc",
            "77",
            "--only",
            "vision,action_context",
        ]);
        cmd.env("TMPDIR", tmp.path());
        cmd.spawn().unwrap()
    };
    let (mut ca, mut cb) = (build(&a), build(&b));
    assert!(
        ca.wait().unwrap().success(),
        "the first project's build failed"
    );
    assert!(
        cb.wait().unwrap().success(),
        "the second project's build failed"
    );
    let mut run = a.command(&["run", "--backend", "ort", "--iters", "1", "--warmup", "0"]);
    run.env("TMPDIR", tmp.path());
    assert_ne!(Run::from(run.output().unwrap()).code, 2);
    let left: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("xtask"))
        .collect();
    assert!(left.is_empty(), "left in the temp folder: {left:?}");
}
