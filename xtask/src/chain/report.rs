//! Reports of `cargo xtask run`: chain parity along every boundary, per-layer K/V cosine, the
//! actions against the expected ones, latency percentiles; as JSON, Markdown and a
//! self-contained HTML page with inline SVG plots (no network needed to open it).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use ndarray::ArrayD;
use serde::Serialize;

use crate::parity::metrics::{Metrics, compare};
use crate::report::{ToolVersions, fmt_cosine};

#[derive(Debug, Clone, Serialize)]
pub struct BoundaryParity {
    pub name: String,
    pub shape: Vec<usize>,
    /// None when the golden holds no reference for this boundary.
    pub metrics: Option<Metrics>,
    pub pass: bool,
}

impl BoundaryParity {
    pub fn new(name: &str, got: &ArrayD<f32>, want: Option<&ArrayD<f32>>, min_cosine: f64) -> Self {
        let metrics = want.filter(|w| w.shape() == got.shape()).map(|w| {
            let g: Vec<f64> = got.iter().map(|&v| f64::from(v)).collect();
            let w: Vec<f64> = w.iter().map(|&v| f64::from(v)).collect();
            compare(&g, &w, 1e-4, 1e-3)
        });
        let pass = metrics
            .as_ref()
            .is_none_or(|m| m.cosine >= min_cosine && m.nan_actual + m.inf_actual == 0);
        BoundaryParity {
            name: name.into(),
            shape: got.shape().to_vec(),
            metrics,
            pass,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct LatencyStats {
    pub name: String,
    pub samples: usize,
    pub min_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl LatencyStats {
    pub fn of(name: &str, samples: &[f64]) -> Self {
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        let pct = |p: f64| {
            v.get(((p / 100.0) * (v.len() - 1) as f64).round() as usize)
                .copied()
                .unwrap_or(f64::NAN)
        };
        LatencyStats {
            name: name.into(),
            samples: v.len(),
            min_ms: v.first().copied().unwrap_or(f64::NAN),
            p50_ms: pct(50.0),
            p90_ms: pct(90.0),
            p99_ms: pct(99.0),
            max_ms: v.last().copied().unwrap_or(f64::NAN),
        }
    }

    /// One entry per component in pipeline order, then `end-to-end`.
    pub fn per_component(
        order: &[&str],
        run_ms: &BTreeMap<String, Vec<f64>>,
        chain_ms: &[f64],
    ) -> Vec<LatencyStats> {
        let mut out: Vec<LatencyStats> = order
            .iter()
            .filter_map(|n| run_ms.get(*n).map(|s| LatencyStats::of(n, s)))
            .collect();
        out.push(LatencyStats::of("end-to-end", chain_ms));
        out
    }
}

/// What a chain run measured (and the gate it is judged by).
#[derive(Debug, Clone, Serialize)]
pub struct RunInputs {
    pub model: String,
    pub backend: String,
    pub htp_emulated: Option<bool>,
    pub mode: String,
    pub versions: ToolVersions,
    pub iters: usize,
    pub warmup: usize,
    pub boundaries: Vec<BoundaryParity>,
    pub keys_per_layer_cosine: Vec<f64>,
    pub values_per_layer_cosine: Vec<f64>,
    pub actions_max_abs_gate: f64,
    pub latency: Vec<LatencyStats>,
    pub load_ms: BTreeMap<String, Vec<f64>>,
    /// Share of the end-to-end time spent outside model runs and session loads (host work).
    pub host_fraction: f64,
    pub peak_rss_mb: f64,
}

/// What a chain run measured plus what it concludes (the JSON has the facts' fields inline).
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    #[serde(flatten)]
    pub run: RunInputs,
    pub created_unix: u64,
    pub actions_max_abs_err: Option<f64>,
    pub actions_cosine: Option<f64>,
    pub failures: Vec<String>,
    pub pass: bool,
}

impl RunReport {
    pub fn new(run: RunInputs) -> Self {
        let actions = run
            .boundaries
            .iter()
            .find(|b| b.name == "actions")
            .and_then(|b| b.metrics.clone());
        let mut failures: Vec<String> = run
            .boundaries
            .iter()
            .filter(|b| !b.pass)
            .map(|b| {
                format!(
                    "{}: cosine {}",
                    b.name,
                    b.metrics
                        .as_ref()
                        .map_or("?".into(), |m| fmt_cosine(m.cosine))
                )
            })
            .collect();
        match &actions {
            Some(m) if m.max_abs_err > run.actions_max_abs_gate => failures.push(format!(
                "actions: max abs error {:.3e} > gate {:.0e}",
                m.max_abs_err, run.actions_max_abs_gate
            )),
            None => failures.push("actions: the golden holds no expected actions".into()),
            _ => {}
        }
        RunReport {
            run,
            created_unix: crate::report::now_unix(),
            actions_max_abs_err: actions.as_ref().map(|m| m.max_abs_err),
            actions_cosine: actions.as_ref().map(|m| m.cosine),
            pass: failures.is_empty(),
            failures,
        }
    }

    pub fn print(&self, dir: &str) {
        crate::outln!(
            "chain on {} ({}){}:",
            self.run.backend,
            self.run.mode,
            if self.run.htp_emulated == Some(true) {
                ", HTP emulated"
            } else {
                ""
            }
        );
        crate::outln!("  {:<40} {:>12} {:>11}", "boundary", "cosine", "max_abs");
        for b in &self.run.boundaries {
            let (cos, max) = b.metrics.as_ref().map_or(("-".into(), "-".into()), |m| {
                (fmt_cosine(m.cosine), format!("{:.3e}", m.max_abs_err))
            });
            crate::outln!(
                "  {:<40} {cos:>12} {max:>11}{}",
                b.name,
                if b.pass { "" } else { "  FAIL" }
            );
        }
        if let (Some(err), Some(cos)) = (self.actions_max_abs_err, self.actions_cosine) {
            crate::outln!(
                "actions: max abs error {err:.3e} (gate {:.0e}), cosine {}",
                self.run.actions_max_abs_gate,
                fmt_cosine(cos)
            );
        }
        crate::outln!(
            "  {:<16} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "latency (ms)",
            "min",
            "p50",
            "p90",
            "p99",
            "max"
        );
        for l in &self.run.latency {
            crate::outln!(
                "  {:<16} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
                l.name,
                l.min_ms,
                l.p50_ms,
                l.p90_ms,
                l.p99_ms,
                l.max_ms
            );
        }
        crate::outln!(
            "host share of end-to-end: {:.1}%, peak RSS {:.0} MB",
            self.run.host_fraction * 100.0,
            self.run.peak_rss_mb
        );
        for f in &self.failures {
            crate::outln!("FAIL {f}");
        }
        crate::outln!(
            "run {}: {}; report {dir}/run-{}.html",
            self.run.backend,
            if self.pass { "pass" } else { "FAIL" },
            self.run.backend
        );
    }
}

pub fn write_run_report(dir: &Path, r: &RunReport) -> Result<()> {
    let stem = format!("run-{}", r.run.backend);
    crate::report::write_json_and_markdown(dir, &stem, r, &markdown(r))?;
    crate::atomic::write_atomic(&dir.join(format!("{stem}.html")), html(r).as_bytes())
}

fn markdown(r: &RunReport) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Chain run: `{}` on `{}` ({})\n",
        r.run.model, r.run.backend, r.run.mode
    );
    let v = &r.run.versions;
    let _ = writeln!(
        md,
        "ONNX Runtime {} · QNN {} · {} · {} timed runs after {} warm-up",
        v.onnxruntime,
        v.qnn_build.as_deref().unwrap_or("-"),
        v.qnn_plugin,
        r.run.iters,
        r.run.warmup
    );
    if let Some(e) = r.run.htp_emulated {
        let _ = writeln!(
            md,
            "\nHTP: {}",
            if e {
                "emulated on x86_64 (latency is not the device's)"
            } else {
                "real NPU"
            }
        );
    }
    let _ = writeln!(
        md,
        "\n## Chain parity\n\n| boundary | shape | cosine | max abs err | rel L2 | result |\n|---|---|---|---|---|---|"
    );
    for b in &r.run.boundaries {
        let (c, m, l) = b
            .metrics
            .as_ref()
            .map_or(("-".into(), "-".into(), "-".into()), |m| {
                (
                    fmt_cosine(m.cosine),
                    format!("{:.3e}", m.max_abs_err),
                    format!("{:.3e}", m.rel_l2_err),
                )
            });
        let _ = writeln!(
            md,
            "| {} | {:?} | {c} | {m} | {l} | {} |",
            b.name,
            b.shape,
            if b.pass { "pass" } else { "**FAIL**" }
        );
    }
    if let (Some(e), Some(c)) = (r.actions_max_abs_err, r.actions_cosine) {
        let _ = writeln!(
            md,
            "\nActions: max abs error **{e:.3e}** (gate {:.0e}), cosine {}",
            r.run.actions_max_abs_gate,
            fmt_cosine(c)
        );
    }
    let _ = writeln!(
        md,
        "\n## Per-layer K/V cosine\n\n| layer | keys | values |\n|---|---|---|"
    );
    for (l, (k, v)) in r
        .run
        .keys_per_layer_cosine
        .iter()
        .zip(&r.run.values_per_layer_cosine)
        .enumerate()
    {
        let _ = writeln!(md, "| {l} | {} | {} |", fmt_cosine(*k), fmt_cosine(*v));
    }
    let _ = writeln!(
        md,
        "\n## Latency (ms)\n\n| stage | samples | min | p50 | p90 | p99 | max |\n|---|---|---|---|---|---|---|"
    );
    for l in &r.run.latency {
        let _ = writeln!(
            md,
            "| {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
            l.name, l.samples, l.min_ms, l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms
        );
    }
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

/// A self-contained HTML page (inline style, no external resources).
pub fn html_page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\n<style>body{{font-family:sans-serif;max-width:820px;margin:2em auto;color:#222}} pre{{background:#f6f6f6;padding:1em;overflow:auto;font-size:12px}} h2{{margin-top:1.6em}}</style></head>\n<body>\n{body}</body></html>\n",
        esc(title)
    )
}

/// "Nines" of a cosine, -log10(1 - cos), capped at 12 (cos = 1 exactly).
fn nines(cos: f64) -> f64 {
    if cos >= 1.0 {
        12.0
    } else {
        (-(1.0 - cos).log10()).clamp(0.0, 12.0)
    }
}

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

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

pub fn svg_series(
    id: &str,
    title: &str,
    labels: &[String],
    series: &[(&str, &str, Vec<f64>)],
) -> String {
    let n = labels.len().max(2);
    let (w, h, left, bottom) = (760.0, 320.0, 50.0, 120.0);
    let right = 90.0;
    let x = |i: usize| left + i as f64 * (w - left - right) / (n - 1) as f64;
    let y = |v: f64| 20.0 + (12.0 - v) * (h - bottom - 20.0) / 12.0;
    let mut s = format!(
        r#"<svg id="{id}" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img"><title>{}</title>"#,
        esc(title)
    );
    for k in (0..=12).step_by(3) {
        let _ = write!(
            s,
            r##"<line x1="{left}" x2="{}" y1="{:.1}" y2="{:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" font-size="10" text-anchor="end">{k}</text>"##,
            w - 20.0,
            y(k as f64),
            y(k as f64),
            left - 4.0,
            y(k as f64) + 3.0
        );
    }
    let _ = write!(
        s,
        r#"<text x="12" y="{:.1}" font-size="11" transform="rotate(-90 12 {:.1})">nines: -log10(1-cos)</text>"#,
        h / 2.0,
        h / 2.0
    );
    for (i, label) in labels.iter().enumerate() {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="10" transform="rotate(45 {:.1} {:.1})">{}</text>"#,
            x(i),
            h - bottom + 14.0,
            x(i),
            h - bottom + 14.0,
            esc(label)
        );
    }
    for (k, (name, color, _)) in series.iter().enumerate() {
        let ly = 20.0 + 16.0 * k as f64;
        let _ = write!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="10" height="10" fill="{color}"/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
            w - right + 10.0,
            ly,
            w - right + 24.0,
            ly + 9.0,
            esc(name)
        );
    }
    for (name, color, values) in series {
        let points: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{:.1},{:.1}", x(i), y(nines(*v))))
            .collect();
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
            points.join(" ")
        );
        for (i, v) in values.iter().enumerate() {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"><title>{}: {}</title></circle>"#,
                x(i),
                y(nines(*v)),
                esc(name),
                fmt_cosine(*v)
            );
        }
    }
    s.push_str("</svg>");
    s
}

