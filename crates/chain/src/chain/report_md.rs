//! The chain run report as Markdown: the run's header, chain parity, the actions, introduced
//! vs inherited error, the `--attribute` ranking, the per-layer K/V cosine, latency and memory
//! (on a board: the device's section instead). The HTML page renders the same text below its
//! plots.

use std::fmt::Write as _;

use super::report::RunReport;
use crate::chain::device_figures::DeviceFigures;
use xtask_base::vocab::Verdict;
use xtask_runtime::report::{fmt_cosine, md_table};

pub fn markdown(r: &RunReport) -> String {
    // On a board: no golden-inputs pass, and the device's execute times instead of this host's
    // latency.
    let (introduced, timing) = match &r.run.device {
        Some(d) => (String::new(), d.markdown()),
        None => (super::introduced::markdown(r), latency(r) + &resources(r)),
    };
    [
        header(r),
        verdict(r),
        parity(r),
        actions(r),
        introduced,
        attribution(r),
        kv_cosine(r),
        timing,
    ]
    .concat()
}

/// Title, versions and counts, the chain's layout, the what-if set and the HTP's kind.
fn header(r: &RunReport) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Chain run: `{}` on `{}` ({})\n",
        r.run.model, r.run.backend, r.run.mode
    );
    let counts = match &r.run.device {
        Some(_) => DeviceFigures::counts_sentence(r.run.iters, r.run.warmup),
        None => format!("{} timed runs after {} warm-up", r.run.iters, r.run.warmup),
    };
    let _ = writeln!(md, "{} · {counts}", r.run.versions.summary());
    let _ = writeln!(md, "\nChain: {}", r.run.layout.summary());
    if !r.run.fp32.is_empty() {
        let _ = writeln!(
            md,
            "\nWhat-if: **{}** ran on ORT's CPU EP in fp32, the rest on `{}`.",
            r.run.fp32.join(", "),
            r.run.backend
        );
    }
    if !r.run.precisions.is_empty() {
        let _ = writeln!(
            md,
            "\nQuantized: **{}**{}; the rest fp16. Every figure is against the float golden.",
            r.run.precisions_summary(),
            if r.run.backend == xtask_base::vocab::BackendKind::Cpu {
                " (as their QDQ simulation on ORT's CPU EP)"
            } else {
                ""
            }
        );
    }
    if let Some(h) = &r.run.htp {
        let _ = writeln!(md, "\nHTP: {}", h.latency_label());
    }
    md
}

/// The chain's verdict at the top, every failure under it, and the next steps when it failed.
fn verdict(r: &RunReport) -> String {
    let mut md = format!("\n**Verdict: {}**", r.verdict().word());
    match r.actions() {
        Some(a) => {
            let _ = write!(md, " · actions {}", actions_figure(a));
        }
        None => md.push_str(" · no actions compared"),
    }
    md.push('\n');
    if !r.failures.is_empty() || !r.ungated.is_empty() {
        md.push('\n');
    }
    for f in &r.failures {
        let _ = writeln!(md, "- **FAIL** {f}");
    }
    for u in &r.ungated {
        let _ = writeln!(md, "- UNGATED {u}");
    }
    if !r.next_steps.is_empty() {
        md.push_str("\nNext steps:\n\n");
        for s in &r.next_steps {
            let _ = writeln!(md, "- {s}");
        }
    }
    md
}

/// `max abs error 4.511e-4 > gate 1e-4 (FAIL)`: the actions' figure against its gate.
pub fn actions_figure(a: &super::report::BoundaryParity) -> String {
    let err = a
        .metrics
        .as_ref()
        .map_or("-".to_string(), |m| format!("{:.3e}", m.max_abs_err));
    match &a.max_abs_gate {
        Some(g) => format!(
            "max abs error {err} (gate {:.0e}, {}): {}",
            g.max_abs,
            g.source,
            a.result_word()
        ),
        None => format!("max abs error {err}: {}", a.result_word()),
    }
}

