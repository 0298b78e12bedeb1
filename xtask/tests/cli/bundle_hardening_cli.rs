//! Bundles under hostile conditions: broken artifacts are never packaged (not even with
//! `--allow-stale`), an in-place edit that restores size and mtime is caught by the full
//! re-hash of release-grade checks, staging folders of killed runs are cleaned, and a bundle
//! verifies outside any checkout.

use crate::common;

use std::process::Command;

use common::Scratch;

fn package(p: &Scratch, out: &str, extra: &[&str]) -> common::Run {
    p.package(out, "action_context", extra)
}

#[test]
fn broken_is_never_packaged_and_an_mtime_preserving_edit_is_caught() {
    let p = Scratch::tiny();
    p.run(&["build-ctx", "--soc", "77", "--only", "action_context"])
        .assert_code(0);
    let bin = p.path("ctx/tiny/action_context_socid77_archv73.bin");
    let good = std::fs::read(&bin).unwrap();

    // Same size, one byte changed, mtime restored: the (size, mtime) memo would say fresh.
    let mtime = std::fs::metadata(&bin).unwrap().modified().unwrap();
    let mut evil = good.clone();
    evil[good.len() / 2] ^= 0x01;
    std::fs::write(&bin, &evil).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&bin)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    for extra in [&[][..], &["--allow-stale"][..]] {
        let run = package(&p, "dist/a", extra);
        run.assert_refused(2, "is not the binary its build recorded");
        assert!(!p.path("dist/a").exists());
    }
    let fresh = p.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--require-fresh",
        "--only",
        "action_context",
    ]);
    assert_eq!(fresh.code, 1, "{}", fresh.all());
    assert!(fresh.stdout.contains("was modified"), "{}", fresh.all());

    // Truncated: refused with --allow-stale too.
    std::fs::write(&bin, &good[..good.len() / 3]).unwrap();
    let run = package(&p, "dist/a", &["--allow-stale"]);
    run.assert_refused(2, "truncated or replaced");

    // A wrapper pointing outside its folder: refused even when stale is allowed.
    std::fs::write(&bin, &good).unwrap();
    let wrapper = p.path("ctx/tiny/action_context_socid77_archv73_ctx.onnx");
    let bytes = std::fs::read(&wrapper).unwrap();
    let moved = xtask_onnx::onnx::rewrite::set_node_string_attr(
        &bytes,
        "EPContext",
        "ep_cache_context",
        "../../../etc/passwd",
    )
    .unwrap();
    std::fs::write(&wrapper, moved).unwrap();
    let run = package(&p, "dist/a", &["--allow-stale"]);
    run.assert_refused(2, "points at \"../../../etc/passwd\"");
}

#[test]
fn leftovers_of_a_killed_package_are_removed_and_a_bundle_verifies_anywhere() {
    let p = Scratch::tiny();
    p.run(&["build-ctx", "--soc", "77", "--only", "action_context"])
        .assert_code(0);
    std::fs::create_dir_all(p.path("dist/.bundle-killed/ctx")).unwrap();
    std::fs::write(p.path("dist/.bundle-killed/ctx/x.bin"), b"half").unwrap();
    let run = package(&p, "dist/t", &[]);
    run.assert_code(0);
    assert!(!p.path("dist/.bundle-killed").exists(), "{}", run.all());
    assert!(
        run.stderr.contains("removed .bundle-killed"),
        "{}",
        run.all()
    );

    // Outside any checkout, with no --root: the bundle still verifies.
    let elsewhere = tempfile::tempdir().unwrap();
    let bundle = elsewhere.path().join("bundle");
    std::fs::rename(p.path("dist/t"), &bundle).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .current_dir(elsewhere.path())
        .args(["verify", "bundle"])
        .output()
        .unwrap();
    let run = common::Run::from(out);
    run.assert_code(0);
    assert!(run.stdout.contains("verified"), "{}", run.all());
}

/// The card and bundle.json state per component what its build records say (toolchain, HTP
/// precision, optimization level, DLC bitwidth and how far the DLC was checked), not fixed
/// words: a component built with `fp16 = false` is shown as such.
#[test]
fn the_card_states_the_build_facts_from_the_records() {
    let p = Scratch::tiny();
    let recipe = p.path("recipes/tiny/action_context.toml");
    let text = std::fs::read_to_string(&recipe).unwrap();
    std::fs::write(&recipe, text.replace("fp16 = true", "fp16 = false")).unwrap();
    p.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "action_context,action_step",
    ])
    .assert_code(0);
    let out = p.path("dist/facts");
    p.package("dist/facts", "action_context,action_step", &[])
        .assert_code(0);
    let card = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(
        card.contains(
            "| `action_context` | embedded | fp32 (fp16 off) | O3 | default | float32 | structure only"
        ),
        "{card}"
    );
    assert!(
        card.contains("| `action_step` | embedded | fp16 | O3 | default | float32 |"),
        "{card}"
    );
    assert!(card.contains("fp16 HTP precision in 1 of 2"), "{card}");
    assert!(!card.contains("float DLC, fp16 HTP precision"), "{card}");
    let info = common::read_json(&out.join("reports/bundle.json"));
    assert_eq!(info["components"][0]["fp16"], false, "{info}");
    assert_eq!(
        info["components"][0]["toolchain"]["kind"], "embedded",
        "{info}"
    );
    p.run(&["verify", out.to_str().unwrap()]).assert_code(0);
}
