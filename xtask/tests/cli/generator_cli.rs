//! The tiny-model generator (`xtask/scripts/gen_tiny_model.py`): `--check` regenerates the
//! committed `tiny` and `tiny-uneven` into a temporary folder and must find every file
//! byte-identical, writing nothing into the project; a changed committed file fails it with
//! the file (and the npz member, or the recipe line) named.
//!
//! The generator's Python packages (numpy, onnx, pinned in `xtask/scripts/tinygen/
//! requirements.txt`) live in `target/tinygen-venv`, made (once, or again when the pins change)
//! by `xtask/scripts/tinygen/ensure-venv.sh` (on first use): these tests need
//! nothing set up beforehand, and a failure to make the venv fails them, never skips them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Run, Scratch, copy_tree, edit_golden, pinned_python, repo_root, sha256_hex};

/// `gen_tiny_model.py --check --root <root>` in the pinned venv.
fn check(root: &Path) -> Run {
    let python = pinned_python();
    let out = Command::new(python)
        .arg(repo_root().join("xtask/scripts/gen_tiny_model.py"))
        .arg("--check")
        .arg("--root")
        .arg(root)
        .output()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", python.display()));
    let run = Run::from(out);
    assert_ne!(
        run.code,
        2,
        "the generator's environment is broken ({})\n{}",
        python.display(),
        run.all()
    );
    run
}

/// A scratch project holding every committed file of both generated models.
fn committed_models() -> Scratch {
    let s = Scratch::offline();
    for rel in ["onnx/tiny-uneven", "golden/tiny-uneven"] {
        copy_tree(&crate::common::committed().join(rel), &s.path(rel));
    }
    s
}

/// Every file under `dir` with its hash, to prove a run wrote nothing.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            (
                e.path().strip_prefix(dir).unwrap().to_path_buf(),
                sha256_hex(e.path()),
            )
        })
        .collect()
}

#[test]
fn the_committed_models_are_reproduced_byte_for_byte() {
    let p = committed_models();
    let before = snapshot(p.dir.path());
    let run = check(p.dir.path());
    run.assert_code(0);
    assert!(
        run.stdout
            .contains("56 files of tiny, tiny-uneven are byte-identical"),
        "{}",
        run.all()
    );
    assert_eq!(
        snapshot(p.dir.path()),
        before,
        "--check wrote into the project"
    );
}

#[test]
fn a_changed_committed_file_fails_the_check_by_name() {
    let p = committed_models();
    edit_golden(
        &p.path("golden/tiny/action_step_io.npz"),
        "next_trajectory",
        |a| a[[0, 0, 0]] += 0.5,
    );
    let recipe = p.path("recipes/tiny-uneven/model.toml");
    let text = std::fs::read_to_string(&recipe).unwrap();
    std::fs::write(
        &recipe,
        text.replace("min_cosine = 0.999\n", "min_cosine = 0.99\n"),
    )
    .unwrap();
    std::fs::remove_file(p.path("onnx/tiny-uneven/llm_split1.onnx.data")).unwrap();
    std::fs::write(p.path("golden/tiny/stale_io.npz"), b"").unwrap();

    let run = check(p.dir.path());
    run.assert_code(1);
    for needle in [
        "golden/tiny/action_step_io.npz: member next_trajectory.npy differs (max abs difference 0.5 in 1 of 320 values)",
        "recipes/tiny-uneven/model.toml: line ",
        "committed 'min_cosine = 0.99', generated 'min_cosine = 0.999'",
        "onnx/tiny-uneven/llm_split1.onnx.data: missing in the checkout",
        "golden/tiny/stale_io.npz: in the checkout but not written by the generator",
    ] {
        assert!(
            run.stdout.contains(needle),
            "{needle:?} not in {}",
            run.all()
        );
    }
    // edit_golden rewrites every member through ndarray-npy: the unchanged ones are named as
    // such, not as differing values.
    assert!(
        !run.stdout.contains("member k_ctx.npy differs"),
        "an unchanged member was reported: {}",
        run.all()
    );
    assert!(
        run.stdout.contains("k_ctx.npy, v_ctx.npy, encoder_attention_mask.npy, action_dim_is_pad.npy hold the same arrays"),
        "{}",
        run.all()
    );
}
