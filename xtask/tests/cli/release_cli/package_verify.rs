//! `package` and `verify` on their own: a bundle with a flipped byte, a missing and an extra
//! file fails verification naming each; stale artifacts are packaged only when allowed, and the
//! card says so.

use crate::common::Scratch;

#[test]
fn verify_names_a_flipped_byte_a_missing_and_an_extra_file() {
    let p = Scratch::tiny();
    p.run(&["build-ctx", "--soc", "77", "--only", "action_context"])
        .assert_code(0);
    let bundle = p.path("dist/t");
    p.run(&[
        "package",
        "--allow-unmeasured",
        "--soc",
        "77",
        "--only",
        "action_context",
        "--out",
        bundle.to_str().unwrap(),
    ])
    .assert_code(0);
    p.run(&["verify", bundle.to_str().unwrap()]).assert_code(0);
    let golden = bundle.join("golden/action_context_io.npz");
    let mut bytes = std::fs::read(&golden).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&golden, bytes).unwrap();
    std::fs::remove_file(bundle.join("ctx/action_context_socid77_archv73_ctx.onnx")).unwrap();
    std::fs::write(bundle.join("ctx/stray.bin"), b"x").unwrap();
    let run = p.run(&["verify", bundle.to_str().unwrap()]);
    run.assert_code(2);
    for expected in [
        "changed: golden/action_context_io.npz",
        "missing: ctx/action_context_socid77_archv73_ctx.onnx",
        "extra: ctx/stray.bin",
    ] {
        assert!(run.stderr.contains(expected), "{expected}\n{}", run.all());
    }
    assert!(p.path("golden/tiny/action_context_io.npz").is_file());
}

#[test]
fn package_refuses_stale_artifacts_unless_allowed_and_says_so_in_the_card() {
    let p = Scratch::tiny();
    p.run(&["build-ctx", "--soc", "77", "--only", "action_context"])
        .assert_code(0);
    let recipe = p.path("recipes/tiny/action_context.toml");
    let text = std::fs::read_to_string(&recipe)
        .unwrap()
        .replace("optimization_level = 3", "optimization_level = 2");
    std::fs::write(&recipe, text).unwrap();
    let out = p.path("dist/s");
    let run = p.run(&[
        "package",
        "--allow-unmeasured",
        "--soc",
        "77",
        "--only",
        "action_context",
        "--out",
        out.to_str().unwrap(),
    ]);
    run.assert_refused(2, "`action_context` is stale")
        .assert_refused(2, "recipe [context] changed");
    assert!(!p.path("dist/s").exists());
    p.run(&[
        "package",
        "--allow-unmeasured",
        "--soc",
        "77",
        "--only",
        "action_context",
        "--out",
        out.to_str().unwrap(),
        "--allow-stale",
    ])
    .assert_code(0);
    let card = std::fs::read_to_string(p.path("dist/s/README.md")).unwrap();
    assert!(
        card.contains("packaged with `--allow-stale`") && card.contains("action_context"),
        "{card}"
    );
}
