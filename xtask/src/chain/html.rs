//! The chain run's HTML page: latency bars, cosine along the chain and per-layer K/V cosine as
//! inline SVG, with the Markdown figures below (self-contained, opens without a network).

use std::fmt::Write as _;

use super::report::{BoundaryParity, LatencyStats, RunReport, markdown};
use crate::report::html::{esc, html_page, markdown_to_html, svg_series};

fn svg_latency(r: &RunReport) -> String {
    let rows: Vec<&LatencyStats> = r.run.latency.iter().collect();
    let max = rows
        .iter()
        .map(|l| l.max_ms)
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let (w, row_h, left) = (760.0, 26.0, 150.0);
    let h = rows.len() as f64 * row_h + 40.0;
    let scale = (w - left - 60.0) / max;
    let mut s = format!(
        r#"<svg id="latency" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img"><title>Latency per component (p50, min-max)</title>"#
    );
    for (i, l) in rows.iter().enumerate() {
        let y = 20.0 + i as f64 * row_h;
        let _ = write!(
            s,
            r##"<text x="{}" y="{}" font-size="12" text-anchor="end">{}</text><rect x="{left}" y="{}" width="{:.1}" height="14" fill="#4c78a8"/><line x1="{:.1}" x2="{:.1}" y1="{}" y2="{}" stroke="#222"/><text x="{:.1}" y="{}" font-size="11">{:.2} ms</text>"##,
            left - 6.0,
            y + 11.0,
            esc(&l.name),
            y,
            l.p50_ms * scale,
            left + l.min_ms * scale,
            left + l.max_ms * scale,
            y + 7.0,
            y + 7.0,
            left + l.max_ms * scale + 6.0,
            y + 11.0,
            l.p50_ms
        );
    }
    s.push_str("</svg>");
    s
}

pub fn html(r: &RunReport) -> String {
    let compared: Vec<&BoundaryParity> = r
        .run
        .boundaries
        .iter()
        .filter(|b| b.metrics.is_some())
        .collect();
    let labels: Vec<String> = compared.iter().map(|b| b.name.clone()).collect();
    let chain: Vec<f64> = compared
        .iter()
        .filter_map(|b| b.metrics.as_ref().map(|m| m.cosine))
        .collect();
    let golden_inputs: Vec<f64> = compared
        .iter()
        .map(|b| b.golden_inputs.as_ref().map_or(f64::NAN, |m| m.cosine))
        .collect();
    let layers: Vec<String> = (0..r.run.keys_per_layer_cosine.len())
        .map(|l| format!("layer {l}"))
        .collect();
    let md_table = markdown(r);
    let body = format!(
        r#"<h1>Chain run: {model} on {backend} ({mode})</h1>
<p>Result: <b>{result}</b>. Actions max abs error: {actions}. {emulated}</p>
<h2>Latency per component (p50 bar, min–max whisker)</h2>
{latency}
<h2>Cosine along the chain: on the chain's inputs and on golden inputs</h2>
{chain}
<h2>Per-layer K/V cosine</h2>
{kv}
<h2>Figures</h2>
{table}
"#,
        backend = esc(&r.run.backend),
        model = esc(&r.run.model),
        mode = esc(&r.run.mode),
        result = if r.pass { "pass" } else { "FAIL" },
        actions = r
            .actions_max_abs_err
            .map_or("-".into(), |e| format!("{e:.3e}")),
        emulated = r.run.htp.as_ref().map_or(String::new(), |h| esc(&format!(
            "Latency: {}.",
            h.latency_label()
        ))),
        latency = svg_latency(r),
        chain = svg_series(
            "chain-cosine",
            "Cosine along the chain",
            &labels,
            &[
                ("chain inputs", "#e45756", chain),
                ("golden inputs", "#4c78a8", golden_inputs)
            ]
        ),
        kv = svg_series(
            "kv-cosine",
            "Per-layer K/V cosine",
            &layers,
            &[
                ("keys", "#4c78a8", r.run.keys_per_layer_cosine.clone()),
                ("values", "#54a24b", r.run.values_per_layer_cosine.clone())
            ]
        ),
        table = markdown_to_html(&md_table),
    );
    html_page(&format!("run-{} {}", r.run.backend, r.run.model), &body)
}
