//! One verdict, every report: a failed chain says FAIL at the top of its Markdown, on its
//! failing rows, in its JSON and its HTML; no boundary passes a gate it failed; a failed run
//! names the next steps, and every command a failing fixture suggests runs (never exit 2).

use crate::common;

use common::{Run, Scratch, read_json};

/// Sets `[host.gate] actions_max_abs.<backend>` of the scratch tiny model.
fn actions_gate(p: &Scratch, backend: &str, value: &str) {
    let path = p.path("recipes/tiny/model.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut doc: toml_edit::DocumentMut = text.parse().unwrap();
    doc["host"]["gate"]["actions_max_abs"][backend] =
        toml_edit::value(value.parse::<f64>().unwrap());
    std::fs::write(&path, doc.to_string()).unwrap();
}

/// The `cargo xtask …` commands a run suggests: quoted (in backticks) after a `hint:` anywhere
/// in a line, or on a `next:` line.
pub fn suggested_commands(run: &Run) -> Vec<Vec<String>> {
    let text = format!("{}\n{}", run.stdout, run.stderr);
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let Some(at) = line.find("hint:").or_else(|| line.find("next:")) else {
            continue;
        };
        let line = &line[at..];
        let mut rest = line;
        while let Some(start) = rest.find("`cargo xtask ") {
            let after = &rest[start + 1..];
            let Some(end) = after.find('`') else { break };
            let cmd = &after[..end];
            out.push(
                cmd.trim_start_matches("cargo xtask ")
                    .split_whitespace()
                    .map(str::to_string)
                    .collect(),
            );
            rest = &after[end + 1..];
        }
        if let Some(cmd) = line.strip_prefix("next: cargo xtask ") {
            out.push(cmd.split_whitespace().map(str::to_string).collect());
        }
    }
    out
}

/// Runs every suggested command in the project; none may end in exit 2 (bad input: a hint
/// that does not run as printed).
pub fn run_each(p: &Scratch, suggested: &[Vec<String>]) {
    for cmd in suggested {
        let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        let run = p.run(&args);
        assert_ne!(
            run.code,
            2,
            "the suggested `cargo xtask {}` does not run as printed:\n{}",
            cmd.join(" "),
            run.all()
        );
    }
}

/// A boundary of a run report that passes although its figures fail the gate it names.
fn passes_a_failed_gate(b: &serde_json::Value) -> bool {
    let pass = b["pass"].as_bool().unwrap();
    let Some(m) = b["metrics"].as_object() else {
        return false;
    };
    let cos = m["cosine"].as_f64().unwrap_or(f64::NAN);
    let max_abs = m["max_abs_err"].as_f64().unwrap_or(f64::NAN);
    let cos_gate = b["gate"]["min_cosine"].as_f64().unwrap();
    let abs_gate = b["max_abs_gate"]["max_abs"].as_f64();
    let fails =
        cos.is_nan() || cos < cos_gate || abs_gate.is_some_and(|g| max_abs.is_nan() || max_abs > g);
    pass && fails
}

#[test]
fn a_failed_chain_is_fail_in_every_report_and_names_next_steps_that_run() {
    let p = Scratch::tiny();
    actions_gate(&p, "ort", "1e-12");
    let run = p.run(&["run", "--backend", "ort", "--iters", "1", "--warmup", "0"]);
    run.assert_code(1);
    assert!(run.stdout.contains("run ort: FAIL"), "{}", run.all());
    let stem = "reports/tiny/run-ort-iters1-warmup0";

    // Markdown: FAIL at the top (before any table) and on the actions row.
    let md = std::fs::read_to_string(p.path(&format!("{stem}.md"))).unwrap();
    let verdict_at = md.find("**Verdict: FAIL**").expect(&md);
    assert!(verdict_at < md.find("## Chain parity").unwrap(), "{md}");
    let actions_row = md
        .lines()
        .find(|l| l.starts_with("| actions |"))
        .expect(&md);
    assert!(actions_row.contains("**FAIL**"), "{actions_row}");
    assert!(actions_row.contains("max abs ≤ 1e-12"), "{actions_row}");
    assert!(md.contains("Next steps:"), "{md}");

    // JSON: the actions boundary fails with its gate and source; no boundary passes a gate it
    // failed; the top-level verdict agrees with the rows.
    let json = read_json(&p.path(&format!("{stem}.json")));
    assert_eq!(json["pass"], false);
    let boundaries = json["boundaries"].as_array().unwrap();
    let actions = boundaries.iter().find(|b| b["name"] == "actions").unwrap();
    assert_eq!(actions["pass"], false, "{actions}");
    assert_eq!(actions["status"], "fail");
    assert_eq!(actions["max_abs_gate"]["max_abs"], 1e-12);
    assert!(
        actions["max_abs_gate"]["source"]
            .as_str()
            .unwrap()
            .contains("model.toml [host.gate] actions_max_abs.ort"),
        "{actions}"
    );
    for b in boundaries {
        assert!(!passes_a_failed_gate(b), "passes a failed gate: {b}");
        assert!(
            b["gate"]["source"].as_str().is_some_and(|s| !s.is_empty()),
            "{b}"
        );
    }
    assert!(!json["next_steps"].as_array().unwrap().is_empty());

    // HTML: the verdict box says FAIL.
    let html = std::fs::read_to_string(p.path(&format!("{stem}.html"))).unwrap();
    assert!(html.contains("<b class=\"word\">FAIL</b>"), "no FAIL box");

    let suggested = suggested_commands(&run);
    assert!(
        !suggested.is_empty(),
        "no next step printed:\n{}",
        run.all()
    );
    run_each(&p, &suggested);
}