/// A boundary's gate in a table cell: the minimum cosine, and the max abs error for actions.
fn gate_cell(b: &super::report::BoundaryParity) -> String {
    let cos = b
        .gate
        .as_ref()
        .map_or("-".to_string(), |g| format!("≥ {}", g.min_cosine));
    match &b.max_abs_gate {
        Some(g) => format!("{cos}; max abs ≤ {:.0e}", g.max_abs),
        None => cos,
    }
}

/// Every boundary against its golden, with the gate it was judged by, the verdict and its
/// reasons; the gates' sources under the table.
fn parity(r: &RunReport) -> String {
    let mut md = String::from("\n## Chain parity\n\n");
    md.push_str(&md_table(
        &[
            "boundary",
            "shape",
            "cosine",
            "max abs err",
            "rel L2",
            "gate",
            "result",
        ],
        r.run.boundaries.iter().map(|b| {
            let (c, m, l) = b
                .metrics
                .as_ref()
                .map_or(("-".into(), "-".into(), "-".into()), |m| {
                    (
                        m.shown_cosine(),
                        format!("{:.3e}", m.max_abs_err),
                        format!("{:.3e}", m.rel_l2_err),
                    )
                });
            let result = match b.status {
                Verdict::Pass => b.result_word().to_string(),
                _ => format!("**{}**: {}", b.result_word(), b.reasons.join("; ")),
            };
            vec![
                b.name.clone(),
                format!("{:?}", b.shape),
                c,
                m,
                l,
                gate_cell(b),
                result,
            ]
        }),
    ));
    let mut sources: Vec<String> = Vec::new();
    for b in &r.run.boundaries {
        let named = b.gate.iter().map(|g| g.source.clone());
        for s in named.chain(b.max_abs_gate.iter().map(|g| g.source.clone())) {
            if !s.is_empty() && !sources.contains(&s) {
                sources.push(s);
            }
        }
    }
    if !sources.is_empty() {
        let _ = writeln!(md, "\nGates from: {}.", sources.join("; "));
    }
    md
}

/// The actions' error against the actions' gate, when they were compared.
fn actions(r: &RunReport) -> String {
    match (r.actions(), r.actions_cosine) {
        (Some(a), Some(c)) => format!(
            "\nActions: {}, cosine {}\n",
            actions_figure(a),
            fmt_cosine(c)
        ),
        _ => String::new(),
    }
}

fn attribution(r: &RunReport) -> String {
    r.run
        .attribution
        .as_ref()
        .map_or(String::new(), |a| super::whatif::markdown(a, r.run.backend))
}

fn kv_cosine(r: &RunReport) -> String {
    let mut md = String::from("\n## Per-layer K/V cosine\n\n");
    md.push_str(&md_table(
        &["layer", "keys", "values"],
        r.run
            .keys_per_layer_cosine
            .iter()
            .zip(&r.run.values_per_layer_cosine)
            .enumerate()
            .map(|(l, (k, v))| vec![l.to_string(), fmt_cosine(*k), fmt_cosine(*v)]),
    ));
    md
}

/// Percentiles per component and end to end, labelled with the HTP's kind.
fn latency(r: &RunReport) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "\n## Latency (ms){}\n",
        r.run
            .htp
            .as_ref()
            .map_or(String::new(), |h| format!(": {}", h.latency_label()))
    );
    md.push_str(&md_table(
        &["stage", "samples", "min", "p50", "p90", "p99", "max"],
        r.run.latency.iter().map(|l| {
            let mut row = vec![l.name.clone(), l.samples.to_string()];
            row.extend(
                [l.min_ms, l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms].map(|x| format!("{x:.2}")),
            );
            row
        }),
    ));
    md
}

/// Session loads, the host's share of the end-to-end time and the peak memory.
fn resources(r: &RunReport) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "\nSession load (ms): {}",
        r.run
            .load_ms
            .iter()
            .map(|(k, v)| format!("{k} {:.1}", v.iter().sum::<f64>() / v.len().max(1) as f64))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        md,
        "\nHost share of end-to-end: {:.1}% · peak RSS {:.0} MB",
        r.run.host_fraction * 100.0,
        r.run.peak_rss_mb
    );
    md
}
