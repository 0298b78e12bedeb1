//! `cargo xtask run --fp32 …` and `--attribute`: what-if chains with some components on ORT's
//! CPU EP in fp32, and the ranking of which component to fix first (tiny model, QNN CPU: the
//! mechanics are the same on the HTP, where a chain takes much longer).

use crate::common;

use common::{Scratch, read_json};

#[test]
fn fp32_components_run_on_the_reference_and_get_their_own_report() {
    let p = Scratch::tiny();
    let run = p.run(&[
        "run",
        "--backend",
        "cpu",
        "--iters",
        "1",
        "--warmup",
        "0",
        "--fp32",
        "llm_split0,vision",
    ]);
    run.assert_code(0);
    let stem = "reports/tiny/run-cpu-fp32-vision+llm_split0-iters1-warmup0";
    assert!(
        run.stdout.contains(&format!("{stem}.html")),
        "{}",
        run.all()
    );
    let report = read_json(&p.path(&format!("{stem}.json")));
    assert_eq!(report["fp32"], serde_json::json!(["vision", "llm_split0"]));
    let md = std::fs::read_to_string(p.path(&format!("{stem}.md"))).unwrap();
    assert!(
        md.contains("What-if: **vision, llm_split0** ran on ORT's CPU EP in fp32"),
        "{md}"
    );
    // Latency is still per component, whichever session ran it.
    let names: Vec<&str> = report["latency"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"vision") && names.contains(&"llm_split1"),
        "{names:?}"
    );
    assert!(
        !p.path("reports/tiny/run-cpu-iters1-warmup0.json").exists(),
        "the plain report is not overwritten"
    );
}

#[test]
fn attribute_ranks_every_component_and_says_how_long_it_took() {
    let p = Scratch::tiny();
    let run = p.run(&[
        "run",
        "--backend",
        "cpu",
        "--iters",
        "1",
        "--warmup",
        "0",
        "--attribute",
    ]);
    run.assert_code(0);
    assert!(
        run.stdout
            .contains("which component to fix first (7 what-if chains"),
        "{}",
        run.all()
    );
    let report = read_json(&p.path("reports/tiny/run-cpu-attribute-iters1-warmup0.json"));
    let a = &report["attribution"];
    assert_eq!(a["boundary"], "normalized actions (before clipping)");
    let rows = a["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 7, "{a}");
    let removed: Vec<f64> = rows
        .iter()
        .map(|r| r["removed"].as_f64().unwrap())
        .collect();
    assert!(
        removed.windows(2).all(|w| w[0] >= w[1]),
        "ranked best first: {removed:?}"
    );
    assert!(a["took_ms"].as_f64().unwrap() > 0.0);
    // Every what-if but vision's reuses vision's output (same inputs, same session).
    assert!(a["memo_hits"].as_u64().unwrap() >= 6, "{a}");
    let md = std::fs::read_to_string(p.path("reports/tiny/run-cpu-attribute-iters1-warmup0.md"))
        .unwrap();
    assert!(md.contains("## Which component to fix first"), "{md}");
    let html =
        std::fs::read_to_string(p.path("reports/tiny/run-cpu-attribute-iters1-warmup0.html"))
            .unwrap();
    assert!(html.contains("<th>component in fp32</th>"), "{html}");
    // The ranking sits at the top of the page, before the first plot.
    assert!(
        html.find("<h2>Fix first</h2>") < html.find("<svg"),
        "{html}"
    );
    assert!(
        !p.path("reports/tiny/run-cpu-iters1-warmup0.json").exists(),
        "an --attribute run has its own report stem"
    );
}

#[test]
fn what_ifs_are_refused_with_the_reason() {
    let p = Scratch::tiny();
    let run = p.run(&["run", "--backend", "cpu", "--fp32", "vison"]);
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("--fp32 names no component [\"vison\"] of model `tiny`"),
        "{}",
        run.all()
    );
    let run = p.run(&["run", "--backend", "ort", "--attribute"]);
    run.assert_refused(2, "use --backend cpu or htp");
}
