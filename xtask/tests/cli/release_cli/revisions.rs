//! What a release leaves on the Hub: a re-release replaces the revision's tree (no stale remote
//! file, the Hub's own `.gitattributes` kept) and a clean clone fetches it; `--tag` creates a
//! tag, not a branch, refuses another bundle on an existing tag, and a failed check after the
//! upload deletes the staging branch.

use std::path::Path;

use super::{packaged, release_cmd, remote_tree, run_with_hf, walk, with_hf_double};
use crate::common::{Run, Scratch, copy_tree, read_json};

/// The Hub as it really is: every repository has a `.gitattributes` that downloads bring along,
/// `hf upload` keeps stale remote files unless asked to delete them, and `hf auth whoami`
/// before huggingface_hub 1.9 says "Not logged in" with exit 0.
#[test]
fn releases_replace_the_revision_and_fetch_accepts_the_hubs_own_files() {
    let p = Scratch::tiny();
    p.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "action_context,action_step",
    ])
    .assert_code(0);
    let package = |out: &str, only: &str| {
        let out = p.path(out);
        p.run(&[
            "package",
            "--allow-unmeasured",
            "--soc",
            "77",
            "--only",
            only,
            "--out",
        ])
        .assert_code(2); // --out needs a value
        p.run(&[
            "package",
            "--allow-unmeasured",
            "--soc",
            "77",
            "--only",
            only,
            "--out",
            out.to_str().unwrap(),
        ])
        .assert_code(0);
        out
    };
    let both = package("dist/both", "action_context,action_step");
    let one = package("dist/one", "action_context");
    let release = |bundle: &Path, token: bool, hub: &str| {
        let mut cmd = p.command(&[
            "release",
            "--repo",
            "someone/tiny",
            "--bundle",
            bundle.to_str().unwrap(),
        ]);
        with_hf_double(&mut cmd, &p)
            .env("HF_TEST_DOUBLE_HUB_VERSION", hub)
            .env_remove("HF_TEST_DOUBLE_FAIL");
        if token {
            cmd.env("HF_TOKEN", "t");
        } else {
            cmd.env_remove("HF_TOKEN");
        }
        Run::from(cmd.output().unwrap())
    };
    // An old CLI says "Not logged in" and exits 0: still refused, nothing uploaded.
    let old = release(&both, false, "1.8.2");
    old.assert_code(2);
    assert!(old.stderr.contains("not logged in"), "{}", old.all());
    assert!(!p.path("hf-store").exists(), "{}", old.all());

    release(&both, true, "1.9.0").assert_code(0);
    let store = p.path("hf-store");
    let remote = remote_tree(&store, "someone/tiny", "main");
    assert!(remote.join(".gitattributes").is_file(), "the Hub adds it");
    assert!(remote.join("ctx/action_step_socid77_archv73.bin").is_file());
    let log = std::fs::read_to_string(p.path("hf.log")).unwrap();
    // The Hub's life cycle, in this order: create (a draft) → upload → check → open → merge.
    let mut rest = log.as_str();
    for verb in [
        "hf discussions create someone/tiny",
        "hf upload",
        "hf download",
        "hf discussions reopen someone/tiny 1 --yes",
        "hf discussions merge someone/tiny 1 --yes",
    ] {
        let at = rest
            .find(verb)
            .unwrap_or_else(|| panic!("no `{verb}` after the step before it:\n{log}"));
        rest = &rest[at + verb.len()..];
    }
    // Re-release with one component fewer: no stale remote file, `.gitattributes` kept.
    release(&one, true, "1.9.0").assert_code(0);
    let remote = remote_tree(&store, "someone/tiny", "main");
    assert!(!remote.join("ctx/action_step_socid77_archv73.bin").exists());
    assert!(!remote.join("onnx/action_step").exists());
    assert!(remote.join(".gitattributes").is_file());
    let log = std::fs::read_to_string(p.path("hf.log")).unwrap();
    assert!(log.contains("--delete \\*"), "{log}");

    // A clean clone fetches it: `.gitattributes` and `.cache/huggingface/` are the Hub's own.
    let f = Scratch::tiny();
    copy_tree(&p.path("hf-store"), &f.path("hf-store"));
    let fetch = run_with_hf(
        &f,
        &["fetch", "--repo", "someone/tiny", "--revision", "main"],
        true,
        None,
    );
    fetch.assert_code(0);
    assert!(
        f.path("ctx/tiny/action_context_socid77_archv73.bin")
            .is_file()
    );
    // Anything else unlisted is still refused.
    std::fs::write(
        remote_tree(&f.path("hf-store"), "someone/tiny", "main").join("stray.txt"),
        b"x",
    )
    .unwrap();
    let refused = run_with_hf(
        &f,
        &["fetch", "--repo", "someone/tiny", "--revision", "main"],
        true,
        None,
    );
    refused.assert_refused(2, "extra: stray.txt");
}

