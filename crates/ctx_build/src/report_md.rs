//! The build report in Markdown (`reports/<model>/build-soc<N>.md`): a row per component and
//! step with its outputs and the step's figures, then the notes said once for the whole build
//! (graph names the toolchain could not honour, the rewrites applied).

use std::fmt::Write as _;

use super::facts::StepFacts;
use super::report::{BuildReport, StepOutcome};

pub fn markdown(r: &BuildReport) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# build-ctx `{}` for soc {} ({}, Hexagon v{})\n",
        r.model,
        r.soc.id,
        r.soc.chips.join(" / "),
        r.soc.htp_arch
    );
    let _ = writeln!(md, "{}\n", r.versions.summary());
    if let Some(c) = &r.cache {
        let _ = writeln!(md, "Build cache: `{c}`\n");
    }
    let _ = writeln!(
        md,
        "| component | step | status | seconds | outputs | detail |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    for c in &r.components {
        for s in &c.steps {
            let outputs: Vec<String> = s
                .outputs
                .iter()
                .map(|o| {
                    format!(
                        "`{}` {} B sha256 `{}`",
                        o.path,
                        o.bytes,
                        &o.sha256[..16.min(o.sha256.len())]
                    )
                })
                .collect();
            let detail = step_detail(s);
            // A step that did not run now shows the time of its last run, marked as such.
            let seconds = match s.seconds_restored_from_unix {
                Some(_) => format!("{:.2} (restored: last run)", s.seconds),
                None => format!("{:.2}", s.seconds),
            };
            let _ = writeln!(
                md,
                "| `{}` | {} | {:?} | {seconds} | {} | {} |",
                c.component,
                s.step,
                s.status,
                outputs.join("<br>"),
                detail.replace('|', "\\|").replace('\n', " ")
            );
        }
    }
    graph_name_note(r, &mut md);
    rewrites_markdown(r, &mut md);
    md
}

/// One line for every context binary whose recipe's `graph_name` could not be honoured (the
/// embedded toolchain names graphs itself), instead of the same sentence in every row.
fn graph_name_note(r: &BuildReport, md: &mut String) {
    let mut names = Vec::new();
    let mut whys: Vec<String> = Vec::new();
    for c in &r.components {
        for s in c.steps.iter() {
            if let Some(asked) = &s.detail.graph_name_honoured
                && !asked.honoured
            {
                names.push(format!("`{}`", c.component));
                let why = asked.why.clone().unwrap_or_default();
                if !whys.contains(&why) {
                    whys.push(why);
                }
            }
        }
    }
    if !names.is_empty() {
        let _ = writeln!(
            md,
            "\nThe recipes' `graph_name` could not be honoured for {}: {}.",
            names.join(", "),
            whys.join("; ")
        );
    }
}

/// The graph rewrites each component's convert step applied (from its record), with the
/// rewritten copy's figures on ORT: QNN built that copy, not the ONNX as committed.
fn rewrites_markdown(r: &BuildReport, md: &mut String) {
    let rows: Vec<(String, xtask_parity::rewritten::RewriteCheck)> = r
        .components
        .iter()
        .flat_map(|c| c.steps.iter().map(move |s| (c, s)))
        .filter_map(|(c, s)| match &s.facts {
            Some(StepFacts::Convert(f)) => Some((c.component.clone(), f.rewrites.clone()?)),
            _ => None,
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let table = xtask_parity::rewritten::rewrites_table(
        "component",
        rows.iter().flat_map(|(comp, check)| check.cells(comp)),
    );
    let _ = write!(
        md,
        "\n## Graph rewrites\n\nQNN converted a rewritten copy of these ONNX graphs (in `target/rewrite/<model>/<component>/`; the committed ONNX is unchanged; `parity --backend ort` judges it).\n\n{table}"
    );
}

fn step_detail(s: &StepOutcome) -> String {
    if let Some(e) = &s.error {
        return format!("FAILED: {e}");
    }
    let mut parts = Vec::new();
    if let Some(key) = &s.restored_from_cache {
        parts.push(format!("restored from cache `{key}`"));
    }
    if let Some(f) = &s.facts {
        parts.push(f.summary());
    }
    // Whether the recipe's graph_name was honoured is said once below the table, not per row.
    if let Some(g) = &s.detail.graph_name {
        parts.push(format!("graph `{g}`"));
    } else if let Some(sum) = s.detail.summary.as_ref().filter(|sum| !parts.contains(sum)) {
        // The facts' summary and the detail's are often one sentence: shown once.
        parts.push(sum.clone());
    } else if !s.reasons.is_empty() {
        parts.push(s.reasons.join("; "));
    }
    // Beside another step of the process, the figures are the process's, not the step's.
    let shared = s.detail.beside_other_steps;
    let (rss_label, cpu_label) = if shared {
        ("process peak RSS", "CPU ≤")
    } else {
        ("peak RSS", "CPU")
    };
    if let Some(mb) = s.detail.peak_rss_mb {
        parts.push(format!("{rss_label} {mb:.0} MB"));
    }
    if let Some(mb) = s.detail.child_peak_rss_mb {
        parts.push(format!("child process peak RSS {mb:.0} MB"));
    }
    if let Some(cpu) = s.detail.cpu_s {
        parts.push(format!("{cpu_label} {cpu:.0} s"));
    }
    if shared {
        parts.push("(beside other steps)".into());
    }
    if let (Some(stages), Some((name, secs))) = (&s.detail.compile_stages, s.detail.slowest_stage())
    {
        parts.push(format!(
            "{} compiler stages, slowest {name} {secs:.2} s",
            stages.len()
        ));
    }
    parts.join(" · ")
}
