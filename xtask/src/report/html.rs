//! The HTML every report page shares: one self-contained page (inline style, no network) and
//! the "nines of cosine" SVG line plot used by `run` and `bisect`.

use std::fmt::Write as _;

use super::fmt_cosine;

/// A self-contained HTML page (inline style, no external resources).
pub fn html_page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\n<style>body{{font-family:sans-serif;max-width:820px;margin:2em auto;color:#222}} pre{{background:#f6f6f6;padding:1em;overflow:auto;font-size:12px}} table{{border-collapse:collapse;font-size:12px;margin:1em 0}} td,th{{border:1px solid #ccc;padding:2px 6px;text-align:left}} th{{background:#f0f0f0}} h2{{margin-top:1.6em}}</style></head>\n<body>\n{body}</body></html>\n",
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

/// Renders the Markdown our reports write (headings, `|` tables, paragraphs, `**bold**`,
/// `` `code` ``) as HTML, so a page shows real tables instead of Markdown source; the Markdown
/// stays the single source of every figure.
pub fn markdown_to_html(md: &str) -> String {
    let mut out = String::new();
    let mut rows: Vec<&str> = Vec::new();
    let flush = |rows: &mut Vec<&str>, out: &mut String| {
        if rows.is_empty() {
            return;
        }
        out.push_str("<table>\n");
        for (i, row) in rows.iter().enumerate() {
            let cells: Vec<&str> = row.trim().trim_matches('|').split('|').collect();
            if cells
                .iter()
                .all(|c| c.trim().chars().all(|ch| ch == '-' || ch == ':'))
            {
                continue;
            }
            let tag = if i == 0 { "th" } else { "td" };
            out.push_str("<tr>");
            for c in cells {
                let _ = write!(out, "<{tag}>{}</{tag}>", inline(c.trim()));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
        rows.clear();
    };
    for line in md.lines() {
        if line.trim_start().starts_with('|') {
            rows.push(line);
            continue;
        }
        flush(&mut rows, &mut out);
        let level = line.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&level) && line[level..].starts_with(' ') {
            let _ = writeln!(out, "<h{level}>{}</h{level}>", inline(line[level..].trim()));
        } else if !line.trim().is_empty() {
            let _ = writeln!(out, "<p>{}</p>", inline(line.trim().trim_end_matches("  ")));
        }
    }
    flush(&mut rows, &mut out);
    out
}

/// Escapes a Markdown span and turns its `**bold**`, `*em*` and `` `code` `` into tags.
fn inline(text: &str) -> String {
    let mut out = String::new();
    let mut open = [false; 3];
    let mut rest = esc(text);
    while let Some((at, marker, k)) = [("**", 0), ("`", 1), ("*", 2)]
        .iter()
        .filter_map(|(m, k)| rest.find(m).map(|at| (at, *m, *k)))
        .min_by_key(|(at, m, _)| (*at, usize::MAX - m.len()))
    {
        let tag = ["b", "code", "em"][k];
        out.push_str(&rest[..at]);
        let _ = write!(out, "<{}{tag}>", if open[k] { "/" } else { "" });
        open[k] = !open[k];
        rest = rest[at + marker.len()..].to_string();
    }
    out.push_str(&rest);
    for (k, tag) in ["b", "code", "em"].iter().enumerate() {
        if open[k] {
            let _ = write!(out, "</{tag}>");
        }
    }
    out
}

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
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
        // Points with no measurement (NaN) are left out of the line.
        let points: Vec<String> = values
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_finite())
            .map(|(i, v)| format!("{:.1},{:.1}", x(i), y(nines(*v))))
            .collect();
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
            points.join(" ")
        );
        for (i, v) in values.iter().enumerate().filter(|(_, v)| v.is_finite()) {
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
    fn markdown_tables_become_html_tables() {
        let html = markdown_to_html(
            "# Title `x`\n\n| a | b |\n|---|---|\n| **1** | <2> |\n\nText *em* here  \n",
        );
        assert!(html.contains("<h1>Title <code>x</code></h1>"), "{html}");
        assert!(html.contains("<tr><th>a</th><th>b</th></tr>"), "{html}");
        assert!(
            html.contains("<tr><td><b>1</b></td><td>&lt;2&gt;</td></tr>"),
            "{html}"
        );
        assert!(!html.contains("---"), "{html}");
        assert!(html.contains("<p>Text <em>em</em> here</p>"), "{html}");
    }

    #[test]
    fn esc_escapes_markup() {
        assert_eq!(esc("<a & b>"), "&lt;a &amp; b&gt;");
    }
}
