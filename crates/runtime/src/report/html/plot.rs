//! The "nines of cosine" line plot (-log10(1 - cos): 3 = 0.999, 6 = 0.999999) with the gate
//! drawn as a line, so a reader sees how far every point is from failing. Many points get
//! sampled axis labels (every point keeps its name in a tooltip), and series that coincide stay
//! visible: each later series is dashed with hollow, larger markers.

use std::fmt::Write as _;

use super::esc;
use crate::report::fmt_cosine;

/// One line: legend name, colour and one value per label (NaN = not measured).
pub struct Series<'a> {
    pub name: &'a str,
    pub color: &'a str,
    pub values: Vec<f64>,
}

/// At most this many x labels are written; the others are in the points' tooltips.
const MAX_LABELS: usize = 16;

/// "Nines" of a cosine, -log10(1 - cos), capped at 12 (cos = 1 exactly).
pub fn nines(cos: f64) -> f64 {
    if cos >= 1.0 {
        12.0
    } else {
        (-(1.0 - cos).log10()).clamp(0.0, 12.0)
    }
}

/// Which of `n` labels are written: all when they fit, else evenly spaced with the last kept.
pub fn sampled(n: usize) -> Vec<usize> {
    if n <= MAX_LABELS {
        return (0..n).collect();
    }
    let step = n.div_ceil(MAX_LABELS - 1);
    let mut keep: Vec<usize> = (0..n).step_by(step).collect();
    if keep.last() != Some(&(n - 1)) {
        keep.push(n - 1);
    }
    keep
}

/// The plot; `gate` is the minimum cosine drawn as a dashed red line (None: no gate applies).
pub fn svg_series(
    id: &str,
    title: &str,
    labels: &[String],
    series: &[Series],
    gate: Option<f64>,
) -> String {
    let f = Frame::new(labels.len());
    let mut s = super::svg_open(id, title, f.w, f.h);
    f.nines_axis(&mut s);
    if let Some(g) = gate {
        f.gate_line(&mut s, g);
    }
    f.x_labels(&mut s, labels);
    f.legend(&mut s, series, gate.is_some());
    for (k, se) in series.iter().enumerate() {
        f.series(&mut s, k, se, labels);
    }
    s.push_str("</svg>");
    s
}

/// The plot's geometry: its size, margins and the point positions of `n` labels.
struct Frame {
    n: usize,
    w: f64,
    h: f64,
    left: f64,
    bottom: f64,
    right: f64,
}

impl Frame {
    fn new(labels: usize) -> Frame {
        let (w, h, left, bottom, right) = (780.0, 330.0, 50.0, 120.0, 110.0);
        Frame {
            n: labels.max(2),
            w,
            h,
            left,
            bottom,
            right,
        }
    }

    /// The x of the `i`th label.
    fn x(&self, i: usize) -> f64 {
        self.left + i as f64 * (self.w - self.left - self.right) / (self.n - 1) as f64
    }

    /// The y of `v` nines (0 at the bottom, 12 at the top).
    fn y(&self, v: f64) -> f64 {
        20.0 + (12.0 - v) * (self.h - self.bottom - 20.0) / 12.0
    }

    /// Grid lines every 3 nines, and the axis title.
    fn nines_axis(&self, s: &mut String) {
        let (w, h, left, right) = (self.w, self.h, self.left, self.right);
        for k in (0..=12).step_by(3) {
            let yk = self.y(k as f64);
            let _ = write!(
                s,
                r##"<line x1="{left}" x2="{:.1}" y1="{yk:.1}" y2="{yk:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{k}</text>"##,
                w - right,
                left - 4.0,
                yk + 3.0
            );
        }
        let _ = write!(
            s,
            r#"<text x="12" y="{:.1}" font-size="11" transform="rotate(-90 12 {:.1})">nines: -log10(1-cos)</text>"#,
            h / 2.0,
            h / 2.0
        );
    }

    /// The gate as a dashed red line with its value.
    fn gate_line(&self, s: &mut String, g: f64) {
        let (w, left, right) = (self.w, self.left, self.right);
        let yg = self.y(nines(g));
        let _ = write!(
            s,
            r##"<line class="gate" x1="{left}" x2="{:.1}" y1="{yg:.1}" y2="{yg:.1}" stroke="#d62728" stroke-width="1.5" stroke-dasharray="6 3"><title>gate: cosine ≥ {g}</title></line><text x="{:.1}" y="{:.1}" font-size="10" fill="#d62728">gate {g}</text>"##,
            w - right,
            w - right + 4.0,
            yg + 3.0
        );
    }

