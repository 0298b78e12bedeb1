//! Output manners (issue 27): native library output kept out of the tool's stderr (and shown
//! with -v), progress lines without a terminal, one JSON document with a schema_version,
//! shell completions, flag suggestions, did-you-mean for names.

use crate::common::{Run, Scratch};

/// What the QNN HTP library prints on stderr when it loads (`LIBNATIVE: No alternate …`).
const NATIVE: &str = "LIBNATIVE";

#[track_caller]
fn no_native_noise(run: &Run, what: &str) {
    assert!(
        !run.stderr.contains(NATIVE) && !run.stdout.contains(NATIVE),
        "{what}: native output leaked: {}",
        run.all()
    );
}

#[track_caller]
fn json_document(run: &Run, command: &str) -> serde_json::Value {
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "{command} --json: not one JSON document ({e}): {}",
            run.all()
        )
    });
    assert_eq!(doc["schema_version"], 1, "{}", run.all());
    assert_eq!(doc["command"], command, "{}", run.all());
    doc
}

#[test]
fn native_output_goes_to_the_log_unless_verbose_and_json_is_one_document() {
    let p = Scratch::tiny();
    let doctor = p.run(&["doctor"]);
    doctor.assert_code(0);
    no_native_noise(&doctor, "doctor");
    // The control: the HTP library does print it, and -v shows it.
    let verbose = p.run(&["-v", "doctor"]);
    verbose.assert_code(0);
    assert!(verbose.stderr.contains(NATIVE), "{}", verbose.all());
    let log = std::fs::read_to_string(p.path("reports/tiny/logs/native-doctor.log")).unwrap();
    assert!(log.contains(NATIVE), "{log}");

    let parity = p.run(&["parity", "--backend", "cpu", "--json"]);
    parity.assert_code(0);
    no_native_noise(&parity, "parity --backend cpu");
    let doc = json_document(&parity, "parity");
    assert_eq!(doc["exit_code"], 0);
    assert_eq!(doc["report"]["backend"], "cpu", "{}", parity.all());
    // The human lines moved to stderr.
    assert!(
        parity.stderr.contains("PASS  vision [cpu]"),
        "{}",
        parity.all()
    );

    let doctor = p.run(&["doctor", "--json"]);
    let doc = json_document(&doctor, "doctor");
    assert!(
        doc["report"]["backends"].as_array().unwrap().len() == 3,
        "{doc}"
    );

    // An error is a JSON document too (exit 2, the message in `error`).
    let bad = p.run(&["parity", "--backend", "cpu", "--json", "--only", "nope"]);
    bad.assert_code(2);
    let doc = json_document(&bad, "parity");
    assert!(doc["error"].as_str().unwrap().contains("nope"), "{doc}");
}

#[test]
fn a_built_model_runs_verifies_and_packages_without_native_noise_with_progress_per_component() {
    let p = Scratch::tiny();
    let build = p.run(&["build-ctx", "--soc", "77"]);
    build.assert_code(0);
    no_native_noise(&build, "build-ctx");
    let parity = p.run(&["parity", "--backend", "htp"]);
    parity.assert_code(0);
    no_native_noise(&parity, "parity --backend htp");

    // Acceptance: no terminal here, so a line per component of the chain.
    let run = p.run(&[
        "run",
        "--backend",
        "htp",
        "--iters",
        "1",
        "--warmup",
        "0",
        "--json",
    ]);
    run.assert_code(0);
    no_native_noise(&run, "run --backend htp");
    for comp in [
        "vision",
        "llm_split0",
        "llm_split1",
        "llm_split2",
        "llm_split3",
        "action_context",
        "action_step",
    ] {
        assert!(
            run.stderr
                .lines()
                .any(|l| l.starts_with("run htp:") && l.contains(&format!(" {comp} ran in"))),
            "no progress line for {comp}: {}",
            run.all()
        );
    }
    let doc = json_document(&run, "run");
    assert_eq!(doc["report"]["backend"], "htp");
    assert_eq!(doc["report"]["pass"], true);

    let package = p.package("dist/b", "action_context", &[]);
    package.assert_code(0);
    no_native_noise(&package, "package");
    let out = p.path("dist/b");
    let verify = p.run(&["verify", out.to_str().unwrap(), "--json"]);
    verify.assert_code(0);
    no_native_noise(&verify, "verify");
    assert_eq!(json_document(&verify, "verify")["report"]["verified"], true);
}

