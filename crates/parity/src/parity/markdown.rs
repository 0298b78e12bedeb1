//! The parity report as Markdown (`parity-<backend>.md`, the model card's table): a header
//! saying what produced the figures, the per-component summary, every output's figures, then
//! the sections a report has only when they apply (gate overrides, rewritten graphs, profiled
//! times) and the input hashes.

use std::fmt::Write as _;

use super::component::{ComponentResult, OutputResult};
use super::report::ParityReport;
use xtask_runtime::report::md_table;

/// The whole Markdown report, section by section.
pub fn parity_markdown(r: &ParityReport) -> String {
    let mut md = header(r);
    md.push_str(&summary_table(r));
    md.push_str("\n## Details\n\n");
    md.push_str(&details_table(r));
    md.push_str(&section("Gate overrides", &override_lines(r)));
    md.push_str(&section("Rewritten graphs", &rewritten_lines(r)));
    md.push_str(&latency_section(r));
    md.push_str(&inputs_section(r));
    md
}

/// The title, the tool versions, where the HTP ran, and what the gates are: a reader of the
/// card must know what produced the figures before reading them.
fn header(r: &ParityReport) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Parity: `{}` on backend `{}`\n", r.model, r.backend);
    let failed: Vec<&str> = r
        .components
        .iter()
        .filter(|c| !c.pass)
        .map(|c| c.component.as_str())
        .collect();
    let _ = write!(
        md,
        "**Verdict: {}**",
        xtask_base::vocab::Verdict::of(r.pass).word()
    );
    match failed.is_empty() {
        true => md.push_str("\n\n"),
        false => {
            let _ = writeln!(md, " · failed: {}\n", failed.join(", "));
        }
    }
    let _ = writeln!(md, "{}", r.versions.summary());
    if let Some(device) = &r.device {
        let _ = writeln!(md, "\nHTP: on a device over ssh. {device}");
    }
    if let Some(h) = &r.htp {
        let _ = writeln!(md, "\nHTP: {}", h.latency_label());
    }
    let _ = writeln!(
        md,
        "\nThe gates are the cosine and the scale (| |y|/|golden| - 1 | within its bound); `within_tol` is informational.\n"
    );
    md
}

/// One row per component: its outputs and their cosines, FAIL marked (the model card's table).
fn summary_table(r: &ParityReport) -> String {
    md_table(
        &["context", "output", "cosine"],
        r.components.iter().map(|c| {
            let label = super::report::quantized_label(c);
            let component = if c.from_earlier_run {
                format!("`{}`{label} (earlier run, not re-measured)", c.component)
            } else {
                format!("`{}`{label}", c.component)
            };
            if c.outputs.is_empty() {
                let why = c.error.as_deref().unwrap_or("?");
                return vec![component, "—".into(), format!("**FAIL**: {why}")];
            }
            let names: Vec<&str> = c.outputs.iter().map(|o| o.name.as_str()).collect();
            let cos: Vec<String> = c.outputs.iter().map(|o| o.metrics.shown_cosine()).collect();
            let status = if c.pass { "" } else { " **FAIL**" };
            vec![
                component,
                names.join(" / "),
                format!("{}{status}", cos.join(" / ")),
            ]
        }),
    )
}

/// Every output of every component with all its figures and its gate.
fn details_table(r: &ParityReport) -> String {
    md_table(
        &[
            "context",
            "output",
            "cosine",
            "gate",
            "|y|/|golden|",
            "scale gate",
            "max abs err (at)",
            "mean abs err",
            "rel L2",
            "within_tol",
            "NaN/Inf",
            "result",
        ],
        r.components
            .iter()
            .flat_map(|c| c.outputs.iter().map(move |o| detail_row(c, o))),
    )
}

fn detail_row(c: &ComponentResult, o: &OutputResult) -> Vec<String> {
    let m = &o.metrics;
    vec![
        format!("`{}`", c.component),
        o.name.clone(),
        m.shown_cosine(),
        o.gate.min_cosine.to_string(),
        format!("{:.6}", m.norm_ratio),
        format!("±{}", o.gate.max_norm_ratio_error),
        format!("{:.3e} {:?}", m.max_abs_err, o.max_abs_at),
        format!("{:.3e}", m.mean_abs_err),
        format!("{:.3e}", m.rel_l2_err),
        m.within_tol.to_string(),
        format!("{}/{}", m.nan_actual, m.inf_actual),
        if o.verdict.pass {
            "pass".to_string()
        } else {
            format!("FAIL: {}", o.verdict.reasons.join("; "))
        },
    ]
}

/// `\n## title\n\n` and the lines; nothing when there are none (the section does not apply).
fn section(title: &str, lines: &[String]) -> String {
    if lines.is_empty() {
        return String::new();
    }
    format!("\n## {title}\n\n{}\n", lines.join("\n"))
}

/// Each output whose gate an override set: what it did, with the recipe's written reason.
fn override_lines(r: &ParityReport) -> Vec<String> {
    r.components
        .iter()
        .flat_map(|c| {
            c.outputs.iter().filter_map(move |o| {
                let words = o.gate.override_words()?;
                let reason = o.gate.waiver.as_ref()?;
                Some(format!(
                    "- `{}` {}: {words} (reason: {reason})",
                    c.component, o.name
                ))
            })
        })
        .collect()
}

/// Each component that ran the copy its recipe's `[rewrite]` makes, not the graph as given.
fn rewritten_lines(r: &ParityReport) -> Vec<String> {
    r.components
        .iter()
        .filter(|c| {
            c.session_model
                .starts_with(xtask_base::project::REWRITE_DIR)
        })
        .map(|c| {
            format!(
                "- `{}` ran `{}`, the copy its recipe's `[rewrite]` makes for QNN",
                c.component, c.session_model
            )
        })
        .collect()
}

/// The profiled execute times, when any component has them.
fn latency_section(r: &ParityReport) -> String {
    let timed: Vec<&ComponentResult> = r
        .components
        .iter()
        .filter(|c| c.latency.is_some())
        .collect();
    if timed.is_empty() {
        return String::new();
    }
    let mut md = String::from("\n## Execute time (profiled qnn-net-run)\n\n");
    md.push_str(&md_table(
        &[
            "context", "source", "samples", "min µs", "p50 µs", "p90 µs", "max µs",
        ],
        timed.iter().filter_map(|c| {
            let l = c.latency.as_ref()?;
            let mut row = vec![
                c.component.clone(),
                l.timing_source.to_string(),
                l.samples.to_string(),
            ];
            row.extend([l.min_us, l.p50_us, l.p90_us, l.max_us].map(|x| format!("{x:.1}")));
            Some(row)
        }),
    ));
    md
}

/// The sha256 of every input each component was fed.
fn inputs_section(r: &ParityReport) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "\n## Inputs\n");
    for c in &r.components {
        for (name, sha) in &c.input_sha256 {
            let _ = writeln!(md, "- `{}` {name}: sha256 `{sha}`", c.component);
        }
    }
    md
}
