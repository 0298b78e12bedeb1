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

/// Every file of the checkout git knows of (committed or new, ignored ones left out).
fn repository_files() -> Vec<String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(repo_root())
        .args(["ls-files", "--cached", "--others", "--exclude-standard"])
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git ls-files failed");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Whether the checkout's `.gitignore` ignores `path`: an artifact the tool makes or fetches
/// (`target/…`, `ctx/<model>/…`, `reports/<model>/…`), which a clean checkout does not hold.
fn generated(path: &str) -> bool {
    std::process::Command::new("git")
        .arg("-C")
        .arg(repo_root())
        .args(["check-ignore", "-q", "--no-index", path])
        .status()
        .expect("git runs")
        .success()
}

/// Every path a page quotes in a code span (fenced blocks left out: their commands are
/// examples) that looks like a path: letters, digits, `_.-/` only, not absolute, not a flag,
/// with a `/` or a file extension. Placeholders (`<model>`, `…`, `*`) and URLs never match.
fn quoted_paths(page: &Path) -> Vec<(usize, String)> {
    const EXTENSIONS: [&str; 12] = [
        ".md", ".rs", ".toml", ".json", ".py", ".sh", ".yml", ".yaml", ".npz", ".onnx", ".txt",
        ".html",
    ];
    let text = std::fs::read_to_string(page).unwrap();
    let mut fenced = false;
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for span in line.split('`').skip(1).step_by(2) {
            let pathlike = !span.is_empty()
                && span
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-/".contains(c))
                && !span.starts_with(['/', '-'])
                && (span.contains('/') || EXTENSIONS.iter().any(|e| span.ends_with(e)));
            if pathlike {
                found.push((i + 1, span.to_string()));
            }
        }
    }
    found
}

/// Every path the README and `docs/` quote that names something of this repository exists:
/// a path whose first part is a top-level entry of the repository (or `src/`, the layout
/// before `crates/`) exists from the root, unless git ignores it (a generated artifact) or it
/// lies under the folder of a model that is not in the repository (`recipes/mine/`); a `.rs`
/// or `.md` file quoted on its own or crate-relative (`hf.rs`, `recipe/hub_names.rs`) is the
/// end of some file of the repository. Paths relative to the page resolve from its folder.
/// Markdown links are checked by `every_relative_link_between_the_pages_resolves`.
#[test]
fn every_repository_path_the_docs_quote_exists() {
    let root = repo_root();
    let files = repository_files();
    let folders: BTreeSet<String> = files
        .iter()
        .flat_map(|f| {
            f.match_indices('/')
                .map(|(at, _)| f[..at].to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    let top: BTreeSet<&str> = files
        .iter()
        .map(|f| f.split('/').next().unwrap())
        .chain(["src"])
        .collect();
    let models: BTreeSet<&str> = files
        .iter()
        .filter_map(|f| f.strip_prefix("recipes/")?.split_once('/').map(|(m, _)| m))
        .collect();
    let known = |p: &str| files.iter().any(|f| f == p) || folders.contains(p);
    let mut missing = Vec::new();
    for page in pages() {
        let name = page.strip_prefix(&root).unwrap().display().to_string();
        for (line, quoted) in quoted_paths(&page) {
            let path = quoted.trim_end_matches('/');
            let from_page = page.parent().unwrap().join(path);
            if known(path) || from_page.exists() {
                continue;
            }
            let parts: Vec<&str> = path.split('/').collect();
            let ok = if top.contains(parts[0]) {
                let other_model = parts.len() > 1
                    && ["recipes", "onnx", "golden", "ctx", "reports"].contains(&parts[0])
                    && !models.contains(parts[1]);
                other_model || generated(path)
            } else if path.ends_with(".rs") || path.ends_with(".md") {
                files.iter().any(|f| f.ends_with(&format!("/{path}")))
            } else {
                true
            };
            if !ok {
                missing.push(format!("{name}:{line}: `{quoted}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "the docs quote paths that are not in the repository:\n{}",
        missing.join("\n")
    );
}
