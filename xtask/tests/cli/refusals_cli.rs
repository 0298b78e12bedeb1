//! Refusal paths and options that had no test: each asserts the exit code and the message.

use crate::common;

use common::{Scratch, read_json, sha256_hex};

/// `package` refuses a parity report that failed (about the same binaries), naming it.
#[test]
fn package_refuses_a_failed_htp_parity_report() {
    let p = Scratch::tiny();
    p.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "action_step",
        "--jobs",
        "2",
    ])
    .assert_code(0);
    p.run(&["parity", "--backend", "htp", "--only", "action_step"])
        .assert_code(0);
    // The same report, as a failing run would have written it.
    let path = p.path("reports/tiny/parity-htp.json");
    let mut report = read_json(&path);
    report["pass"] = serde_json::Value::Bool(false);
    report["components"][0]["pass"] = serde_json::Value::Bool(false);
    std::fs::write(&path, serde_json::to_vec(&report).unwrap()).unwrap();
    let out = p.path("dist/refused");
    let run = p.package("dist/refused", "action_step", &[]);
    run.assert_refused(2, "HTP parity failed")
        .assert_refused(2, "parity-htp.json");
    assert!(!out.exists());
}

/// `verify` catches a card that no longer matches the bundled reports even when the manifest
/// and SHA256SUMS were re-hashed to match the edited card.
#[test]
fn verify_catches_a_card_edited_with_a_matching_manifest() {
    let p = Scratch::tiny();
    p.run(&["build-ctx", "--soc", "77", "--only", "action_step"])
        .assert_code(0);
    let out = p.path("dist/card");
    p.package("dist/card", "action_step", &[]).assert_code(0);
    let card = std::fs::read_to_string(out.join("README.md")).unwrap();
    let edited = card.replace(
        "| `action_step` | embedded | fp16 |",
        "| `action_step` | embedded | fp32 (fp16 off) |",
    );
    assert_ne!(card, edited, "the card shows the build facts row");
    std::fs::write(out.join("README.md"), &edited).unwrap();
    let manifest_path = out.join("manifest.json");
    let mut manifest = read_json(&manifest_path);
    for f in manifest["files"].as_array_mut().unwrap() {
        if f["path"] == "README.md" {
            f["bytes"] = edited.len().into();
            f["sha256"] = common::sha256_hex(&out.join("README.md")).into();
        }
    }
    std::fs::write(
        &manifest_path,
        serde_json::to_vec_pretty(&manifest).unwrap(),
    )
    .unwrap();
    let sums: String = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{}  {}\n",
                f["sha256"].as_str().unwrap(),
                f["path"].as_str().unwrap()
            )
        })
        .collect();
    std::fs::write(out.join("SHA256SUMS"), sums).unwrap();
    let run = p.run(&["verify", out.to_str().unwrap()]);
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("README.md does not match the reports in the bundle"),
        "{}",
        run.all()
    );
    assert!(!run.stderr.contains("changed: README.md"), "{}", run.all());
}

