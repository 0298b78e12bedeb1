//! A timeline: one bar per item on a shared time axis (a Gantt chart), each annotated with a
//! short text (the build's steps with the memory each added).

use std::fmt::Write as _;

use super::esc;

pub struct Bar {
    pub label: String,
    /// Seconds from the timeline's start; None for an item that did not run (drawn as a mark).
    pub start_s: Option<f64>,
    pub seconds: f64,
    pub color: &'static str,
    pub text: String,
    pub tooltip: String,
}

pub fn svg_timeline(id: &str, title: &str, bars: &[Bar]) -> String {
    let end = bars
        .iter()
        .filter_map(|b| b.start_s.map(|s| s + b.seconds))
        .fold(0.0f64, f64::max)
        .max(1e-3);
    let (w, row_h, left, right) = (800.0, 20.0, 190.0, 170.0);
    let h = bars.len() as f64 * row_h + 46.0;
    let scale = (w - left - right) / end;
    let mut s = super::svg_open(id, title, w, h);
    let axis_y = bars.len() as f64 * row_h + 22.0;
    super::x_grid(&mut s, left, scale, end, axis_y, "s");
    for (i, b) in bars.iter().enumerate() {
        let y = 16.0 + i as f64 * row_h;
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"#,
            left - 6.0,
            y + 11.0,
            esc(&b.label)
        );
        let (x, bw) = match b.start_s {
            Some(st) => (left + st * scale, (b.seconds * scale).max(2.0)),
            None => (left, 2.0),
        };
        let _ = write!(
            s,
            r#"<g><rect x="{x:.1}" y="{y:.1}" width="{bw:.1}" height="14" fill="{}"/><title>{}</title></g><text x="{:.1}" y="{:.1}" font-size="10">{}</text>"#,
            b.color,
            esc(&b.tooltip),
            (x + bw + 4.0).min(w - right + 4.0),
            y + 11.0,
            esc(&b.text)
        );
    }
    s.push_str("</svg>");
    s
}
