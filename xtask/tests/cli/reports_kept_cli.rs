//! Shipped reports kept: a quick run (`--iters 2`) writes under a variant name and
//! `--no-report` writes nothing, so the default run's report stays; a no-op build keeps each
//! step's time from when it last ran, marked as restored, instead of zeros.

use crate::common::{Scratch, read_json};

/// Every step's (component, step, seconds) of the build report.
fn step_times(p: &Scratch) -> Vec<(String, String, f64)> {
    let report = read_json(&p.path("reports/tiny/build-soc77.json"));
    let mut out = Vec::new();
    for c in report["components"].as_array().unwrap() {
        for s in c["steps"].as_array().unwrap() {
            out.push((
                c["component"].as_str().unwrap().to_string(),
                s["step"].as_str().unwrap().to_string(),
                s["seconds"].as_f64().unwrap(),
            ));
        }
    }
    out
}

#[test]
fn a_quick_run_and_a_no_op_build_leave_the_shipped_reports_as_they_were() {
    let p = Scratch::tiny();
    p.run(&["build-ctx", "--soc", "77"]).assert_code(0);
    let built = step_times(&p);
    assert!(built.iter().all(|(_, _, s)| *s > 0.0), "{built:?}");
    p.run(&["run", "--backend", "cpu"]).assert_code(0);
    let default_run = std::fs::read(p.path("reports/tiny/run-cpu.json")).unwrap();

    let quick = p.run(&["run", "--backend", "cpu", "--iters", "2", "--warmup", "1"]);
    quick.assert_code(0);
    assert!(
        quick
            .stdout
            .contains("reports/tiny/run-cpu-iters2-warmup1.html"),
        "{}",
        quick.all()
    );
    let variant = read_json(&p.path("reports/tiny/run-cpu-iters2-warmup1.json"));
    assert_eq!(
        (variant["iters"].as_u64(), variant["warmup"].as_u64()),
        (Some(2), Some(1))
    );
    let none = p.run(&["run", "--backend", "cpu", "--iters", "1", "--no-report"]);
    none.assert_code(0);
    assert!(
        none.stdout.contains("no report written (--no-report)"),
        "{}",
        none.all()
    );
    assert!(!p.path("reports/tiny/run-cpu-iters1-warmup2.json").exists());
    assert_eq!(
        std::fs::read(p.path("reports/tiny/run-cpu.json")).unwrap(),
        default_run,
        "the default run's report was overwritten"
    );

    let noop = p.run(&["build-ctx", "--soc", "77"]);
    noop.assert_code(0);
    assert!(
        noop.stdout.contains("0 step(s) ran, 21 fresh"),
        "{}",
        noop.all()
    );
    assert_eq!(
        step_times(&p),
        built,
        "a no-op build changed the step times"
    );
    let report = read_json(&p.path("reports/tiny/build-soc77.json"));
    for c in report["components"].as_array().unwrap() {
        for s in c["steps"].as_array().unwrap() {
            assert!(s["seconds_restored_from_unix"].as_u64().unwrap() > 0, "{s}");
        }
    }
    let md = std::fs::read_to_string(p.path("reports/tiny/build-soc77.md")).unwrap();
    assert_eq!(md.matches("(restored: last run)").count(), 21, "{md}");
}
