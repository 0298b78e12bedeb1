//! The regeneration's fetch path, after a release `v1`: each CI entry starts from a clone
//! without the inputs, fetches only its component's inputs (`fetch --only … --inputs-only`,
//! keyed by `--cache-key`), builds and checks it; the gather job fetches every input, gathers
//! the entries' artifacts and reports, merges the reports, packages and verifies.

use std::path::Path;

use super::run_with_hf;
use crate::common::{Scratch, copy_tree, read_json};

/// The inputs of `vision` and `action_step` (ONNX + external data, golden, trace), as the
/// recipes place them.
const INPUTS: [(&str, &[&str]); 2] = [
    (
        "vision",
        &[
            "onnx/tiny/vision.onnx",
            "golden/tiny/vision_io.npz",
            "golden/tiny/trace.json",
        ],
    ),
    (
        "action_step",
        &[
            "onnx/tiny/action_step.onnx",
            "golden/tiny/action_step_io.npz",
        ],
    ),
];

/// `fetch --repo someone/tiny --revision v1 --only <comp> --inputs-only`.
fn fetch_args(comp: &'static str) -> Vec<&'static str> {
    vec![
        "fetch",
        "--repo",
        "someone/tiny",
        "--revision",
        "v1",
        "--only",
        comp,
        "--inputs-only",
    ]
}

/// A clean clone of the tiny project holding the Hub `store`, without the inputs of [`INPUTS`].
fn clone_without_inputs(store: &Path) -> Scratch {
    let e = Scratch::tiny();
    copy_tree(store, &e.path("hf-store"));
    for (_, files) in INPUTS {
        for f in files {
            std::fs::remove_file(e.path(f)).unwrap();
        }
    }
    e
}

/// The entries, then the gather job, with the release `v1` in the Hub `store`.
pub(super) fn entries_fetch_build_and_check_then_gather(store: &Path) {
    let mut entries = Vec::new();
    let mut keys = Vec::new();
    for (comp, _) in INPUTS {
        let (e, key) = an_entry_fetches_its_inputs_builds_and_checks(store, comp);
        keys.push(key);
        entries.push((comp, e));
    }
    assert_ne!(keys[0], keys[1], "each component has its own content key");
    an_absent_component_or_repository_is_refused(&entries[0].1);
    the_gather_job_merges_packages_and_verifies(store, &entries);
}

/// One CI entry for `comp`: refused without its inputs, then its cache key, then its inputs
/// alone (no context binaries), then build and parity. Returns the clone and the key.
fn an_entry_fetches_its_inputs_builds_and_checks(
    store: &Path,
    comp: &'static str,
) -> (Scratch, String) {
    let e = clone_without_inputs(store);
    // Without the inputs nothing runs, and the error says how to get them.
    let refused = e.run(&["build-ctx", "--soc", "77", "--only", comp]);
    refused.assert_refused(2, "how to obtain them");

    let mut key_args = fetch_args(comp);
    key_args.push("--cache-key");
    let key = run_with_hf(&e, &key_args, true, None);
    key.assert_code(0);
    let key = key.stdout.trim().to_string();
    assert!(key.starts_with(&format!("tiny-{comp}-")), "{key}");
    assert!(
        !e.path("onnx/tiny/vision.onnx").exists(),
        "--cache-key lays nothing out"
    );

    let fetched = run_with_hf(&e, &fetch_args(comp), true, None);
    fetched.assert_code(0);
    let log = std::fs::read_to_string(e.path("hf.log")).unwrap();
    // The download's own line (a fetch of a --revision also lists the tags after it).
    let last = log.lines().rfind(|l| l.starts_with("hf download")).unwrap();
    for pat in [
        format!("--include onnx/{comp}/\\*"),
        format!("--include golden/{comp}_io.npz"),
        "--include manifest.json".to_string(),
    ] {
        assert!(last.contains(&pat), "{pat} in {last}");
    }
    assert!(
        !last.contains("ctx/"),
        "--inputs-only downloads no context binaries: {last}"
    );
    // Only this component's inputs came, and they are complete; the other's did not.
    for (other, files) in INPUTS {
        for f in files {
            assert_eq!(
                e.path(f).is_file(),
                other == comp,
                "{f} after fetching {comp}"
            );
        }
    }
    assert!(
        !e.path("ctx/tiny").exists()
            || std::fs::read_dir(e.path("ctx/tiny"))
                .unwrap()
                .next()
                .is_none()
    );

    e.run(&["build-ctx", "--soc", "77", "--only", comp])
        .assert_code(0);
    e.run(&["parity", "--backend", "cpu", "--only", comp])
        .assert_code(0);
    e.run(&["parity", "--backend", "htp", "--only", comp])
        .assert_code(0);
    (e, key)
}

/// A component the bundle does not hold fails at once, naming what is missing and how to get
/// it; with no repository named anywhere, the error says where to name one.
fn an_absent_component_or_repository_is_refused(e0: &Scratch) {
    for f in [
        "onnx/tiny/action_context.onnx",
        "golden/tiny/action_context_io.npz",
    ] {
        std::fs::remove_file(e0.path(f)).unwrap();
    }
    let absent = run_with_hf(e0, &fetch_args("action_context"), true, None);
    absent.assert_code(2);
    assert!(
        absent
            .stderr
            .contains("golden/tiny/action_context_io.npz (action_context)")
            && absent.stderr.contains("how to provide them"),
        "{}",
        absent.all()
    );
    // No repository named anywhere: says where to name one.
    let no_repo = e0.run(&["fetch", "--only", "vision"]);
    no_repo
        .assert_refused(2, "--repo OWNER/NAME")
        .assert_refused(2, "source_repo");
}

/// The gather job: every input fetched (no ctx from the Hub), the entries' artifacts and
/// reports gathered, reports merged, nothing re-run; fresh, packaged, verified.
fn the_gather_job_merges_packages_and_verifies(store: &Path, entries: &[(&str, Scratch)]) {
    let g = clone_without_inputs(store);
    run_with_hf(
        &g,
        &[
            "fetch",
            "--repo",
            "someone/tiny",
            "--revision",
            "v1",
            "--inputs-only",
        ],
        true,
        None,
    )
    .assert_code(0);
    assert!(!g.path("ctx/tiny/vision_socid77_archv73.bin").exists());
    std::fs::create_dir_all(g.path("ctx/tiny")).unwrap();
    let mut dirs = Vec::new();
    for (comp, e) in entries {
        for entry in std::fs::read_dir(e.path("ctx/tiny")).unwrap().flatten() {
            if entry.file_name().to_string_lossy().starts_with(comp) {
                std::fs::copy(entry.path(), g.path("ctx/tiny").join(entry.file_name())).unwrap();
            }
        }
        let dir = g.path(&format!("entry-reports/reports-tiny-{comp}-soc77"));
        copy_tree(&e.path("reports/tiny"), &dir);
        dirs.push(dir.display().to_string());
    }
    let only = ["--only", "vision,action_step"];
    g.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--require-fresh",
        only[0],
        only[1],
    ])
    .assert_code(0);
    let mut merge = vec!["merge-reports", "--model", "tiny"];
    merge.extend(dirs.iter().map(String::as_str));
    let merged = g.run(&merge);
    merged.assert_code(0);
    for backend in ["cpu", "htp"] {
        let r = read_json(&g.path(&format!("reports/tiny/parity-{backend}.json")));
        let comps: Vec<&str> = r["components"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["component"].as_str().unwrap())
            .collect();
        assert_eq!(
            comps,
            ["vision", "action_step"],
            "{backend}: {}",
            merged.all()
        );
        assert_eq!(r["pass"], true);
    }
    // The same component from two entries is refused.
    let twice = g.run(&["merge-reports", "--model", "tiny", &dirs[0], &dirs[0]]);
    twice.assert_code(2);
    assert!(twice.stderr.contains("again"), "{}", twice.all());
    g.run(&merge).assert_code(0);

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
        only[0],
        only[1],
    ])
    .assert_code(0);
    g.run(&["verify", bundle.to_str().unwrap()]).assert_code(0);
}