#[test]
fn completions_flags_and_suggestions_follow_cli_conventions() {
    let p = Scratch::tiny();
    let bash = p.run(&["completions", "bash"]);
    bash.assert_code(0);
    assert!(bash.stdout.contains("complete -F"), "{}", bash.all());
    assert!(bash.stdout.contains("build-ctx"), "{}", bash.all());

    let typo = p.run(&["build-ctx", "--sco", "77"]);
    typo.assert_code(2);
    assert!(typo.stderr.contains("'--soc'"), "{}", typo.all());

    let quiet = p.run(&["-q", "parity", "--backend", "cpu"]);
    quiet.assert_code(0);
    assert!(quiet.stdout.contains("PASS"), "{}", quiet.all());
    assert!(
        !quiet.stdout.contains('\x1b'),
        "no colour without a terminal: {}",
        quiet.all()
    );
    let always = p.run(&["--color", "always", "parity", "--backend", "cpu"]);
    assert!(always.stdout.contains("\x1b[1;32mPASS"), "{}", always.all());
}

#[test]
fn errors_name_one_fix_and_the_likely_typo() {
    let p = Scratch::tiny();
    // No binaries: ONE build command for all, exit 2 for run and parity alike.
    for args in [
        &["run", "--backend", "htp"][..],
        &["parity", "--backend", "htp"][..],
    ] {
        let run = p.run(args);
        run.assert_refused(
            2,
            "build them with one command: `cargo xtask build-ctx --soc 77 --model tiny`",
        );
        assert_eq!(
            run.stderr.matches("cargo xtask build-ctx").count(),
            1,
            "{}",
            run.all()
        );
        assert!(!run.stderr.contains("os error"), "{}", run.all());
    }
    p.run(&["bisect", "visoin", "--backend", "cpu"])
        .assert_refused(2, "unknown component `visoin` (did you mean `vision`?)");
    let help = p.run(&["bisect", "-h"]);
    assert!(
        help.stdout.contains("[possible values: cpu, htp]"),
        "{}",
        help.all()
    );
    p.run(&["parity", "--backend", "cpu", "--model", "tinny"])
        .assert_refused(2, "no recipe for model `tinny` (did you mean `tiny`?)");

    // A typo in a recipe's golden path: its line first, then the recipe fix before how to obtain.
    let recipe = p.path("recipes/tiny/vision.toml");
    let text = std::fs::read_to_string(&recipe).unwrap();
    std::fs::write(&recipe, text.replace("vision_io.npz", "vision_oi.npz")).unwrap();
    let typo = p.run(&["parity", "--backend", "cpu"]);
    typo.assert_refused(
        2,
        "recipes/tiny/vision.toml:8: golden.file = \"golden/tiny/vision_oi.npz\": not found (did you mean `vision_io.npz`?)",
    );
    assert!(
        typo.stderr
            .contains("fix the recipe line(s) above if a name is mistyped; else how to obtain"),
        "{}",
        typo.all()
    );
    std::fs::write(&recipe, text).unwrap();

    // A missing wrapper is called missing, and a plain rebuild (no --force) is suggested.
    p.run(&["build-ctx", "--soc", "77", "--only", "action_context"])
        .assert_code(0);
    std::fs::remove_file(p.path("ctx/tiny/action_context_socid77_archv73_ctx.onnx")).unwrap();
    let package = p.package("dist/x", "action_context", &[]);
    package.assert_refused(2, "action_context_socid77_archv73_ctx.onnx is missing");
    assert!(!package.stderr.contains("--force"), "{}", package.all());
    assert!(
        !package.stderr.contains("not a readable"),
        "{}",
        package.all()
    );
}

#[test]
fn lint_deny_fails_ci_on_findings_and_edge_cases_need_v() {
    let p = Scratch::tiny();
    std::fs::create_dir_all(p.path("reports/tiny")).unwrap();
    std::fs::copy(
        crate::common::committed().join("reports/tiny/conformance.json"),
        p.path("reports/tiny/conformance.json"),
    )
    .unwrap();
    let lint = p.run(&["lint", "--deny"]);
    lint.assert_code(0);
    assert!(lint.stdout.contains("-v lists them"), "{}", lint.all());
    assert!(!lint.stdout.contains("DEVIATES"), "{}", lint.all());
    let verbose = p.run(&["-v", "lint"]);
    assert!(verbose.stdout.contains("DEVIATES"), "{}", verbose.all());
    // A report that covers nothing: every operator is a finding, and --deny fails.
    let report = p.path("reports/tiny/conformance.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    doc["rows"] = serde_json::json!([]);
    doc["ops"] = serde_json::json!([]);
    let empty = p.path("empty-conformance.json");
    std::fs::write(&empty, doc.to_string()).unwrap();
    let denied = p.run(&["lint", "--deny", "--report", empty.to_str().unwrap()]);
    denied.assert_code(1);
    p.run(&["lint", "--report", empty.to_str().unwrap()])
        .assert_code(0);
    // The help says what the exit codes just were: 0 without --deny, 1 with it.
    for help in [
        crate::common::help(&["lint"]),
        crate::common::help::<&str>(&[]),
    ] {
        let line = help
            .lines()
            .find(|l| l.contains("conformance report finds deviating"))
            .unwrap_or_else(|| panic!("{help}"));
        assert!(
            !line.contains("never fails") && line.contains("--deny: 1"),
            "{line}"
        );
    }
}
