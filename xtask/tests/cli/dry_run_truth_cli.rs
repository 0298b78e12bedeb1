//! A truthful dry run (issue 27): after a build is interrupted at any point (SIGINT or
//! SIGKILL during conversion, CPU parity or the compile), `build-ctx --dry-run --json` names
//! exactly the steps the next build then runs.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::common::Scratch;

/// (component, step label) of every step the dry run says will run.
fn predicted(p: &Scratch) -> BTreeSet<(String, String)> {
    let run = p.run(&["build-ctx", "--soc", "77", "--dry-run", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("dry run JSON ({e}): {}", run.all()));
    let mut out = BTreeSet::new();
    for c in doc["components"].as_array().unwrap() {
        for s in c["steps"].as_array().unwrap() {
            if s["fresh"] == false {
                out.insert((
                    c["component"].as_str().unwrap().to_string(),
                    s["label"].as_str().unwrap().to_string(),
                ));
            }
        }
    }
    out
}

/// (component, step label) of every step a build's plain progress lines (on stderr) say ran.
fn ran(stderr: &str) -> BTreeSet<(String, String)> {
    stderr
        .lines()
        .filter(|l| l.is_char_boundary(33) && l[33..].starts_with("ran"))
        .map(|l| (l[..16].trim().to_string(), l[17..32].trim().to_string()))
        .filter(|(_, step)| ["convert", "cpu parity", "context binary"].contains(&step.as_str()))
        .collect()
}

/// Starts `build-ctx --force`, waits for `marker` among its progress lines (stderr), then
/// sends `signal`; panics when the marker never came (the interrupt would not be tested).
fn interrupt_at(p: &Scratch, marker: &str, signal: i32) {
    let mut child = p
        .command(&["build-ctx", "--soc", "77", "--force"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = false;
    for line in lines {
        let line = line.unwrap();
        if line.starts_with(marker.split('|').next().unwrap())
            && line.contains(marker.split('|').nth(1).unwrap())
        {
            // SAFETY: a signal to our own child.
            unsafe { libc::kill(child.id() as i32, signal) };
            seen = true;
            break;
        }
    }
    let _ = child.wait();
    assert!(seen, "the build never printed {marker:?}");
}

#[test]
fn after_an_interrupted_build_the_dry_run_predicts_the_next_build() {
    let p = Scratch::tiny();
    p.run(&["build-ctx", "--soc", "77"]).assert_code(0);
    for (marker, signal) in [
        ("vision |convert         running", libc::SIGKILL),
        ("llm_split0 |cpu parity      running", libc::SIGINT),
        ("llm_split1 |context binary  running", libc::SIGKILL),
        ("action_context |cpu parity      running", libc::SIGKILL),
    ] {
        interrupt_at(&p, marker, signal);
        let want = predicted(&p);
        let build = p.run(&["build-ctx", "--soc", "77"]);
        build.assert_code(0);
        assert_eq!(
            want,
            ran(&build.stderr),
            "interrupted at {marker:?} (signal {signal}): the dry run predicted {want:?}\n{}",
            build.all()
        );
        assert!(predicted(&p).is_empty(), "after the build, all fresh");
    }
}

#[test]
fn after_cpu_parity_was_cut_short_the_dry_run_says_the_compile_reruns_too() {
    let p = Scratch::tiny();
    p.run(&["build-ctx", "--soc", "77", "--only", "vision"])
        .assert_code(0);
    // What a Ctrl-C during vision's CPU parity leaves: the convert step recorded, the CPU
    // parity step not, the earlier context binary still on disk.
    let record = p.path("ctx/tiny/vision.record.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    doc["steps"].as_object_mut().unwrap().remove("cpu_parity");
    std::fs::write(&record, doc.to_string()).unwrap();
    let want = predicted(&p);
    let expected: BTreeSet<(String, String)> =
        [("vision", "cpu parity"), ("vision", "context binary")]
            .into_iter()
            .map(|(c, s)| (c.to_string(), s.to_string()))
            .collect();
    assert!(want.is_superset(&expected), "{want:?}");
    let build = p.run(&["build-ctx", "--soc", "77"]);
    build.assert_code(0);
    assert_eq!(want, ran(&build.stderr), "{}", build.all());
}
