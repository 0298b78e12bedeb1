//! The CI matrix's way to a release: two runners each build one component, a gathering job
//! accepts their artifacts as fresh, packages, verifies and releases them (dry run, no token, a
//! failed upload, then a real upload of `v1`), and a clean clone fetches the release.

use std::path::{Path, PathBuf};

use super::{entries::entries_fetch_build_and_check_then_gather, run_with_hf};
use crate::common::{Scratch, copy_tree, read_json};

const ONLY: [&str; 2] = ["--only", "vision,action_step"];

#[test]
fn two_runners_then_gather_package_verify_release_and_fetch() {
    let g = two_runners_then_gather();
    let bundle = package_and_check_the_card(&g);
    the_dry_run_lists_everything_and_uploads_nothing(&g, &bundle);
    no_token_and_a_failed_upload_claim_nothing(&g, &bundle);
    release_v1_and_fetch_into_a_clean_clone(&g, &bundle);

    // The regeneration's fetch path: two entries in fresh clones without the inputs, each
    // fetching only its component through the Hub's include patterns, then a gather job.
    entries_fetch_build_and_check_then_gather(&g.path("hf-store"));
}

/// Two entries of the CI matrix, built in two separate clones, then the gathering job: the
/// artifacts (with their records) are accepted as fresh and pass HTP parity.
fn two_runners_then_gather() -> Scratch {
    let a = Scratch::tiny();
    let b = Scratch::tiny();
    a.run(&["build-ctx", "--soc", "77", "--only", "vision"])
        .assert_code(0);
    b.run(&["build-ctx", "--soc", "77", "--only", "action_step"])
        .assert_code(0);

    // The gathering job: the artifacts (with their records) are accepted as fresh.
    let g = Scratch::tiny();
    std::fs::create_dir_all(g.path("ctx/tiny")).unwrap();
    for (from, comp) in [(&a, "vision"), (&b, "action_step")] {
        for entry in std::fs::read_dir(from.path("ctx/tiny")).unwrap().flatten() {
            if entry.file_name().to_string_lossy().starts_with(comp) {
                std::fs::copy(entry.path(), g.path("ctx/tiny").join(entry.file_name())).unwrap();
            }
        }
    }
    let fresh = g.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--require-fresh",
        ONLY[0],
        ONLY[1],
    ]);
    fresh.assert_code(0);
    assert!(!fresh.stdout.contains("dirty"), "{}", fresh.all());
    g.run(&["parity", "--backend", "htp", ONLY[0], ONLY[1]])
        .assert_code(0);
    g
}

/// The gathering job's bundle: packaged, verified, and its card has every section and the
/// measured HTP cosine.
fn package_and_check_the_card(g: &Scratch) -> PathBuf {
    let bundle = g.path("dist/tiny");
    g.run(&[
        "package",
        "--allow-unmeasured",
        "--model",
        "tiny",
        "--soc",
        "77",
        "--out",
        bundle.to_str().unwrap(),
        ONLY[0],
        ONLY[1],
    ])
    .assert_code(0);
    let verify = g.run(&["verify", bundle.to_str().unwrap()]);
    verify.assert_code(0);
    let card = std::fs::read_to_string(bundle.join("README.md")).unwrap();
    for section in [
        "license: apache-2.0",
        "## Per-component I/O contract",
        "## Verdict: UNMEASURED",
        "## Validated parity (host CPU stage vs golden)",
        "## HTP parity (HTP emulated on x86_64, fp16)",
        "## Gates lowered by the recipes",
        "## On the board",
        "## Build provenance",
    ] {
        assert!(card.contains(section), "card lacks {section}:\n{card}");
    }
    let htp_cos = read_json(&g.path("reports/tiny/parity-htp.json"))["components"][0]["outputs"][0]
        ["metrics"]["cosine"]
        .as_f64()
        .unwrap();
    assert!(
        card.contains(&format!("| `vision` | image_embeds | {htp_cos:.8} |")),
        "the card shows the measured HTP cosine {htp_cos}:\n{card}"
    );
    bundle
}

/// Release: the dry run lists every file and the exact commands, and uploads nothing.
fn the_dry_run_lists_everything_and_uploads_nothing(g: &Scratch, bundle: &Path) {
    let manifest = read_json(&bundle.join("manifest.json"));
    let dry = run_with_hf(
        g,
        &[
            "release",
            "--repo",
            "someone/tiny",
            "--bundle",
            bundle.to_str().unwrap(),
            "--dry-run",
        ],
        true,
        None,
    );
    dry.assert_code(0);
    for f in manifest["files"].as_array().unwrap() {
        assert!(
            dry.stdout.contains(f["path"].as_str().unwrap()),
            "dry run must list {f}"
        );
    }
    assert!(
        dry.stdout.contains("hf upload --repo-type model")
            && dry
                .stdout
                .contains(&format!("-- someone/tiny {} .", bundle.display())),
        "{}",
        dry.all()
    );
    // A dry run asks `hf` only read-only questions: its version and who is logged in.
    let calls = std::fs::read_to_string(g.path("hf.log")).unwrap_or_default();
    assert!(
        calls.contains("auth whoami")
            && calls
                .lines()
                .all(|l| l.contains("auth whoami") || l.contains("version")),
        "{calls}"
    );
    std::fs::remove_file(g.path("hf.log")).unwrap();
}

/// No token, and a failing upload: clear errors, nothing claimed.
fn no_token_and_a_failed_upload_claim_nothing(g: &Scratch, bundle: &Path) {
    let no_token = run_with_hf(
        g,
        &[
            "release",
            "--repo",
            "someone/tiny",
            "--bundle",
            bundle.to_str().unwrap(),
        ],
        false,
        None,
    );
    no_token.assert_refused(2, "not logged in");
    let failed = run_with_hf(
        g,
        &[
            "release",
            "--repo",
            "someone/tiny",
            "--bundle",
            bundle.to_str().unwrap(),
        ],
        true,
        Some("upload"),
    );
    failed
        .assert_refused(2, "the release is NOT published")
        .assert_refused(2, "HTTP 503");
    assert!(!g.path("reports/tiny/release.json").exists());
    // Its pull request (still a draft) is closed, never merged.
    assert!(
        failed
            .stdout
            .contains("pull request #1 (the partial upload) was closed"),
        "{}",
        failed.all()
    );
    let state = std::fs::read_to_string(g.path("hf-store/someone/tiny/prs/1")).unwrap();
    assert_eq!(state.lines().next(), Some("closed"), "{}", failed.all());
}

/// A real (double) upload, then fetch into a clean clone, which can re-validate at once.
fn release_v1_and_fetch_into_a_clean_clone(g: &Scratch, bundle: &Path) {
    run_with_hf(
        g,
        &[
            "release",
            "--repo",
            "someone/tiny",
            "--bundle",
            bundle.to_str().unwrap(),
            "--revision",
            "v1",
        ],
        true,
        None,
    )
    .assert_code(0);
    assert_eq!(
        read_json(&g.path("reports/tiny/release.json"))["repo"],
        "someone/tiny"
    );
    let f = Scratch::tiny();
    copy_tree(&g.path("hf-store"), &f.path("hf-store"));
    let fetch = run_with_hf(
        &f,
        &[
            "fetch",
            "--repo",
            "someone/tiny",
            "--model",
            "tiny",
            "--revision",
            "v1",
        ],
        true,
        None,
    );
    fetch.assert_code(0);
    assert!(f.path("ctx/tiny/vision_socid77_archv73.bin").is_file());
    f.run(&["parity", "--backend", "htp", ONLY[0], ONLY[1]])
        .assert_code(0);
}