    /// The sampled x labels, slanted, cut short (`short`).
    fn x_labels(&self, s: &mut String, labels: &[String]) {
        for i in sampled(labels.len()) {
            let (lx, ly) = (self.x(i), self.h - self.bottom + 14.0);
            let _ = write!(
                s,
                r#"<text x="{lx:.1}" y="{ly:.1}" font-size="10" transform="rotate(40 {lx:.1} {ly:.1})">{}</text>"#,
                esc(&short(&labels[i]))
            );
        }
    }

    /// One legend entry per series, below the gate's label when there is one.
    fn legend(&self, s: &mut String, series: &[Series], gated: bool) {
        let (w, right) = (self.w, self.right);
        for (k, se) in series.iter().enumerate() {
            let ly = 20.0 + 16.0 * k as f64 + if gated { 16.0 } else { 0.0 };
            let _ = write!(
                s,
                r#"<rect x="{:.1}" y="{ly:.1}" width="10" height="10" fill="{}"/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
                w - right + 10.0,
                se.color,
                w - right + 24.0,
                ly + 9.0,
                esc(se.name)
            );
        }
    }

    /// The `k`th series: its line through the finite values, then a marker with a tooltip per
    /// value. Later series are dashed, their markers hollow and larger, so a point under an
    /// earlier one still shows.
    fn series(&self, s: &mut String, k: usize, se: &Series, labels: &[String]) {
        let dash = if k == 0 {
            ""
        } else {
            r#" stroke-dasharray="5 3""#
        };
        let points: Vec<String> = se
            .values
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_finite())
            .map(|(i, v)| format!("{:.1},{:.1}", self.x(i), self.y(nines(*v))))
            .collect();
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{}" stroke-width="2"{dash} points="{}"/>"#,
            se.color,
            points.join(" ")
        );
        let (r, fill) = if k == 0 {
            (3.0, se.color)
        } else {
            (3.0 + 2.0 * k as f64, "none")
        };
        for (i, v) in se.values.iter().enumerate().filter(|(_, v)| v.is_finite()) {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="{r}" fill="{fill}" stroke="{}" stroke-width="1.5"><title>{} · {}: cosine {}</title></circle>"#,
                self.x(i),
                self.y(nines(*v)),
                se.color,
                esc(labels.get(i).map_or("", String::as_str)),
                esc(se.name),
                fmt_cosine(*v)
            );
        }
    }
}

/// An axis label cut to 28 characters (the tooltip keeps the whole name).
fn short(label: &str) -> String {
    if label.chars().count() <= 28 {
        label.to_string()
    } else {
        format!("{}…", label.chars().take(27).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nines_are_capped_and_monotonic() {
        assert_eq!(nines(1.0), 12.0);
        assert!((nines(0.999) - 3.0).abs() < 1e-9);
        assert!(nines(0.9999) > nines(0.999));
    }

    #[test]
    fn labels_are_sampled_with_the_last_kept() {
        assert_eq!(sampled(5), vec![0, 1, 2, 3, 4]);
        let s = sampled(85);
        assert!(s.len() <= MAX_LABELS + 1, "{s:?}");
        assert_eq!((s[0], *s.last().unwrap()), (0, 84));
    }

    #[test]
    fn the_gate_is_drawn_and_every_point_has_a_tooltip() {
        let labels: Vec<String> = (0..40).map(|i| format!("op{i}")).collect();
        let one = |c| Series {
            name: "keys",
            color: "#000",
            values: vec![c; 40],
        };
        let svg = svg_series("p", "t", &labels, &[one(0.9999), one(0.9999)], Some(0.999));
        assert!(
            svg.contains(r#"class="gate""#) && svg.contains("gate 0.999"),
            "{svg}"
        );
        assert_eq!(svg.matches("<circle").count(), 80);
        assert!(svg.contains("op39 · keys"), "every point names its label");
        assert!(
            svg.contains(r#"r="5" fill="none""#),
            "the second series is hollow"
        );
        assert!(!svg.contains(">op1<"), "labels are sampled");
    }
}
