//! The tests copy the checkout's committed tree, never its working tree: an uncommitted edit
//! of a recipe (the `[quantize]` table docs/quantization.md suggests for tiny's `action_step`)
//! reaches no scratch project.

use std::path::Path;
use std::process::Command;

use crate::common::{self, Run};

/// The test the clone's run repeats: it counts tiny's build steps (21, none of them a quantize
/// step), which the edit below would change.
const REPRESENTATIVE: &str = "build_ctx_cli::the_dry_run_plan_as_json_parses_and_names_every_step";

fn git(dir: &Path, args: &[&str]) {
    let run = Run::from(
        Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .unwrap(),
    );
    assert_eq!(run.code, 0, "git {args:?}\n{}", run.all());
}

#[test]
fn an_uncommitted_recipe_edit_in_a_clone_reaches_no_test() {
    let scratch = tempfile::tempdir().unwrap();
    let clone = scratch.path().join("clone");
    let checkout = common::checkout();
    git(
        scratch.path(),
        &[
            "clone",
            "--quiet",
            "--shared",
            checkout.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    let recipe = "recipes/tiny/action_step.toml";
    let committed = std::fs::read_to_string(clone.join(recipe)).unwrap();
    assert!(!committed.contains("[quantize]"), "{committed}");
    let edited = format!("{committed}\n[quantize]\nprecision = \"w8a16\"\n");
    std::fs::write(clone.join(recipe), &edited).unwrap();

    // The fixture helper itself, on the clone: the committed text, not the edit.
    let extracted = scratch.path().join("extracted");
    std::fs::create_dir(&extracted).unwrap();
    common::extract_committed(&clone, &extracted);
    assert_eq!(
        std::fs::read_to_string(extracted.join(recipe)).unwrap(),
        committed
    );

    // A test of the suite run against the clone (its fixtures come from the clone's commit,
    // into the clone's own target/): it passes, as it does on the committed recipe.
    let run = Run::from(
        Command::new(std::env::current_exe().unwrap())
            .args([REPRESENTATIVE, "--exact", "--test-threads=1"])
            .env("XTASK_TEST_CHECKOUT", &clone)
            .output()
            .unwrap(),
    );
    assert_eq!(run.code, 0, "{}", run.all());
    assert!(run.stdout.contains("1 passed"), "{}", run.all());
    let fixture = clone
        .join("target/test-fixtures")
        .join(common::head_sha(&clone));
    assert_eq!(
        std::fs::read_to_string(fixture.join(recipe)).unwrap(),
        committed,
        "the clone's run took its projects from the clone's commit"
    );
    assert_eq!(
        std::fs::read_to_string(clone.join(recipe)).unwrap(),
        edited,
        "the edit stays in the clone's working tree"
    );
}
