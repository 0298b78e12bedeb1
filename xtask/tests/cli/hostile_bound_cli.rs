//! The hostile suite, part five: every file of a bundle bound. A bundle holding external data
//! (`llm_split0`), the trace (with `vision`) and an HTP parity report has each of its files
//! flipped, deleted (and dropped from the manifest) or replaced by another file's bytes, with
//! `manifest.json` and `SHA256SUMS` recomputed each time (of those two themselves: the file
//! alone changed), as someone with write access to the repository would. Each case goes
//! through `verify` and through `fetch` (the `hf` double serving it): none is accepted, each
//! ends in exit 1 or 2 naming the file, and `fetch` leaves `ctx/`, `onnx/` and `golden/`
//! byte for byte as they were.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::{Run, copy_tree, read_json};
use crate::hostile_bundle_cli::{remote_tree, with_hf};
use crate::hostile_bundle_refs_cli::snapshot;
use crate::sandbox::Sandbox;

/// `vision` and `llm_split0` built, measured on the HTP and packaged into `dist/b`.
pub(crate) fn bound_bundle(s: &Sandbox) -> PathBuf {
    let only = "vision,llm_split0";
    s.run(&["build-ctx", "--soc", "77", "--only", only], &[])
        .assert_code(0);
    s.run(&["parity", "--backend", "htp", "--only", only], &[])
        .assert_code(0);
    s.p.package("dist/b", only, &[]).assert_code(0);
    s.p.path("dist/b")
}

/// Drops the entries of files no longer there and recomputes every other entry's size and
/// sha256, and SHA256SUMS, as a forger would.
pub(crate) fn rehash_present(dir: &Path) {
    let mut m = read_json(&dir.join("manifest.json"));
    let files = m["files"].as_array_mut().unwrap();
    files.retain(|f| dir.join(f["path"].as_str().unwrap()).exists());
    let mut sums = String::new();
    for f in files.iter_mut() {
        let path = dir.join(f["path"].as_str().unwrap());
        f["bytes"] = std::fs::metadata(&path).unwrap().len().into();
        f["sha256"] = crate::common::sha256_hex(&path).into();
        sums += &format!(
            "{}  {}\n",
            f["sha256"].as_str().unwrap(),
            f["path"].as_str().unwrap()
        );
    }
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_vec_pretty(&m).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.join("SHA256SUMS"), sums).unwrap();
}

#[derive(Clone, Copy, Debug)]
enum Change {
    Flipped,
    Deleted,
    Replaced,
}

/// Applies `change` to `rel` in bundle `dir`, then re-hashes the manifest unless `rel` is the
/// manifest or its sums.
fn apply(dir: &Path, rel: &str, change: Change) {
    let path = dir.join(rel);
    match change {
        Change::Deleted => std::fs::remove_file(&path).unwrap(),
        Change::Flipped => {
            let mut bytes = std::fs::read(&path).unwrap();
            let at = bytes.len() / 2;
            bytes[at] ^= 0xff;
            std::fs::write(&path, bytes).unwrap();
        }
        Change::Replaced => {
            let other = match rel.ends_with(".npz") {
                true => "ctx/vision_socid77_archv73_ctx.onnx",
                false => "golden/vision_io.npz",
            };
            std::fs::copy(dir.join(other), &path).unwrap();
        }
    }
    if rel != "manifest.json" && rel != "SHA256SUMS" {
        rehash_present(dir);
    }
}

/// What the project's laid-out folders hold (what a refused fetch must leave as it was).
fn layout(s: &Sandbox) -> BTreeMap<String, BTreeMap<String, Vec<u8>>> {
    ["ctx", "onnx", "golden"]
        .iter()
        .map(|d| (d.to_string(), snapshot(&s.p.path(d))))
        .collect()
}

/// A refusal of case `case`: exit 1 or 2 (never 0, never a signal), the file named.
fn refused(run: &Run, rel: &str, case: &str) -> Result<(), String> {
    if run.code != 1 && run.code != 2 {
        return Err(format!("{case}: exit {}\n{}", run.code, run.all()));
    }
    if !run.stderr.contains(rel) || run.stderr.contains("panicked") {
        return Err(format!("{case}: {rel} not named\n{}", run.all()));
    }
    Ok(())
}

