//! A heatmap: one row per item, one column per condition, each cell coloured by its verdict
//! with the figures in its tooltip; a legend names the colours.

use std::fmt::Write as _;

use super::esc;

/// One cell: its colour, a one-word mark drawn in it, and its tooltip.
pub struct Cell {
    pub color: &'static str,
    pub mark: &'static str,
    pub tooltip: String,
}

pub fn svg_heatmap(
    id: &str,
    title: &str,
    rows: &[String],
    cols: &[String],
    cells: &[Vec<Option<Cell>>],
    legend: &[(&str, &str)],
) -> String {
    let (left, top, cw, ch) = (260.0, 110.0, 44.0, 18.0);
    let w = left + cols.len() as f64 * cw + 20.0;
    let h = top + rows.len() as f64 * ch + 40.0;
    let mut s = super::svg_open(id, title, w, h);
    for (j, c) in cols.iter().enumerate() {
        let (x, y) = (left + j as f64 * cw + cw / 2.0, top - 6.0);
        let _ = write!(
            s,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="10" transform="rotate(-50 {x:.1} {y:.1})">{}</text>"#,
            esc(c)
        );
    }
    for (i, r) in rows.iter().enumerate() {
        let y = top + i as f64 * ch;
        let short: String = r.chars().take(42).collect();
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{}<title>{}</title></text>"#,
            left - 6.0,
            y + 12.0,
            esc(&short),
            esc(r)
        );
        for (j, cell) in cells[i].iter().enumerate() {
            let x = left + j as f64 * cw;
            match cell {
                Some(c) => {
                    let _ = write!(
                        s,
                        r##"<g><rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}" stroke="#fff"/><text x="{:.1}" y="{:.1}" font-size="9" text-anchor="middle" fill="#fff">{}</text><title>{}</title></g>"##,
                        cw - 1.0,
                        ch - 1.0,
                        c.color,
                        x + cw / 2.0,
                        y + 12.0,
                        c.mark,
                        esc(&c.tooltip)
                    );
                }
                None => {
                    let _ = write!(
                        s,
                        r##"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="#f4f4f4" stroke="#fff"><title>not measured</title></rect>"##,
                        cw - 1.0,
                        ch - 1.0
                    );
                }
            }
        }
    }
    let ly = top + rows.len() as f64 * ch + 20.0;
    for (k, (name, color)) in legend.iter().enumerate() {
        let x = left + k as f64 * 110.0;
        let _ = write!(
            s,
            r#"<rect x="{x:.1}" y="{ly:.1}" width="10" height="10" fill="{color}"/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
            x + 14.0,
            ly + 9.0,
            esc(name)
        );
    }
    s.push_str("</svg>");
    s
}
