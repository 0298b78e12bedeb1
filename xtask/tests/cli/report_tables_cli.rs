//! Whole reports: every table of every HTML report the tool writes (build, parity on each
//! backend, run, bisect, conformance) has as many cells in each row as in its header, so no
//! cell is split (a `|` inside `|y|/|golden|` once made three of one) or lost.

use std::path::Path;

use crate::common::Scratch;

/// The cell count of every row of every `<table>` in `html`, table by table.
fn table_shapes(html: &str) -> Vec<Vec<usize>> {
    html.split("<table")
        .skip(1)
        .map(|t| {
            let table = t.split("</table>").next().unwrap_or_default();
            table
                .split("<tr")
                .skip(1)
                .map(|row| {
                    let row = row.split("</tr>").next().unwrap_or_default();
                    ["<th>", "<th ", "<td>", "<td "]
                        .iter()
                        .map(|tag| row.matches(tag).count())
                        .sum()
                })
                .collect()
        })
        .collect()
}

/// Every table of the page, checked: a header, and each row as wide as it.
fn check_page(path: &Path) -> usize {
    let html = std::fs::read_to_string(path).unwrap();
    let shapes = table_shapes(&html);
    for (i, rows) in shapes.iter().enumerate() {
        assert!(
            !rows.is_empty(),
            "{}: table {i} has no rows",
            path.display()
        );
        let header = rows[0];
        assert!(
            header > 0,
            "{}: table {i} has an empty header",
            path.display()
        );
        for (r, cells) in rows.iter().enumerate() {
            assert_eq!(
                *cells,
                header,
                "{}: table {i} row {r} has {cells} cells, its header {header}",
                path.display()
            );
        }
    }
    shapes.len()
}

#[test]
fn every_table_of_every_html_report_has_the_header_s_cell_count() {
    let p = Scratch::tiny();
    let only = ["--only", "action_context"];
    for args in [
        &["build-ctx", "--soc", "77", only[0], only[1]][..],
        &["parity", "--backend", "htp", only[0], only[1]],
        &["parity", "--backend", "cpu", only[0], only[1]],
        &["run", "--backend", "cpu", "--iters", "2", "--warmup", "0"],
        &["bisect", "action_context", "--backend", "cpu"],
        &["conformance", only[0], only[1], "--backend", "cpu"],
    ] {
        p.run(args).assert_code(0);
    }
    let mut pages: Vec<String> = std::fs::read_dir(p.path("reports/tiny"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".html"))
        .collect();
    pages.sort();
    assert_eq!(
        pages,
        [
            "bisect-action_context-cpu.html",
            "build-soc77.html",
            "conformance-partial.html",
            "parity-cpu.html",
            "parity-htp.html",
            "run-cpu-iters2-warmup0.html",
        ],
        "a report page is not checked here"
    );
    let mut tables = 0;
    for page in &pages {
        tables += check_page(&p.path(&format!("reports/tiny/{page}")));
    }
    assert!(tables >= pages.len(), "only {tables} tables in {pages:?}");
    // The cell that once split: one header cell, `|` kept inside it.
    let htp = std::fs::read_to_string(p.path("reports/tiny/parity-htp.html")).unwrap();
    assert!(htp.contains("<th>|y|/|golden|</th>"), "{htp}");
    let md = std::fs::read_to_string(p.path("reports/tiny/parity-htp.md")).unwrap();
    assert!(md.contains(r"| \|y\|/\|golden\| |"), "{md}");
}
