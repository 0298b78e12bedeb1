//! The size/error frontier as an offline SVG: every configuration measured as a point (bundle
//! MB across, the final actions' largest absolute error against the float golden up, on a log
//! scale), the frontier joined by a line, the budget as a dashed red line, the proposal ringed.

use std::fmt::Write as _;

use super::search::Measured;
use crate::report::html::esc;

/// The plot; `frontier` and `proposal` index into `tried`.
pub fn frontier_svg(
    tried: &[Measured],
    frontier: &[usize],
    proposal: Option<usize>,
    budget: f64,
) -> String {
    let (w, h, left, right, top, bottom) = (780.0, 360.0, 70.0, 30.0, 20.0, 50.0);
    let ok: Vec<(usize, &Measured)> = tried
        .iter()
        .enumerate()
        .filter(|(_, m)| m.error.is_none() && m.actions_max_abs.is_finite())
        .collect();
    let mb = |m: &Measured| m.bytes as f64 / 1e6;
    let max_mb = ok.iter().map(|(_, m)| mb(m)).fold(1e-3, f64::max) * 1.05;
    // Errors from 1e-8 (an exact match shows at the floor) to above the budget.
    let floor = 1e-8_f64;
    let lg = |e: f64| e.max(floor).log10();
    let top_err = ok
        .iter()
        .map(|(_, m)| m.actions_max_abs)
        .fold(budget, f64::max)
        .max(floor * 10.0)
        * 3.0;
    let (lo, hi) = (lg(floor), lg(top_err));
    let x = |v: f64| left + v / max_mb * (w - left - right);
    let y = |e: f64| top + (hi - lg(e)) / (hi - lo) * (h - top - bottom);
    let mut s = format!(
        r##"<svg id="frontier" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif"><title>Bundle bytes against the actions' error</title>"##
    );
    for k in (lo.ceil() as i32)..=(hi.floor() as i32) {
        let yk = y(10f64.powi(k));
        let _ = write!(
            s,
            r##"<line x1="{left}" x2="{:.1}" y1="{yk:.1}" y2="{yk:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">1e{k}</text>"##,
            w - right,
            left - 4.0,
            yk + 3.0
        );
    }
    for i in 0..=4 {
        let v = max_mb * i as f64 / 4.0;
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle">{v:.1}</text>"##,
            x(v),
            h - bottom + 14.0
        );
    }
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">context binaries, MB</text><text x="14" y="{:.1}" font-size="11" transform="rotate(-90 14 {:.1})" text-anchor="middle">actions max |error| vs float golden</text>"##,
        (left + w - right) / 2.0,
        h - 12.0,
        h / 2.0,
        h / 2.0
    );
    let yb = y(budget);
    let _ = write!(
        s,
        r##"<line x1="{left}" x2="{:.1}" y1="{yb:.1}" y2="{yb:.1}" stroke="#d62728" stroke-dasharray="6 4"/><text x="{:.1}" y="{:.1}" font-size="10" fill="#d62728" text-anchor="end">budget {budget:.0e}</text>"##,
        w - right,
        w - right,
        yb - 4.0
    );
    let line: Vec<String> = frontier
        .iter()
        .filter_map(|&i| tried.get(i))
        .map(|m| format!("{:.1},{:.1}", x(mb(m)), y(m.actions_max_abs)))
        .collect();
    if line.len() > 1 {
        let _ = write!(
            s,
            r##"<polyline points="{}" fill="none" stroke="#1f77b4" stroke-width="1.5"/>"##,
            line.join(" ")
        );
    }
    for (i, m) in &ok {
        let on = frontier.contains(i);
        let tip = format!(
            "{}: {:.2} MB, max |err| {:.3e}, cosine {:.8}",
            m.why,
            mb(m),
            m.actions_max_abs,
            m.actions_cosine
        );
        let _ = write!(
            s,
            r##"<circle cx="{:.1}" cy="{:.1}" r="{}" fill="{}"><title>{}</title></circle>"##,
            x(mb(m)),
            y(m.actions_max_abs),
            if on { 4.5 } else { 3.0 },
            if on { "#1f77b4" } else { "#999" },
            esc(&tip)
        );
        if Some(*i) == proposal {
            let _ = write!(
                s,
                r##"<circle cx="{:.1}" cy="{:.1}" r="9" fill="none" stroke="#2ca02c" stroke-width="2"><title>proposed</title></circle>"##,
                x(mb(m)),
                y(m.actions_max_abs)
            );
        }
    }
    s.push_str("</svg>");
    s
}