fn html(r: &RunReport) -> String {
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
    let layers: Vec<String> = (0..r.run.keys_per_layer_cosine.len())
        .map(|l| format!("layer {l}"))
        .collect();
    let md_table = markdown(r);
    let body = format!(
        r#"<h1>Chain run: {model} on {backend} ({mode})</h1>
<p>Result: <b>{result}</b>. Actions max abs error: {actions}. {emulated}</p>
<h2>Latency per component (p50 bar, min–max whisker)</h2>
{latency}
<h2>Cosine along the chain</h2>
{chain}
<h2>Per-layer K/V cosine</h2>
{kv}
<h2>Figures</h2>
<pre>{table}</pre>
"#,
        backend = esc(&r.run.backend),
        model = esc(&r.run.model),
        mode = esc(&r.run.mode),
        result = if r.pass { "pass" } else { "FAIL" },
        actions = r
            .actions_max_abs_err
            .map_or("-".into(), |e| format!("{e:.3e}")),
        emulated = if r.run.htp_emulated == Some(true) {
            "The HTP was emulated on x86_64."
        } else {
            ""
        },
        latency = svg_latency(r),
        chain = svg_series(
            "chain-cosine",
            "Cosine along the chain",
            &labels,
            &[("cosine", "#e45756", chain)]
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
        table = esc(&md_table),
    );
    html_page(&format!("run-{} {}", r.run.backend, r.run.model), &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_known_samples() {
        let s: Vec<f64> = (1..=100).map(f64::from).collect();
        let l = LatencyStats::of("x", &s);
        assert_eq!((l.min_ms, l.max_ms), (1.0, 100.0));
        assert!(
            (l.p50_ms - 51.0).abs() <= 1.0 && (l.p99_ms - 99.0).abs() <= 1.0,
            "{l:?}"
        );
    }

    #[test]
    fn nines_are_capped_and_monotonic() {
        assert_eq!(nines(1.0), 12.0);
        assert!((nines(0.999) - 3.0).abs() < 1e-9);
        assert!(nines(0.9999) > nines(0.999));
    }
}
