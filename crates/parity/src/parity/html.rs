//! The parity page (`reports/<model>/parity-<backend>.html`): the verdict with every failing
//! output first, then each component output's cosine against its gate, then the Markdown
//! report's tables (per component).

use super::markdown::parity_markdown;
use super::report::ParityReport;
use xtask_runtime::report::html::{Series, html_page, markdown_body, svg_series, verdict_box};

pub fn html(r: &ParityReport) -> String {
    let outputs: Vec<(String, f64, f64)> = r
        .components
        .iter()
        .flat_map(|c| {
            c.outputs.iter().map(move |o| {
                (
                    format!("{}/{}", c.component, o.name),
                    o.metrics.cosine,
                    o.gate.min_cosine,
                )
            })
        })
        .collect();
    let mut failing: Vec<String> = Vec::new();
    for c in &r.components {
        if let Some(e) = &c.error {
            failing.push(format!("**{}** could not run: {e}", c.component));
        }
        for o in c.outputs.iter().filter(|o| !o.verdict.pass) {
            failing.push(format!(
                "**{}/{}**: {}",
                c.component,
                o.name,
                o.verdict.reasons.join("; ")
            ));
        }
    }
    // One gate line when every output has the same gate; otherwise each point's tooltip and
    // the tables give its own.
    let gates: Vec<f64> = outputs.iter().map(|o| o.2).collect();
    let gate = gates
        .first()
        .copied()
        .filter(|g| gates.iter().all(|x| x == g));
    let sentence = format!(
        "{} component(s), {} output(s) on {}{}",
        r.components.len(),
        outputs.len(),
        r.backend,
        gate.map_or(" (gates differ per output)".into(), |g| format!(
            " against cosine ≥ {g}"
        ))
    );
    let top = if r.pass {
        verdict_box("pass", "PASS", &sentence, &failing)
    } else {
        verdict_box("fail", "FAIL", &sentence, &failing)
    };
    let labels: Vec<String> = outputs.iter().map(|o| o.0.clone()).collect();
    let plot = svg_series(
        "parity-cosine",
        "Cosine of every component output against its golden",
        &labels,
        &[Series {
            name: "cosine",
            color: "#4c78a8",
            values: outputs.iter().map(|o| o.1).collect(),
        }],
        gate,
    );
    let body = format!(
        "{top}<h2>Cosine per output (red dashed line: the gate)</h2>\n{plot}\n{}",
        markdown_body(&parity_markdown(r))
    );
    html_page(&format!("Parity: {} on {}", r.model, r.backend), &body)
}
