//! The HTML pages read top first: the verdict (and what failed) before any plot, one title,
//! gate lines on the cosine plots, every latency sample kept in the JSON and drawn with an
//! "n < 10" badge when there are few; bisect states a verdict with the next command and does
//! not list "top operators" when nothing deviates beyond rounding.

use crate::common::{Scratch, read_json};

#[test]
fn the_run_page_opens_with_its_verdict_and_keeps_every_latency_sample() {
    let p = Scratch::tiny();
    p.run(&["run", "--backend", "cpu", "--iters", "2", "--warmup", "0"])
        .assert_code(0);
    let report = read_json(&p.path("reports/tiny/run-cpu-iters2-warmup0.json"));
    for l in report["latency"].as_array().unwrap() {
        let samples = l["samples_ms"].as_array().unwrap();
        // 2 chains: one sample per call (action_step is called once per Euler step).
        assert_eq!(samples.len() as u64, l["samples"].as_u64().unwrap(), "{l}");
        assert!(samples.len() >= 2, "{l}");
        assert!(samples.iter().all(|s| s.as_f64().unwrap() > 0.0), "{l}");
    }
    assert_eq!(report["min_cosine_gate"], 0.999);
    let html = std::fs::read_to_string(p.path("reports/tiny/run-cpu-iters2-warmup0.html")).unwrap();
    let verdict = html.find(r#"<div class="verdict pass"><b class="word">PASS</b>"#);
    assert!(verdict.is_some() && verdict < html.find("<svg"), "{html}");
    assert_eq!(html.matches("<h1>").count(), 1, "one title");
    assert!(!html.contains("<h2>Figures</h2>"));
    assert_eq!(
        html.matches(r#"class="gate""#).count(),
        2,
        "chain and K/V plots"
    );
    assert!(html.contains("n &lt; 10"), "2 samples are badged");
    assert!(
        html.contains("layer 7 · values: cosine"),
        "values have tooltips"
    );
    assert!(html.contains("layer 7 · keys: cosine"), "keys too");
    assert!(
        !html.contains("http://")
            || html.matches("http://").count()
                == html.matches("http://www.w3.org/2000/svg").count(),
        "no network"
    );
}

#[test]
fn bisect_on_the_cpu_says_nothing_deviates_beyond_rounding() {
    let p = Scratch::tiny();
    let run = p.run(&["bisect", "action_context", "--backend", "cpu"]);
    run.assert_code(0);
    assert!(
        run.stdout
            .contains("verdict: nothing deviates beyond rounding"),
        "{}",
        run.all()
    );
    assert!(
        !run.stdout.contains("operators by error introduced"),
        "{}",
        run.all()
    );
    assert!(
        run.stdout
            .contains("next: cargo xtask parity --backend cpu --model tiny --only action_context"),
        "{}",
        run.all()
    );
    let report = read_json(&p.path("reports/tiny/bisect-action_context-cpu.json"));
    assert_eq!(report["verdict"]["kind"], "rounding", "{report}");
    let html =
        std::fs::read_to_string(p.path("reports/tiny/bisect-action_context-cpu.html")).unwrap();
    assert!(html.find("nothing deviates beyond rounding") < html.find("<svg"));
    assert!(!html.contains("Operators by error introduced"), "{html}");
}

#[test]
fn parity_conformance_and_the_build_have_pages_that_open_with_their_verdict() {
    let p = Scratch::tiny();
    let only = ["--only", "action_context"];
    p.run(&["build-ctx", "--soc", "77", only[0], only[1]])
        .assert_code(0);
    let build = std::fs::read_to_string(p.path("reports/tiny/build-soc77.html")).unwrap();
    assert!(build.find(">BUILT</b>") < build.find("<svg"), "{build}");
    assert_eq!(build.matches("MB (peak").count(), 3, "one bar per step ran");

    p.run(&["parity", "--backend", "cpu", only[0], only[1]])
        .assert_code(0);
    let parity = std::fs::read_to_string(p.path("reports/tiny/parity-cpu.html")).unwrap();
    assert!(parity.find(">PASS</b>") < parity.find("<svg"), "{parity}");
    assert!(parity.contains(r#"class="gate""#) && parity.contains("action_context/k_ctx"));
    assert_eq!(parity.matches("<h1>").count(), 1);

    p.run(&["conformance", only[0], only[1], "--backend", "cpu"])
        .assert_code(0);
    let json = read_json(&p.path("reports/tiny/conformance-partial.json"));
    let rows = json["rows"].as_array().unwrap().len();
    let conf = std::fs::read_to_string(p.path("reports/tiny/conformance-partial.html")).unwrap();
    let verdict = conf.find(">CONFORMS</b>").or(conf.find(">FINDINGS</b>"));
    assert!(verdict.is_some() && verdict < conf.find("<svg"), "{conf}");
    assert_eq!(
        conf.matches(" on cpu (").count(),
        rows,
        "one heatmap cell (with its tooltip) per report row"
    );
}
