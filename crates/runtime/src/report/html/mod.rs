//! The HTML every report page shares, in one home: a self-contained page (inline style and
//! SVG, no network), the verdict box every page opens with, Markdown tables rendered as HTML,
//! and the plots (`plot`: cosine "nines" with their gate; `dist`: latency distributions;
//! `heat`: a verdict heatmap; `timeline`: steps over time).
//! Every HTML report draws through it.

pub mod dist;
pub mod heat;
pub mod plot;
pub mod timeline;

use std::fmt::Write as _;

pub use plot::{Series, svg_series};

/// A self-contained HTML page (inline style, no external resources).
/// The page title is the one `<h1>`: bodies start below it.
pub fn html_page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\n<style>{STYLE}</style></head>\n<body>\n<h1>{t}</h1>\n{body}</body></html>\n",
        t = esc(title)
    )
}

const STYLE: &str = "body{font-family:sans-serif;max-width:860px;margin:2em auto;color:#222} pre{background:#f6f6f6;padding:1em;overflow:auto;font-size:12px} table{border-collapse:collapse;font-size:12px;margin:1em 0} td,th{border:1px solid #ccc;padding:2px 6px;text-align:left} th{background:#f0f0f0} h2{margin-top:1.6em} .verdict{border-left:6px solid;padding:.6em 1em;margin:1em 0;background:#f7f7f7} .pass{border-color:#54a24b} .fail{border-color:#e45756} .note{border-color:#f2a93b} .verdict b.word{font-size:1.2em} .badge{display:inline-block;background:#f2a93b;color:#fff;border-radius:3px;padding:0 5px;font-size:11px}";

/// The box every page opens with: the verdict word, one sentence, and the items behind it
/// (failing boundaries, the next command). `kind` is `pass`, `fail` or `note`.
pub fn verdict_box(kind: &str, word: &str, sentence: &str, items: &[String]) -> String {
    let mut s = format!(
        "<div class=\"verdict {kind}\"><b class=\"word\">{}</b> {}",
        esc(word),
        esc(sentence)
    );
    if !items.is_empty() {
        s.push_str("<ul>");
        for i in items {
            let _ = write!(s, "<li>{}</li>", inline(i));
        }
        s.push_str("</ul>");
    }
    s.push_str("</div>\n");
    s
}

/// A report's Markdown as HTML without its own `# title` line (the page has it already).
pub fn markdown_body(md: &str) -> String {
    let body = match md.split_once('\n') {
        Some((first, rest)) if first.starts_with("# ") => rest,
        _ => md,
    };
    markdown_to_html(body)
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
            let cells = table_cells(row);
            if cells
                .iter()
                .all(|c| c.trim().chars().all(|ch| ch == '-' || ch == ':'))
            {
                continue;
            }
            let tag = if i == 0 { "th" } else { "td" };
            out.push_str("<tr>");
            for c in &cells {
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

/// The cells of one Markdown table row: split at every `|` but an escaped `\|` (a `|` inside
/// a cell, such as `|y|/|golden|`), which becomes a plain `|`.
fn table_cells(row: &str) -> Vec<String> {
    let row = row.trim();
    let row = row.strip_prefix('|').unwrap_or(row);
    let row = match row.strip_suffix('|') {
        Some(r) if !r.ends_with('\\') => r,
        _ => row,
    };
    let mut cells = vec![String::new()];
    let mut chars = row.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                if let Some(c) = cells.last_mut() {
                    c.push('|');
                }
            }
            '|' => cells.push(String::new()),
            _ => {
                if let Some(c) = cells.last_mut() {
                    c.push(ch);
                }
            }
        }
    }
    cells
}

/// Escapes a Markdown span and turns its `**bold**`, `*em*` and `` `code` `` into tags, and
/// its `<br>` (the line break of a Markdown table cell, the only HTML our reports write) into one.
fn inline(text: &str) -> String {
    let mut out = String::new();
    let mut open = [false; 3];
    let mut rest = esc(text).replace("&lt;br&gt;", "<br>");
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

/// The opening of an inline SVG figure: its id, size and an accessible title.
pub fn svg_open(id: &str, title: &str, w: f64, h: f64) -> String {
    format!(
        r#"<svg id="{id}" xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" role="img"><title>{}</title>"#,
        esc(title)
    )
}

/// Five vertical grid lines from 0 to `max` (x = `left + value × scale`), each with its value
/// and `unit` under the axis at `axis_y`: the x axis of the distribution and timeline figures.
pub fn x_grid(s: &mut String, left: f64, scale: f64, max: f64, axis_y: f64, unit: &str) {
    for k in 0..=4 {
        let v = max * k as f64 / 4.0;
        let x = left + v * scale;
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="14" y2="{axis_y:.1}" stroke="#eee"/><text x="{x:.1}" y="{:.1}" font-size="10" text-anchor="middle">{v:.1} {unit}</text>"##,
            axis_y + 14.0
        );
    }
}

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_tables_become_html_tables() {
        let html = markdown_to_html(
            "# Title `x`\n\n| a | b |\n|---|---|\n| **1** | <2> |\n| x<br>y | <br/> |\n\nText *em* here  \n",
        );
        assert!(html.contains("<h1>Title <code>x</code></h1>"), "{html}");
        assert!(html.contains("<tr><th>a</th><th>b</th></tr>"), "{html}");
        assert!(
            html.contains("<tr><td><b>1</b></td><td>&lt;2&gt;</td></tr>"),
            "{html}"
        );
        assert!(
            html.contains("<tr><td>x<br>y</td><td>&lt;br/&gt;</td></tr>"),
            "{html}"
        );
        assert!(!html.contains("---"), "{html}");
        assert!(html.contains("<p>Text <em>em</em> here</p>"), "{html}");
    }

    #[test]
    fn an_escaped_bar_stays_inside_its_cell() {
        let html = markdown_to_html("| a | \\|y\\|/\\|gold\\| |\n|---|---|\n| 1 | 2 |\n");
        assert!(
            html.contains("<tr><th>a</th><th>|y|/|gold|</th></tr>"),
            "{html}"
        );
        assert!(html.contains("<tr><td>1</td><td>2</td></tr>"), "{html}");
    }

    #[test]
    fn esc_escapes_markup() {
        assert_eq!(esc("<a & b>"), "&lt;a &amp; b&gt;");
    }
}
