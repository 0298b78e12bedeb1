//! Latency as a distribution: every raw sample as a dot, the median as a tick, min–max as a
//! line, per row; a row with fewer than 10 samples carries an "n < 10" badge, because its
//! p90/p99 are then just its largest samples.

use std::fmt::Write as _;

use super::esc;

/// Rows of fewer samples than this are badged.
pub const FEW: usize = 10;

/// One row: a name and its raw samples in ms.
pub struct Row<'a> {
    pub name: &'a str,
    pub samples_ms: &'a [f64],
}

/// The plot: one row per entry on a shared ms axis scaled to the largest finite sample.
pub fn svg_distribution(id: &str, title: &str, rows: &[Row]) -> String {
    let max = rows
        .iter()
        .flat_map(|r| r.samples_ms.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let (w, row_h, left, right) = (780.0, 28.0, 150.0, 120.0);
    let h = rows.len() as f64 * row_h + 46.0;
    let scale = (w - left - right) / max;
    let mut s = super::svg_open(id, title, w, h);
    // x axis: 5 ticks in ms.
    let axis_y = rows.len() as f64 * row_h + 22.0;
    super::x_grid(&mut s, left, scale, max, axis_y, "ms");
    let lane = Lane {
        left,
        scale,
        right_edge: w - right,
    };
    for (i, r) in rows.iter().enumerate() {
        lane.draw(&mut s, r, 24.0 + i as f64 * row_h);
    }
    s.push_str("</svg>");
    s
}

/// Where a row's figures go: ms from `left` at `scale` px per ms; the sample count and badge
/// right of `right_edge`.
struct Lane {
    left: f64,
    scale: f64,
    right_edge: f64,
}

impl Lane {
    /// One row at height `y`: its name, the min–max line and the median tick, every sample as
    /// a dot, its sample count, and the badge when there are few.
    fn draw(&self, s: &mut String, r: &Row, y: f64) {
        let (left, scale) = (self.left, self.scale);
        let mut v: Vec<f64> = r
            .samples_ms
            .iter()
            .copied()
            .filter(|x| x.is_finite())
            .collect();
        v.sort_by(f64::total_cmp);
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end">{}</text>"#,
            left - 6.0,
            y + 4.0,
            esc(r.name)
        );
        let (Some(lo), Some(hi)) = (v.first(), v.last()) else {
            return;
        };
        let med = v[v.len() / 2];
        let _ = write!(
            s,
            r##"<line x1="{:.1}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#999"/><line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#222" stroke-width="2"><title>{}: median {med:.2} ms</title></line>"##,
            left + lo * scale,
            left + hi * scale,
            left + med * scale,
            left + med * scale,
            y - 8.0,
            y + 8.0,
            esc(r.name)
        );
        self.samples(s, r, y);
        self.count(s, v.len(), y);
    }

    /// Every finite sample as a dot with its run number.
    fn samples(&self, s: &mut String, r: &Row, y: f64) {
        for (k, x) in r
            .samples_ms
            .iter()
            .enumerate()
            .filter(|(_, x)| x.is_finite())
        {
            // A small deterministic vertical spread so equal samples do not hide each other.
            let dy = ((k % 5) as f64 - 2.0) * 2.0;
            let _ = write!(
                s,
                r##"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="#4c78a8" fill-opacity="0.7"><title>{} run {}: {x:.2} ms</title></circle>"##,
                self.left + x * self.scale,
                y + dy,
                esc(r.name),
                k + 1
            );
        }
    }

    /// `n = …`, and the "n < 10" badge: with few samples p90/p99 are just the largest ones.
    fn count(&self, s: &mut String, n: usize, y: f64) {
        let edge = self.right_edge;
        let label = format!("n = {n}");
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="10">{label}</text>"#,
            edge + 8.0,
            y + 4.0
        );
        if n < FEW {
            let _ = write!(
                s,
                r##"<g class="few"><rect x="{:.1}" y="{:.1}" width="44" height="14" rx="3" fill="#f2a93b"/><text x="{:.1}" y="{:.1}" font-size="10" fill="#fff">n &lt; {FEW}</text><title>only {n} sample(s): p90/p99 are the largest samples, not percentiles</title></g>"##,
                edge + 52.0,
                y - 7.0,
                edge + 57.0,
                y + 4.0
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sample_is_drawn_and_few_samples_are_badged() {
        let few = [1.0, 2.0];
        let many: Vec<f64> = (1..=12).map(f64::from).collect();
        let svg = svg_distribution(
            "d",
            "t",
            &[
                Row {
                    name: "a",
                    samples_ms: &few,
                },
                Row {
                    name: "b",
                    samples_ms: &many,
                },
            ],
        );
        assert_eq!(svg.matches("<circle").count(), 14);
        assert_eq!(svg.matches(r#"class="few""#).count(), 1, "{svg}");
        assert!(svg.contains("n &lt; 10") && svg.contains("n = 12"));
    }
}