/// `--tag v1.2` creates a real tag (refs/tags/v1.2) at the verified commit, and no branch.
#[test]
fn a_release_to_a_tag_creates_a_tag_not_a_branch() {
    let p = Scratch::tiny();
    let bundle = packaged(&p);
    let run = Run::from(
        release_cmd(&p, &bundle, &["--tag", "v1.2"])
            .output()
            .unwrap(),
    );
    run.assert_code(0);
    let repo = p.path("hf-store/someone/tiny");
    assert!(repo.join("refs/tags/v1.2").is_file(), "{}", run.all());
    assert!(!repo.join("refs/heads/v1.2").exists());
    let heads: Vec<String> = std::fs::read_dir(repo.join("refs/heads"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(heads, ["main"], "the staging branch is removed");
    let tree = remote_tree(&p.path("hf-store"), "someone/tiny", "v1.2");
    assert_eq!(
        std::fs::read(tree.join("SHA256SUMS")).unwrap(),
        std::fs::read(bundle.join("SHA256SUMS")).unwrap()
    );
    let rec = read_json(&p.path("reports/tiny/release.json"));
    assert_eq!(
        (rec["revision"].as_str(), rec["revision_kind"].as_str()),
        (Some("v1.2"), Some("tag"))
    );
    let log = std::fs::read_to_string(p.path("hf.log")).unwrap();
    assert!(
        log.contains("hf repos tag create --revision ") && log.contains(" -- someone/tiny v1.2\n"),
        "{log}"
    );
    // The same bundle to the same tag again: already there, nothing uploaded.
    let again = Run::from(
        release_cmd(&p, &bundle, &["--tag", "v1.2"])
            .output()
            .unwrap(),
    );
    again.assert_code(0);
    assert!(
        again.stdout.contains("already holds this bundle"),
        "{}",
        again.all()
    );
    // Another bundle to the same tag: refused before anything is uploaded; the tag stays.
    let tag_before = std::fs::read_to_string(repo.join("refs/tags/v1.2")).unwrap();
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
    let other = Run::from(release_cmd(&p, &one, &["--tag", "v1.2"]).output().unwrap());
    assert_ne!(other.code, 0, "{}", other.all());
    assert!(
        other.stderr.contains("tag v1.2 already exists"),
        "{}",
        other.all()
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("refs/tags/v1.2")).unwrap(),
        tag_before
    );
    let log = std::fs::read_to_string(p.path("hf.log")).unwrap();
    assert_eq!(log.matches("hf upload").count(), 1, "{log}");

    // The check after the upload fails (a download error): nothing is exposed and the staging
    // branch holding the partial upload is deleted, not left behind.
    let failed = Run::from(
        release_cmd(&p, &one, &["--tag", "v2.0"])
            .env("HF_TEST_DOUBLE_FAIL", "download")
            .output()
            .unwrap(),
    );
    failed.assert_refused(2, "the release is NOT published");
    assert!(
        failed.stdout.contains("(the partial upload) was deleted"),
        "{}",
        failed.all()
    );
    assert!(!repo.join("refs/tags/v2.0").exists());
    let heads: Vec<String> = std::fs::read_dir(repo.join("refs/heads"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(heads, ["main"], "{}", failed.all());
}

/// A name that would mean two revisions on the Hub is refused before anything is uploaded: a new
/// branch named like an existing tag, a tag named like an existing branch.
#[test]
fn a_branch_named_like_a_tag_or_a_tag_named_like_a_branch_is_refused() {
    let p = Scratch::tiny();
    let bundle = packaged(&p);
    let release = |extra: &[&str]| Run::from(release_cmd(&p, &bundle, extra).output().unwrap());
    release(&["--tag", "v1"]).assert_code(0);
    release(&["--revision", "dev"]).assert_code(0);
    let refs = |kind: &str| -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(p.path("hf-store/someone/tiny/refs").join(kind))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
        names.sort();
        names
    };
    let before = (refs("heads"), refs("tags"));
    release(&["--revision", "v1"]).assert_refused(
        2,
        "--revision \"v1\" is ambiguous: someone/tiny has a tag v1 (refs/tags/v1)",
    );
    release(&["--tag", "dev"]).assert_refused(
        2,
        "--tag \"dev\" is ambiguous: someone/tiny has a branch (or a commit) named dev",
    );
    assert_eq!((refs("heads"), refs("tags")), before, "a ref was made");
    let log = std::fs::read_to_string(p.path("hf.log")).unwrap();
    assert!(
        log.contains("hf repos tag list --format json -- someone/tiny"),
        "{log}"
    );

    // Made elsewhere (by hand on the Hub): a branch v1 at another commit than the tag v1.
    // `fetch --revision v1` refuses it with both commits; a plain tag fetches.
    let repo = p.path("hf-store/someone/tiny");
    std::fs::copy(repo.join("refs/heads/dev"), repo.join("refs/heads/v1")).unwrap();
    let tag_commit = std::fs::read_to_string(repo.join("refs/tags/v1")).unwrap();
    let ctx_before = walk(&p.path("ctx/tiny"));
    let fetch = run_with_hf(
        &p,
        &["fetch", "--repo", "someone/tiny", "--revision", "v1"],
        true,
        None,
    );
    fetch.assert_refused(
        2,
        "--revision \"v1\" is ambiguous on someone/tiny: the tag v1 is commit",
    );
    assert!(fetch.stderr.contains(tag_commit.trim()), "{}", fetch.all());
    assert_eq!(
        walk(&p.path("ctx/tiny")),
        ctx_before,
        "nothing was laid out"
    );
    std::fs::remove_file(repo.join("refs/heads/v1")).unwrap();
    run_with_hf(
        &p,
        &["fetch", "--repo", "someone/tiny", "--revision", "v1"],
        true,
        None,
    )
    .assert_code(0);
}
