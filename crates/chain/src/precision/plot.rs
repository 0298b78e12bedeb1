//! The size/error frontier as an offline SVG: every configuration measured as a point (bundle
//! MB across, the final actions' largest absolute error against the float golden up, on a log
//! scale), the frontier joined by a line, the budget as a dashed red line, the proposal ringed.

use std::fmt::Write as _;

use super::outcome::Measured;
use xtask_runtime::report::html::esc;

/// The plot's frame: its size, margins and both scales.
struct Frame {
    w: f64,
    h: f64,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    max_mb: f64,
    /// log10 of the lowest and highest error shown.
    lo: f64,
    hi: f64,
}

/// Errors from 1e-8 (an exact match shows at the floor) to above the budget.
const FLOOR: f64 = 1e-8;

fn mb(m: &Measured) -> f64 {
    m.bytes as f64 / 1e6
}

impl Frame {
    fn of(ok: &[(usize, &Measured)], budget: f64) -> Self {
        let top_err = ok
            .iter()
            .map(|(_, m)| m.actions_max_abs)
            .fold(budget, f64::max)
            .max(FLOOR * 10.0)
            * 3.0;
        Frame {
            w: 780.0,
            h: 360.0,
            left: 70.0,
            right: 30.0,
            top: 20.0,
            bottom: 50.0,
            max_mb: ok.iter().map(|(_, m)| mb(m)).fold(1e-3, f64::max) * 1.05,
            lo: FLOOR.log10(),
            hi: top_err.log10(),
        }
    }

    fn x(&self, v: f64) -> f64 {
        self.left + v / self.max_mb * (self.w - self.left - self.right)
    }

    fn y(&self, e: f64) -> f64 {
        let lg = e.max(FLOOR).log10();
        self.top + (self.hi - lg) / (self.hi - self.lo) * (self.h - self.top - self.bottom)
    }

    /// Grid lines, tick labels, axis titles and the budget line.
    fn axes(&self, s: &mut String, budget: f64, label: &str) {
        let (w, h, left, right, bottom) = (self.w, self.h, self.left, self.right, self.bottom);
        for k in (self.lo.ceil() as i32)..=(self.hi.floor() as i32) {
            let yk = self.y(10f64.powi(k));
            let _ = write!(
                s,
                r##"<line x1="{left}" x2="{:.1}" y1="{yk:.1}" y2="{yk:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">1e{k}</text>"##,
                w - right,
                left - 4.0,
                yk + 3.0
            );
        }
        for i in 0..=4 {
            let v = self.max_mb * i as f64 / 4.0;
            let _ = write!(
                s,
                r##"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle">{v:.1}</text>"##,
                self.x(v),
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
        let yb = self.y(budget);
        let _ = write!(
            s,
            r##"<line x1="{left}" x2="{:.1}" y1="{yb:.1}" y2="{yb:.1}" stroke="#d62728" stroke-dasharray="6 4"/><text x="{:.1}" y="{:.1}" font-size="10" fill="#d62728" text-anchor="end">{}</text>"##,
            w - right,
            w - right,
            yb - 4.0,
            esc(label)
        );
    }
}

/// The plot; `frontier` and `proposal` index into `tried`; `budget` is the limit every
/// configuration was judged by, drawn with `label` (`budget 1e-2`, `float + budget 3.4e-3`).
pub fn frontier_svg(
    tried: &[Measured],
    frontier: &[usize],
    proposal: Option<usize>,
    budget: f64,
    label: &str,
) -> String {
    let ok: Vec<(usize, &Measured)> = tried.iter().enumerate().filter(|(_, m)| m.ok()).collect();
    let f = Frame::of(&ok, if budget.is_finite() { budget } else { FLOOR });
    let mut s = format!(
        r##"<svg id="frontier" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif"><title>Bundle bytes against the actions' error</title>"##,
        w = f.w,
        h = f.h
    );
    f.axes(&mut s, budget, label);
    let line: Vec<String> = frontier
        .iter()
        .filter_map(|&i| tried.get(i))
        .map(|m| format!("{:.1},{:.1}", f.x(mb(m)), f.y(m.actions_max_abs)))
        .collect();
    if line.len() > 1 {
        let _ = write!(
            s,
            r##"<polyline points="{}" fill="none" stroke="#1f77b4" stroke-width="1.5"/>"##,
            line.join(" ")
        );
    }
    for (i, m) in &ok {
        points(&mut s, &f, m, frontier.contains(i), Some(*i) == proposal);
    }
    s.push_str("</svg>");
    s
}

/// One configuration's point (larger and blue on the frontier), ringed when proposed.
fn points(s: &mut String, f: &Frame, m: &Measured, on: bool, proposed: bool) {
    let tip = format!(
        "{}: {:.2} MB, max |err| {:.3e}, cosine {:.8}",
        m.why,
        mb(m),
        m.actions_max_abs,
        m.actions_cosine
    );
    let (cx, cy) = (f.x(mb(m)), f.y(m.actions_max_abs));
    let _ = write!(
        s,
        r##"<circle cx="{cx:.1}" cy="{cy:.1}" r="{}" fill="{}"><title>{}</title></circle>"##,
        if on { 4.5 } else { 3.0 },
        if on { "#1f77b4" } else { "#999" },
        esc(&tip)
    );
    if proposed {
        let _ = write!(
            s,
            r##"<circle cx="{cx:.1}" cy="{cy:.1}" r="9" fill="none" stroke="#2ca02c" stroke-width="2"><title>proposed</title></circle>"##
        );
    }
}