/// `build-ctx --jobs 2` builds components side by side with the same results as `--jobs 1`.
#[test]
fn jobs_two_builds_every_selected_component() {
    let p = Scratch::tiny();
    let run = p.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "action_context,action_step,llm_split0",
        "--jobs",
        "2",
    ]);
    run.assert_code(0);
    assert!(run.stdout.contains("9 step(s) ran"), "{}", run.all());
    // Two components really ran at once: a step of one overlaps a step of another.
    let report = read_json(&p.path("reports/tiny/build-soc77.json"));
    let spans: Vec<(String, u64, u64)> = report["components"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| {
            let name = c["component"].as_str().unwrap().to_string();
            c["steps"].as_array().unwrap().iter().map(move |s| {
                let d = &s["detail"];
                (
                    name.clone(),
                    d["started_unix_ms"].as_u64().unwrap(),
                    d["finished_unix_ms"].as_u64().unwrap(),
                )
            })
        })
        .collect();
    let overlap = spans
        .iter()
        .any(|(a, s1, e1)| spans.iter().any(|(b, s2, e2)| a != b && s1 < e2 && s2 < e1));
    assert!(overlap, "no two components' steps overlapped: {spans:?}");
    // Overlapping steps say their CPU and peak figures are the process's, not their own.
    let beside: Vec<bool> = report["components"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["steps"].as_array().unwrap().iter())
        .map(|s| s["detail"]["beside_other_steps"] == true)
        .collect();
    assert!(beside.iter().any(|b| *b), "{report}");
    let md = std::fs::read_to_string(p.path("reports/tiny/build-soc77.md")).unwrap();
    assert!(md.contains("(beside other steps)"), "{md}");
    let again = p.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "action_context,action_step,llm_split0",
        "--require-fresh",
    ]);
    again.assert_code(0);
    // A budget no step fits in: the build is refused before it starts, naming every step's
    // need and what was found, and nothing is run or replaced.
    let bins_now = || -> Vec<_> {
        ["action_context", "action_step"]
            .iter()
            .map(|c| sha256_hex(&p.path(&format!("ctx/tiny/{c}_socid77_archv73.bin"))))
            .collect()
    };
    let bins = bins_now();
    let tight = p.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "action_context,action_step",
        "--jobs",
        "2",
        "--force",
        "--max-memory",
        "1M",
    ]);
    tight.assert_refused(
        2,
        "build-ctx refused before starting (nothing was run or replaced)",
    );
    assert_eq!(
        tight.stderr.matches("GB of memory").count(),
        6,
        "every step names its need: {}",
        tight.all()
    );
    assert!(tight.stderr.contains("(--max-memory)"), "{}", tight.all());
    assert_eq!(bins, bins_now(), "a refused build replaces nothing");
    // Every step records its estimate and its own peak: measured with the steps one at a time
    // (beside each other, one step's peak reset clears the other's: rss.rs).
    p.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "action_context,action_step",
        "--jobs",
        "1",
        "--force",
    ])
    .assert_code(0);
    let report = read_json(&p.path("reports/tiny/build-soc77.json"));
    for comp in report["components"].as_array().unwrap() {
        for step in comp["steps"].as_array().unwrap() {
            let d = &step["detail"];
            if step["status"] == "earlier" {
                continue;
            }
            assert!(d["beside_other_steps"].is_null(), "--jobs 1: {step}");
            assert!(d["memory_estimate_mb"].as_f64().unwrap() > 1.0, "{step}");
            assert!(
                d["peak_rss_mb"].as_f64().unwrap() >= d["rss_start_mb"].as_f64().unwrap(),
                "{step}"
            );
        }
    }
    let bad = p.run(&["build-ctx", "--soc", "77", "--max-memory", "12X"]);
    bad.assert_code(2);
    assert!(bad.stderr.contains("unknown unit"), "{}", bad.all());
    let zero = p.run(&["build-ctx", "--soc", "77", "--jobs", "0"]);
    zero.assert_refused(2, "--jobs must be at least 1");
}

/// Bisect on the emulated HTP runs and reports (fp16 rounding, so with a strict threshold a
/// first divergent operator is named).
#[test]
fn bisect_on_the_htp_backend_names_an_operator() {
    let p = Scratch::tiny();
    // Built and measured first: bisect then measures the untapped outputs on that binary, so
    // its figure against the golden is exactly parity's.
    p.run(&["build-ctx", "--soc", "77", "--only", "action_context"])
        .assert_code(0);
    p.run(&["parity", "--backend", "htp", "--only", "action_context"])
        .assert_code(0);
    let measured = read_json(&p.path("reports/tiny/parity-htp.json"))["components"][0]["outputs"]
        [0]["metrics"]["cosine"]
        .as_f64()
        .unwrap();
    let run = p.run(&[
        "bisect",
        "action_context",
        "--backend",
        "htp",
        "--threshold",
        "0.9999999",
    ]);
    run.assert_code(0);
    assert!(
        run.stdout
            .contains("bisect action_context, htp against ORT's CPU EP"),
        "{}",
        run.all()
    );
    assert!(
        run.stdout
            .contains("graph output k_ctx: against the golden cosine"),
        "{}",
        run.all()
    );
    let report = read_json(&p.path("reports/tiny/bisect-action_context-htp.json"));
    let bisected = report["output_vs_golden"]["k_ctx"]["cosine"]
        .as_f64()
        .unwrap();
    assert_eq!(
        bisected, measured,
        "bisect and parity measure the same binary alike"
    );
    assert_eq!(report["backend"], "htp");
    assert!(report["tensors_compared"].as_u64().unwrap() > 0, "{report}");
}

/// A partial parity run (`--only`) merges into the report: the other components' results stay,
/// each with its own time and hashes, instead of being dropped.
#[test]
fn a_partial_parity_run_merges_into_the_report() {
    let p = Scratch::tiny();
    p.run(&["parity", "--backend", "ort"]).assert_code(0);
    let before = read_json(&p.path("reports/tiny/parity-ort.json"));
    let vision_then = before["components"][0]["measured_unix"].as_u64().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    p.run(&["parity", "--backend", "ort", "--only", "action_step"])
        .assert_code(0);
    let after = read_json(&p.path("reports/tiny/parity-ort.json"));
    let comps = after["components"].as_array().unwrap();
    assert_eq!(comps.len(), 7, "{after}");
    assert_eq!(comps[0]["component"], "vision");
    assert_eq!(comps[0]["measured_unix"].as_u64().unwrap(), vision_then);
    assert!(comps[6]["measured_unix"].as_u64().unwrap() > vision_then);
    assert_eq!(after["pass"], true);
    let md = std::fs::read_to_string(p.path("reports/tiny/parity-ort.md")).unwrap();
    assert!(md.contains("vision") && md.contains("action_step"), "{md}");
}
