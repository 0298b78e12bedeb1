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
    let report = read_json(&p.path("reports/tiny/run-cpu.json"));
    for l in report["latency"].as_array().unwrap() {
        let samples = l["samples_ms"].as_array().unwrap();
        // 2 chains: one sample per call (action_step is called once per Euler step).
        assert_eq!(samples.len() as u64, l["samples"].as_u64().unwrap(), "{l}");
        assert!(samples.len() >= 2, "{l}");
        assert!(samples.iter().all(|s| s.as_f64().unwrap() > 0.0), "{l}");
    }
    assert_eq!(report["min_cosine_gate"], 0.999);
    let html = std::fs::read_to_string(p.path("reports/tiny/run-cpu.html")).unwrap();
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
            .contains("next: cargo xtask parity --backend cpu --only action_context"),
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
