//! The hostile suite, part four: bundles whose files were changed and whose manifest and sums
//! were then recomputed, as an attacker (or a careless hand) would. Every file still matches
//! `manifest.json`; what no longer holds is the references between the files. `verify` and
//! `fetch` refuse them naming the file and the reference (exit 2, never a signal), `fetch`
//! leaves `ctx/` exactly as it was; and any bytes in any bundle file end in exit 1 or 2.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{copy_tree, read_json};
use crate::hostile_bundle_cli::{bundle, edit_manifest, remote_tree, with_hf};
use crate::sandbox::Sandbox;

/// Recomputes every listed file's size and sha256 (and SHA256SUMS), as a forger would.
fn rehash(dir: &Path) {
    edit_manifest(dir, |files| {
        for f in files.iter_mut() {
            let path = dir.join(f["path"].as_str().unwrap());
            let bytes = std::fs::read(&path).unwrap();
            f["bytes"] = bytes.len().into();
            f["sha256"] = crate::common::sha256_hex(&path).into();
        }
    });
}

/// Every file under `dir` with its bytes (what "left exactly as it was" compares).
pub(crate) fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e.path().strip_prefix(dir).unwrap().display().to_string();
            (rel, std::fs::read(e.path()).unwrap())
        })
        .collect()
}

/// Builds and packages `action_context` and `action_step` into `dist/two`.
fn two_component_bundle(s: &Sandbox) -> std::path::PathBuf {
    let only = "action_context,action_step";
    s.run(&["build-ctx", "--soc", "77", "--only", only], &[])
        .assert_code(0);
    s.p.package("dist/two", only, &[]).assert_code(0);
    s.p.path("dist/two")
}

const CTX_WRAPPER: &str = "ctx/action_context_socid77_archv73_ctx.onnx";
const STEP_WRAPPER: &str = "ctx/action_step_socid77_archv73_ctx.onnx";

/// Each edit keeps every file's hash in the manifest right, and the words that name it.
type Edit = fn(&Path);

fn consistent_edits() -> Vec<(&'static str, Edit, &'static str)> {
    vec![
        (
            "action_context's wrapper replaced by action_step's (another binary, other I/O)",
            |d| {
                std::fs::copy(d.join(STEP_WRAPPER), d.join(CTX_WRAPPER))
                    .map(drop)
                    .unwrap()
            },
            "ctx/action_context_socid77_archv73_ctx.onnx: its EPContext names binary \"action_step_socid77_archv73.bin\", not action_context_socid77_archv73.bin",
        ),
        (
            "bundle.json states other inputs for action_context",
            |d| {
                let path = d.join("reports/bundle.json");
                let mut info = read_json(&path);
                info["components"][0]["inputs"][0][0] = "renamed".into();
                std::fs::write(&path, serde_json::to_vec_pretty(&info).unwrap()).unwrap();
            },
            "its inputs are [keys f32",
        ),
        (
            "the golden file swapped for action_step's",
            |d| {
                std::fs::copy(
                    d.join("golden/action_step_io.npz"),
                    d.join("golden/action_context_io.npz"),
                )
                .map(drop)
                .unwrap()
            },
            "no golden file is the one reports/bundle.json says `action_context` was checked against",
        ),
    ]
}

#[test]
fn a_bundle_changed_then_consistently_rehashed_is_refused_by_verify_and_by_fetch() {
    let s = Sandbox::new();
    let pristine = two_component_bundle(&s);
    // What fetch must leave alone: the project's ctx/ as the build left it.
    let ctx = s.p.path("ctx/tiny");
    let before = snapshot(&ctx);
    for (case, edit, says) in consistent_edits() {
        let forged = s.p.path("dist/forged");
        let _ = std::fs::remove_dir_all(&forged);
        copy_tree(&pristine, &forged);
        edit(&forged);
        rehash(&forged);
        let verify = s.run(&["verify", "dist/forged"], &[]);
        verify.assert_refused(2, says);

        let remote = remote_tree(&s);
        let _ = std::fs::remove_dir_all(&remote);
        copy_tree(&forged, &remote);
        for only in [None, Some("action_context")] {
            let mut args = vec!["fetch", "--repo", "someone/tiny"];
            if let Some(c) = only {
                args.extend(["--only", c]);
            }
            let fetch = with_hf(&s, &args);
            fetch.assert_refused(2, "nothing was laid out");
            assert!(
                fetch.all().contains(says),
                "{case} {only:?}: {}",
                fetch.all()
            );
            assert_eq!(snapshot(&ctx), before, "{case}: fetch changed ctx/");
        }
    }
    // The pristine bundle passes both, so the refusals above are the edits'.
    s.run(&["verify", "dist/two"], &[]).assert_code(0);
    let remote = remote_tree(&s);
    let _ = std::fs::remove_dir_all(&remote);
    copy_tree(&pristine, &remote);
    with_hf(&s, &["fetch", "--repo", "someone/tiny"]).assert_code(0);
    s.assert_untouched("consistently re-hashed bundles");
}

/// A file's new bytes from its old ones and a foreign file's.
type Mutate = fn(Vec<u8>, &[u8]) -> Vec<u8>;

/// Truncated, byte-flipped, emptied and foreign bytes in every file of a bundle, the manifest
/// re-hashed each time (so the damage is met by the readers behind the hash check, up to the
/// HTP loader): every case ends in exit 1 or 2 with a message, never a signal.
#[test]
fn any_bytes_in_any_bundle_file_give_a_reason_never_a_signal() {
    let s = Sandbox::new();
    let pristine = bundle(&s);
    let files: Vec<String> = snapshot(&pristine).into_keys().collect();
    let foreign = std::fs::read(pristine.join(CTX_WRAPPER)).unwrap();
    let npz = std::fs::read(pristine.join("golden/action_context_io.npz")).unwrap();
    let mutations: [(&str, Mutate); 4] = [
        ("truncated", |b, _| b[..b.len() / 2].to_vec()),
        ("byte-flipped", |mut b, _| {
            let at = b.len() / 2;
            if let Some(x) = b.get_mut(at) {
                *x ^= 0xff;
            }
            b
        }),
        ("emptied", |_, _| Vec::new()),
        ("foreign", |_, other| other.to_vec()),
    ];
    let mut seen = 0;
    for rel in &files {
        for (what, mutate) in &mutations {
            let case = s.p.path("dist/m");
            let _ = std::fs::remove_dir_all(&case);
            copy_tree(&pristine, &case);
            let other = if rel.ends_with(".onnx") {
                &npz
            } else {
                &foreign
            };
            let bytes = std::fs::read(case.join(rel)).unwrap();
            std::fs::write(case.join(rel), mutate(bytes, other)).unwrap();
            if rel != "manifest.json" && rel != "SHA256SUMS" {
                rehash(&case);
            }
            let run = s.run(&["verify", "dist/m"], &[]);
            assert!(
                run.code == 1 || run.code == 2,
                "{what} {rel}: exit {} (a signal shows as -1): {}",
                run.code,
                run.all()
            );
            assert!(
                run.stderr.contains("error:"),
                "{what} {rel}: no reason: {}",
                run.all()
            );
            seen += 1;
        }
    }
    assert!(seen >= 4 * 8, "every file kind was mutated ({seen} cases)");
    s.assert_untouched("mutated bundles");
}
