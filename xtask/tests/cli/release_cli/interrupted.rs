//! A release killed in the middle of its upload: the target revision keeps the previous
//! release, the partial upload waits in an unmerged pull request, and running the release
//! again completes it.

use std::process::Command;

use super::{packaged, release_cmd, remote_tree, walk};
use crate::common::{Run, Scratch, read_json};

/// `release` killed between two upload batches (3 files per commit here): `main` still holds
/// the previous release, untouched; the partial upload sits in an unmerged pull request.
#[test]
fn a_release_killed_between_two_upload_batches_leaves_the_target_unchanged() {
    let p = Scratch::tiny();
    let bundle = packaged(&p);
    let store = p.path("hf-store");
    // A first, complete release of an older bundle (its manifest differs: one file changed).
    let one = p.path("dist/one");
    p.run(&[
        "package",
        "--allow-unmeasured",
        "--soc",
        "77",
        "--only",
        "action_context",
        "--out",
        one.to_str().unwrap(),
    ])
    .assert_code(0);
    let first = Run::from(release_cmd(&p, &one, &[]).output().unwrap());
    first.assert_code(0);
    let main_before = std::fs::read_to_string(store.join("someone/tiny/refs/heads/main")).unwrap();
    let tree_before: Vec<_> = walk(&remote_tree(&store, "someone/tiny", "main"));
    // The new bundle has both components: its manifest and sums differ.
    let marker = p.path("paused");
    let mut child = release_cmd(&p, &bundle, &[])
        .env("HF_TEST_DOUBLE_BATCH_FILES", "3")
        .env("HF_TEST_DOUBLE_PAUSE_AFTER_COMMIT", &marker)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !marker.is_file()
        || std::fs::read_to_string(&marker)
            .unwrap()
            .split_whitespace()
            .count()
            < 2
    {
        assert!(
            started.elapsed().as_secs() < 120,
            "the upload never committed a batch"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // One batch committed, more to come: kill the release and the upload under it.
    let hf_pid = std::fs::read_to_string(&marker)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    child.kill().unwrap();
    child.wait().unwrap();
    Command::new("kill").args(["-9", &hf_pid]).status().unwrap();
    assert_eq!(
        std::fs::read_to_string(store.join("someone/tiny/refs/heads/main")).unwrap(),
        main_before,
        "main moved"
    );
    assert_eq!(
        walk(&remote_tree(&store, "someone/tiny", "main")),
        tree_before
    );
    assert!(
        store.join("someone/tiny/refs/pr/2").is_file(),
        "the partial upload is in a PR"
    );
    // Run again to the end: now main is the new bundle, in one step.
    let again = Run::from(release_cmd(&p, &bundle, &[]).output().unwrap());
    again.assert_code(0);
    let now = remote_tree(&store, "someone/tiny", "main");
    assert_eq!(
        std::fs::read(now.join("manifest.json")).unwrap(),
        std::fs::read(bundle.join("manifest.json")).unwrap()
    );
    let rec = read_json(&p.path("reports/tiny/release.json"));
    assert_eq!(rec["revision"], "main");
    assert!(rec["huggingface_hub"].as_str().is_some(), "{rec}");
}
