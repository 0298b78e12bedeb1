//! The README and `docs/` against the binary: every `cargo xtask <command> [sub] --flag` they
//! show must exist (read from the binary's own `--help`, so a renamed command or flag fails
//! here instead of misleading a reader), every command has a section (a `cargo xtask <command>`
//! heading) in `docs/`, and every relative link between the pages resolves.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::{help, repo_root, subcommands};

/// Every `--long` and `-s` flag a help text lists.
fn flags(help: &str) -> BTreeSet<String> {
    help.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| w.starts_with('-'))
        .map(|w| w.split(['=', '<', '[']).next().unwrap().to_string())
        .collect()
}

/// The pages a user reads: the README and every page under docs/.
fn pages() -> Vec<PathBuf> {
    let root = repo_root();
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// Every command line a page shows: the text after `cargo xtask ` (or `./xtask ` on a board) up
/// to the end of its code span or line, with the page and line it is on.
fn mentions(page: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(page).unwrap();
    let name = page
        .strip_prefix(repo_root())
        .unwrap()
        .display()
        .to_string();
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for marker in ["cargo xtask ", "./xtask "] {
            for (at, _) in line.match_indices(marker) {
                let rest = &line[at + marker.len()..];
                let end = rest.find('`').unwrap_or(rest.len());
                found.push((format!("{name}:{}", i + 1), rest[..end].to_string()));
            }
        }
    }
    found
}

/// A flag as written in a usage line (`[--only`, `--soc=77`, `--json]`, `--a|--b`) → its names.
fn written_flags(word: &str) -> Vec<String> {
    word.split('|')
        .map(|w| w.trim_matches(|c| matches!(c, '[' | ']' | '(' | ')' | ',' | '.' | ';' | ':')))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| w.split('=').next().unwrap().to_string())
        .collect()
}

#[test]
fn every_command_and_flag_the_docs_show_exists() {
    let top = help::<&str>(&[]);
    let commands = subcommands(&top);
    assert!(commands.len() > 10, "no commands parsed from:\n{top}");
    let global = flags(&top);
    let mut helps: BTreeMap<Vec<String>, String> = BTreeMap::new();
    let mut help_of = |path: &[String]| -> String {
        helps
            .entry(path.to_vec())
            .or_insert_with(|| help(&path.iter().map(String::as_str).collect::<Vec<_>>()))
            .clone()
    };
    let mut wrong = Vec::new();
    let mut checked = 0;
    for page in pages() {
        for (at, line) in mentions(&page) {
            let mut words = line.split_whitespace().peekable();
            let Some(cmd) = words.next() else { continue };
            if !cmd
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            {
                continue; // a placeholder such as `<command>` or `…`
            }
            if !commands.iter().any(|c| c == cmd) {
                wrong.push(format!(
                    "{at}: `cargo xtask {cmd}` is not a command ({commands:?})"
                ));
                continue;
            }
            checked += 1;
            let mut path = vec![cmd.to_string()];
            let subs = subcommands(&help_of(&path));
            if let Some(sub) = words.peek().filter(|_| !subs.is_empty()) {
                if subs.iter().any(|s| s == sub) {
                    path.push(sub.to_string());
                    words.next();
                } else if sub.chars().all(|c| c.is_ascii_lowercase()) {
                    wrong.push(format!("{at}: `{cmd} {sub}` is not one of {subs:?}"));
                    continue;
                }
            }
            let known = flags(&help_of(&path));
            for flag in words.flat_map(written_flags) {
                if !known.contains(&flag) && !global.contains(&flag) {
                    wrong.push(format!("{at}: `{}` has no flag {flag}", path.join(" ")));
                }
            }
        }
    }
    assert!(
        checked > 30,
        "too few command lines found in the docs ({checked})"
    );
    assert!(
        wrong.is_empty(),
        "the docs disagree with the binary:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_command_has_a_section_in_the_docs() {
    let headings: Vec<String> = pages()[1..]
        .iter()
        .flat_map(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .filter(|l| l.starts_with('#'))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    let missing: Vec<String> = subcommands(&help::<&str>(&[]))
        .into_iter()
        .filter(|c| {
            let named = format!("`cargo xtask {c}`");
            !headings.iter().any(|h| h.contains(&named))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "commands without a `## `cargo xtask <command>`` section in docs/: {missing:?}"
    );
}

#[test]
fn every_relative_link_between_the_pages_resolves() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (at, _) in text.match_indices("](") {
            let rest = &text[at + 2..];
            let target = &rest[..rest.find(')').unwrap_or(0)];
            let file = target.split('#').next().unwrap();
            if file.is_empty() || file.contains("://") || file.starts_with("mailto:") {
                continue;
            }
            if !page.parent().unwrap().join(file).exists() {
                broken.push(format!("{}: {target}", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "links to nothing: {broken:?}");
}

/// The README's quick start shows two commands, each on a line of its own in a `sh` block:
/// the main job and the test command; `.ci/run` runs that very test line.
#[test]
fn ci_runs_the_readme_test_line() {
    let root = repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let start = readme
        .find("## Quick start")
        .expect("a quick start section");
    let quick = &readme[start..];
    let quick = &quick[..quick[3..].find("\n## ").map_or(quick.len(), |i| i + 3)];
    let lines: Vec<&str> = quick
        .split("```sh\n")
        .skip(1)
        .filter_map(|block| block.split("```").next())
        .flat_map(str::lines)
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(
        lines,
        ["cargo xtask build-ctx --soc 77", "cargo test --release"],
        "{quick}"
    );
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l.trim() == lines[1]),
        ".ci/run does not run the README's test line `{}`:\n{ci}",
        lines[1]
    );
}
