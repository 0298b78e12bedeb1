//! The conformance page: the findings first, then a heatmap of every operator (with its
//! attribute set and shapes) × input set × backend, coloured by verdict, then the tables.

use std::path::Path;

use anyhow::Result;

use super::judge::Verdict;
use super::report::{ConformanceReport, Row, markdown};
use xtask_base::vocab::BackendKind;
use xtask_runtime::report::html::heat::{Cell, svg_heatmap};
use xtask_runtime::report::html::{html_page, markdown_body, verdict_box};

fn color(v: Verdict) -> (&'static str, &'static str) {
    match v {
        Verdict::Ok => ("#54a24b", "ok"),
        Verdict::Range => ("#f2a93b", "rng"),
        Verdict::Deviates => ("#e45756", "dev"),
        Verdict::Unsupported => ("#888888", "uns"),
        Verdict::Error => ("#222222", "err"),
    }
}

/// The page: the verdict box with every finding, the heatmap, then the Markdown's tables.
pub fn html(r: &ConformanceReport) -> String {
    let grid = Grid::of(r);
    let findings = finding_lines(r);
    let sentence = format!(
        "{} operator signature(s) × {} input set/backend pair(s); {} finding(s)",
        grid.rows.len(),
        grid.cols.len(),
        findings.len()
    );
    let top = if findings.is_empty() {
        verdict_box("pass", "CONFORMS", &sentence, &[])
    } else {
        verdict_box("note", "FINDINGS", &sentence, &findings)
    };
    let col_labels: Vec<String> = grid
        .cols
        .iter()
        .map(|(b, set)| format!("{b} {set}"))
        .collect();
    let heat = svg_heatmap(
        "conformance",
        "Operator × input set × backend",
        &grid.rows,
        &col_labels,
        &grid.cells,
        &LEGEND,
    );
    let body = format!(
        "{top}<h2>Operator × input set × backend</h2>\n{heat}\n{}",
        markdown_body(&markdown(r))
    );
    html_page(&format!("Operator conformance: {}", r.model), &body)
}

/// The heatmap's legend: each verdict's colour (as `color` gives it).
const LEGEND: [(&str, &str); 5] = [
    ("ok", "#54a24b"),
    ("range (fp16)", "#f2a93b"),
    ("DEVIATES", "#e45756"),
    ("UNSUPPORTED", "#888888"),
    ("ERROR", "#222222"),
];

/// The heatmap's grid: one row per operator signature (op, attributes, shapes), one column
/// per (backend, input set), a cell per report row.
struct Grid {
    rows: Vec<String>,
    cols: Vec<(BackendKind, String)>,
    cells: Vec<Vec<Option<Cell>>>,
}

impl Grid {
    fn of(r: &ConformanceReport) -> Grid {
        let mut rows: Vec<String> = Vec::new();
        let mut cols: Vec<(BackendKind, String)> = Vec::new();
        for row in &r.rows {
            let k = signature(row);
            if !rows.contains(&k) {
                rows.push(k);
            }
            let c = (row.backend, row.input_set.clone());
            if !cols.contains(&c) {
                cols.push(c);
            }
        }
        // The QNN CPU backend's columns first (the exact one), then the HTP's.
        cols.sort_by_key(|(b, set)| (*b != BackendKind::Cpu, b.label(), set.clone()));
        let mut cells: Vec<Vec<Option<Cell>>> = rows
            .iter()
            .map(|_| cols.iter().map(|_| None).collect())
            .collect();
        for row in &r.rows {
            let i = rows.iter().position(|k| *k == signature(row));
            let j = cols
                .iter()
                .position(|(b, set)| *b == row.backend && *set == row.input_set);
            if let (Some(i), Some(j)) = (i, j) {
                cells[i][j] = Some(cell(row));
            }
        }
        Grid { rows, cols, cells }
    }
}

/// A heatmap row's label: the operator with its attribute set and shapes.
fn signature(row: &Row) -> String {
    format!("{} {} {}", row.op, row.attributes, row.shapes)
}

/// One row's cell: its verdict's colour and mark, every figure in the tooltip.
fn cell(row: &Row) -> Cell {
    let (color, mark) = color(row.verdict);
    Cell {
        color,
        mark,
        tooltip: format!(
            "{} on {} ({}): {} · cosine {} · rel-L2 {:.2e} · max-abs {:.2e}{}",
            row.op,
            row.backend,
            row.input_set,
            row.verdict.label(),
            xtask_runtime::report::fmt_cosine(row.cosine),
            row.rel_l2,
            row.max_abs,
            if row.wrong.is_empty() {
                String::new()
            } else {
                format!(" · {}", row.wrong)
            }
        ),
    }
}

/// The findings as the verdict box lists them.
fn finding_lines(r: &ConformanceReport) -> Vec<String> {
    r.findings()
        .map(|f| {
            format!(
                "**{}** {} on {} ({}): {}",
                f.verdict.label(),
                f.op,
                f.backend,
                f.input_set,
                f.wrong
            )
        })
        .collect()
}

/// The report as JSON, Markdown and HTML under `stem` in `dir`.
pub fn write_all(dir: &Path, stem: &str, r: &ConformanceReport) -> Result<()> {
    xtask_runtime::report::write_json_and_markdown(dir, stem, r, &markdown(r))?;
    xtask_base::atomic::write_atomic(&dir.join(format!("{stem}.html")), html(r).as_bytes())
}