#[test]
fn a_failed_chain_on_a_qnn_backend_suggests_attribution_and_a_bisect_that_run() {
    let p = Scratch::tiny();
    actions_gate(&p, "cpu", "1e-12");
    let run = p.run(&["run", "--backend", "cpu", "--iters", "1", "--warmup", "0"]);
    run.assert_code(1);
    let suggested = suggested_commands(&run);
    let joined: Vec<String> = suggested.iter().map(|c| c.join(" ")).collect();
    assert!(
        joined.iter().any(|c| c.contains("--attribute")),
        "{joined:?}\n{}",
        run.all()
    );
    assert!(
        joined
            .iter()
            .any(|c| c.starts_with("bisect ") && c.contains("--backend cpu")),
        "{joined:?}"
    );
    run_each(&p, &suggested);
}

/// Every wait is announced: `parity` and `run` say what runs (and, from an earlier report of
/// the model and backend, how long) before the runtime is checked or anything runs; a first
/// `run --backend htp` after `parity --backend htp` estimates from the parity report.
#[test]
fn parity_and_run_announce_what_runs_and_its_estimate_first() {
    let p = Scratch::tiny();
    p.run(&["build-ctx", "--soc", "77"]).assert_code(0);
    let first = |run: &Run, what: &str| -> usize {
        run.stderr
            .lines()
            .position(|l| l.starts_with(what))
            .unwrap_or_else(|| panic!("no `{what}` line:\n{}", run.all()))
    };
    let parity = p.run(&["parity", "--backend", "htp"]);
    parity.assert_code(0);
    let announced = first(&parity, "parity htp: 7 component(s) of `tiny`");
    assert!(announced < first(&parity, "runtime:"), "{}", parity.all());
    assert!(
        parity.stderr.contains("no earlier report"),
        "{}",
        parity.all()
    );
    let again = p.run(&["parity", "--backend", "htp", "--only", "action_context"]);
    assert!(
        again
            .stderr
            .contains("parity htp: 1 component(s) of `tiny`")
            && again.stderr.contains("about "),
        "{}",
        again.all()
    );
    let run = p.run(&["run", "--backend", "htp", "--iters", "1", "--warmup", "0"]);
    assert_ne!(run.code, 2, "{}", run.all());
    let announced = first(&run, "run htp: 1 chain(s)");
    assert!(announced < first(&run, "runtime:"), "{}", run.all());
    assert!(
        run.stderr
            .contains("from the components' run times in reports/tiny/parity-htp.json"),
        "{}",
        run.all()
    );
}

/// A quantized component's failures point at its quantization: a failing gate at the build's
/// CPU stage (its QDQ simulation) and a chain failed by it both suggest `bisect --qdq`, never a
/// float bisect, and every suggested command runs as printed.
#[test]
fn a_quantized_component_s_failures_suggest_the_qdq_bisect_and_every_hint_runs() {
    let p = Scratch::tiny();
    common::link_quantizer(&p);
    let recipe = p.path("recipes/tiny/action_step.toml");
    let text = std::fs::read_to_string(&recipe).unwrap();
    // A gate stricter than its measured figure: the CPU stage fails the build.
    std::fs::write(
        &recipe,
        format!("{text}\n[quantize]\nprecision = \"w8a16\"\n[quantize.gates.w8a16]\nmin_cosine = 0.9999999\n"),
    )
    .unwrap();
    let build = p.run(&["build-ctx", "--soc", "77", "--only", "action_step"]);
    build.assert_code(1);
    let hints = suggested_commands(&build);
    let joined: Vec<String> = hints.iter().map(|c| c.join(" ")).collect();
    assert!(
        joined
            .iter()
            .any(|c| c == "bisect action_step --qdq --model tiny"),
        "{joined:?}\n{}",
        build.all()
    );
    assert!(
        !joined.iter().any(|c| c.contains("--backend cpu")),
        "{joined:?}"
    );
    run_each(&p, &hints);

    // At the default gate it builds; the chain on the QNN CPU backend then fails by it (its
    // actions against the float golden), and names it.
    std::fs::write(
        &recipe,
        format!("{text}\n[quantize]\nprecision = \"w8a16\"\n"),
    )
    .unwrap();
    p.run(&["build-ctx", "--soc", "77"]).assert_code(0);
    let run = p.run(&["run", "--backend", "cpu", "--iters", "1", "--warmup", "0"]);
    run.assert_code(1);
    let hints = suggested_commands(&run);
    let joined: Vec<String> = hints.iter().map(|c| c.join(" ")).collect();
    assert!(
        joined
            .iter()
            .any(|c| c == "bisect action_step --qdq --model tiny"),
        "{joined:?}\n{}",
        run.all()
    );
    run_each(&p, &hints);
}
