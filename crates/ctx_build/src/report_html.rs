//! The build page (`reports/<model>/build-soc<N>.html`): the outcome and every failed step
//! first, then a timeline of the steps that ran with the memory each added (peak RSS over
//! the RSS it started at), then the report's tables.

use super::report::{BuildReport, StepStatus};
use xtask_runtime::report::html::timeline::{Bar, svg_timeline};
use xtask_runtime::report::html::{html_page, markdown_body, verdict_box};

fn color(s: StepStatus) -> &'static str {
    match s {
        StepStatus::Ran => "#4c78a8",
        StepStatus::Restored => "#72b7b2",
        StepStatus::Fresh => "#bab0ac",
        StepStatus::Failed => "#e45756",
        StepStatus::Skipped => "#dddddd",
        StepStatus::Earlier => "#eeeeee",
    }
}

pub fn html(r: &BuildReport, markdown: &str) -> String {
    let t0 = r
        .components
        .iter()
        .flat_map(|c| &c.steps)
        .filter_map(|s| s.detail.started_unix_ms)
        .map(|ms| ms as f64)
        .fold(f64::INFINITY, f64::min);
    let mut bars = Vec::new();
    let mut failed = Vec::new();
    for c in &r.components {
        for s in &c.steps {
            let start = s.detail.started_unix_ms.map(|v| (v as f64 - t0) / 1000.0);
            let peak = s.detail.peak_rss_mb;
            let added = s.detail.memory_added_mb();
            let status = format!("{:?}", s.status).to_lowercase();
            let text = match (added, peak) {
                (Some(a), Some(p)) => format!("{:.1} s · +{a:.0} MB (peak {p:.0} MB)", s.seconds),
                _ => status.clone(),
            };
            if s.status == StepStatus::Failed {
                failed.push(format!(
                    "**{} {}** failed: {}",
                    c.component,
                    s.step,
                    s.error.as_deref().unwrap_or("(no message)")
                ));
            }
            bars.push(Bar {
                label: format!("{} {}", c.component, s.step),
                start_s: start,
                seconds: s.seconds,
                color: color(s.status),
                tooltip: format!(
                    "{} {}: {status}; {}",
                    c.component,
                    s.step,
                    s.reasons.join("; ")
                ),
                text,
            });
        }
    }
    let ran = bars.iter().filter(|b| b.start_s.is_some()).count();
    let sentence = format!(
        "{} component(s), {} step(s), {ran} ran or restored, for soc {}",
        r.components.len(),
        bars.len(),
        r.soc.id
    );
    let top = if r.pass {
        verdict_box("pass", "BUILT", &sentence, &[])
    } else {
        verdict_box("fail", "FAILED", &sentence, &failed)
    };
    let timeline = svg_timeline(
        "build-timeline",
        "Steps over time with the RSS each added",
        &bars,
    );
    let body = format!(
        "{top}<h2>Steps over time (bar: wall time; text: RSS added and peak)</h2>\n{timeline}\n{}",
        markdown_body(markdown)
    );
    html_page(&format!("Build: {} for soc {}", r.model, r.soc.id), &body)
}
