//! The chain run's HTML page. Top first: the verdict with the failing boundaries, and with
//! `--attribute` the ranking of what to fix first; then the cosine along the chain and the
//! per-layer K/V cosine (both against the chain gate), the latency distributions, and every
//! figure of the Markdown report (self-contained, opens without a network).

use super::report::{BoundaryParity, RunReport};
use super::report_md::markdown;
use xtask_runtime::report::html::dist::{Row, svg_distribution};
use xtask_runtime::report::html::{Series, esc, html_page, markdown_body, svg_series, verdict_box};

/// The verdict box: pass / FAIL with the failures and ungated boundaries listed.
fn verdict(r: &RunReport) -> String {
    let actions = r.actions().map_or("no actions compared".into(), |a| {
        format!("actions {}", super::report_md::actions_figure(a))
    });
    let latency = r.run.htp.as_ref().map_or(String::new(), |h| {
        format!(" Latency: {}.", h.latency_label())
    });
    let sentence = format!(
        "{} boundaries against cosine ≥ {}; {actions}.{latency}",
        r.run.boundaries.len(),
        r.run.min_cosine_gate
    );
    let mut items: Vec<String> = r.failures.iter().map(|f| format!("**FAIL** {f}")).collect();
    items.extend(r.ungated.iter().map(|u| format!("UNGATED {u}")));
    items.extend(r.next_steps.iter().map(|s| format!("next: {s}")));
    let word = r.verdict().word();
    verdict_box(&word.to_lowercase(), word, &sentence, &items)
}

/// `--attribute`: the components ranked by the share of the error each removes.
fn attribution(r: &RunReport) -> String {
    let Some(a) = &r.run.attribution else {
        return String::new();
    };
    let mut s = format!(
        "<h2>Fix first</h2>\n<p>Each component alone in fp32 on ORT's CPU EP, ranked by how much of the error of <code>{}</code> it removes (base rel-L2 {:.3e}).</p>\n<table><tr><th>rank</th><th>component in fp32</th><th>error removed</th><th>rel L2</th><th>cosine</th></tr>\n",
        esc(&a.boundary),
        a.base.rel_l2_err
    );
    for (i, row) in a.rows.iter().enumerate() {
        s.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td><b>{:.1}%</b></td><td>{:.3e}</td><td>{}</td></tr>\n",
            i + 1,
            esc(&row.component),
            row.removed * 100.0,
            row.metrics.rel_l2_err,
            row.metrics.shown_cosine()
        ));
    }
    s.push_str("</table>\n");
    s
}

pub fn html(r: &RunReport) -> String {
    let body = [
        verdict(r),
        attribution(r),
        chain_cosine(r),
        kv_cosine(r),
        latency(r),
        markdown_body(&markdown(r)),
    ]
    .join("\n");
    html_page(
        &format!(
            "Chain run: {} on {} ({})",
            r.run.model, r.run.backend, r.run.mode
        ),
        &body,
    )
}

/// The cosine of every compared boundary, on the chain's inputs and on golden inputs.
fn chain_cosine(r: &RunReport) -> String {
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
    let mut series = vec![Series {
        name: "chain inputs",
        color: "#e45756",
        values: chain,
    }];
    // No golden-inputs pass (a board runs none): no second line of gaps.
    if golden_inputs.iter().any(|c| !c.is_nan()) {
        series.push(Series {
            name: "golden inputs",
            color: "#4c78a8",
            values: golden_inputs,
        });
    }
    format!(
        "<h2>Cosine along the chain (red dashed line: the gate)</h2>\n{}",
        svg_series(
            "chain-cosine",
            "Cosine along the chain",
            &labels,
            &series,
            Some(r.run.min_cosine_gate),
        )
    )
}

/// The per-layer cosine of the collected keys and values.
fn kv_cosine(r: &RunReport) -> String {
    let layers: Vec<String> = (0..r.run.keys_per_layer_cosine.len())
        .map(|l| format!("layer {l}"))
        .collect();
    let series = [
        Series {
            name: "keys",
            color: "#4c78a8",
            values: r.run.keys_per_layer_cosine.clone(),
        },
        Series {
            name: "values",
            color: "#54a24b",
            values: r.run.values_per_layer_cosine.clone(),
        },
    ];
    format!(
        "<h2>Per-layer K/V cosine</h2>\n{}",
        svg_series(
            "kv-cosine",
            "Per-layer K/V cosine",
            &layers,
            &series,
            Some(r.run.min_cosine_gate),
        )
    )
}

/// Every timed run's latency per component, as distributions (none on a board: the device's
/// execute times are in the tables below).
fn latency(r: &RunReport) -> String {
    if r.run.latency.is_empty() {
        return String::new();
    }
    let rows: Vec<Row> = r
        .run
        .latency
        .iter()
        .map(|l| Row {
            name: &l.name,
            samples_ms: &l.samples_ms,
        })
        .collect();
    let label = r.run.htp.as_ref().map_or(String::new(), |h| {
        if h.emulated {
            " (HTP emulated: not device latency)".into()
        } else {
            format!(" ({})", esc(&h.latency_label()))
        }
    });
    format!(
        "<h2>Latency: every timed run{label}</h2>\n{}",
        svg_distribution("latency", "Latency per component", &rows)
    )
}