#[test]
fn every_file_flipped_deleted_or_replaced_is_refused_by_verify_and_by_fetch() {
    let s = Sandbox::new();
    let pristine = bound_bundle(&s);
    let files: Vec<String> = snapshot(&pristine).into_keys().collect();
    for must in [
        "onnx/llm_split0/llm_split0.onnx.data",
        "golden/trace.json",
        "golden/trace.npz",
        "reports/parity-htp.json",
        "README.md",
    ] {
        assert!(files.iter().any(|f| f == must), "{must} not in {files:?}");
    }
    let before = layout(&s);
    let (mut cases, mut failures) = (0, Vec::new());
    for rel in &files {
        for change in [Change::Flipped, Change::Deleted, Change::Replaced] {
            let forged = s.p.path("dist/m");
            let _ = std::fs::remove_dir_all(&forged);
            copy_tree(&pristine, &forged);
            apply(&forged, rel, change);
            let case = format!("{rel} {change:?}");
            let verify = s.run(&["verify", "dist/m"], &[]);
            failures.extend(refused(&verify, rel, &format!("verify: {case}")).err());

            let remote = remote_tree(&s);
            let _ = std::fs::remove_dir_all(&remote);
            copy_tree(&forged, &remote);
            let fetch = with_hf(&s, &["fetch", "--repo", "someone/tiny"]);
            failures.extend(refused(&fetch, rel, &format!("fetch: {case}")).err());
            if layout(&s) != before {
                failures.push(format!("fetch: {case}: ctx/, onnx/ or golden/ changed"));
            }
            cases += 2;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {cases} cases not refused as they must be:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(cases, files.len() * 6);
    // The report deleted from bundle.json's files too (two files edited): named, not left to
    // show as a card that no longer renders the same.
    let forged = s.p.path("dist/m");
    let _ = std::fs::remove_dir_all(&forged);
    copy_tree(&pristine, &forged);
    let report = "reports/parity-htp.json";
    std::fs::remove_file(forged.join(report)).unwrap();
    let mut info = read_json(&forged.join("reports/bundle.json"));
    info["files"]
        .as_array_mut()
        .unwrap()
        .retain(|f| f["path"] != report);
    std::fs::write(
        forged.join("reports/bundle.json"),
        serde_json::to_vec_pretty(&info).unwrap(),
    )
    .unwrap();
    rehash_present(&forged);
    let says =
        format!("{report} is missing: reports/bundle.json says HTP parity measured every binary");
    s.run(&["verify", "dist/m"], &[]).assert_refused(2, &says);
    let remote = remote_tree(&s);
    let _ = std::fs::remove_dir_all(&remote);
    copy_tree(&forged, &remote);
    with_hf(&s, &["fetch", "--repo", "someone/tiny"]).assert_refused(2, &says);
    // The pristine bundle passes both, so the refusals above are the changes'.
    s.run(&["verify", "dist/b"], &[]).assert_code(0);
    let remote = remote_tree(&s);
    let _ = std::fs::remove_dir_all(&remote);
    copy_tree(&pristine, &remote);
    with_hf(&s, &["fetch", "--repo", "someone/tiny"]).assert_code(0);
    s.assert_untouched("every file bound");
}

/// The manifest is a closed type: an unknown role, format or field is refused by both
/// commands, named.
#[test]
fn a_manifest_with_an_unknown_role_format_or_field_is_refused_by_name() {
    let s = Sandbox::new();
    s.run(&["build-ctx", "--soc", "77", "--only", "action_step"], &[])
        .assert_code(0);
    s.p.package("dist/t", "action_step", &[]).assert_code(0);
    type Edit = fn(&mut serde_json::Value);
    let cases: [(&str, Edit); 3] = [
        ("evil", |m| m["files"][0]["role"] = "evil".into()),
        ("other.v9", |m| m["format"] = "other.v9".into()),
        ("signer", |m| m["signer"] = "me".into()),
    ];
    for (name, edit) in cases {
        let dir = s.p.path("dist/m");
        let _ = std::fs::remove_dir_all(&dir);
        copy_tree(&s.p.path("dist/t"), &dir);
        let mut m = read_json(&dir.join("manifest.json"));
        edit(&mut m);
        std::fs::write(
            dir.join("manifest.json"),
            serde_json::to_vec_pretty(&m).unwrap(),
        )
        .unwrap();
        let says = format!("`{name}`");
        s.run(&["verify", "dist/m"], &[]).assert_refused(2, &says);
        let remote = remote_tree(&s);
        let _ = std::fs::remove_dir_all(&remote);
        copy_tree(&dir, &remote);
        with_hf(&s, &["fetch", "--repo", "someone/tiny"])
            .assert_refused(2, &says)
            .assert_refused(2, "nothing was laid out");
    }
}
