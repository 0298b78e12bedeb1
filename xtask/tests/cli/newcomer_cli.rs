//! A newcomer's first hour: the first `cargo xtask` shows cargo compiling the tool (the tool
//! cannot speak before it exists), and every command's `--help` shows an example.

use crate::common::repo_root;

/// The `cargo xtask` alias lets cargo show the first compile: no `--quiet`/`-q` in it.
#[test]
fn the_alias_shows_the_first_compile() {
    let config = std::fs::read_to_string(repo_root().join(".cargo/config.toml")).unwrap();
    let alias = config
        .lines()
        .find(|l| l.trim_start().starts_with("xtask ="))
        .expect(".cargo/config.toml has an `xtask =` alias");
    let words: Vec<&str> = alias.split(['"', ' ']).collect();
    assert!(
        !words.contains(&"--quiet") && !words.contains(&"-q"),
        "the alias hides the first compile: {alias}"
    );
    assert!(
        words.contains(&"--release"),
        "the alias builds release: {alias}"
    );
}

/// `cargo xtask <path…> --help`, as the binary prints it.
fn help(path: &[String]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(path)
        .arg("--help")
        .env("XTASK_OFFLINE", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{path:?} --help failed");
    String::from_utf8(out.stdout).unwrap()
}

/// The (visible) subcommands a help text lists under `Commands:`, `help` left out.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

/// Every command's `--help`, nested ones too, ends with `Examples:` and at least one
/// `cargo xtask <that command> …` line whose every flag the command's help lists.
#[test]
fn every_command_s_help_shows_an_example_that_it_accepts() {
    let mut stack: Vec<Vec<String>> = subcommands(&help(&[]))
        .into_iter()
        .map(|c| vec![c])
        .collect();
    let mut checked = 0;
    while let Some(path) = stack.pop() {
        let text = help(&path);
        let nested = subcommands(&text);
        stack.extend(
            nested
                .iter()
                .map(|n| [path.clone(), vec![n.clone()]].concat()),
        );
        let prefix = format!("cargo xtask {}", path.join(" "));
        let examples: Vec<&str> = text
            .lines()
            .skip_while(|l| l.trim() != "Examples:")
            .skip(1)
            .map(str::trim)
            .filter(|l| l.starts_with(&prefix))
            .collect();
        if !nested.is_empty() && examples.is_empty() {
            continue; // a group (`cache`, `bench`): its commands carry the examples
        }
        assert!(
            !examples.is_empty(),
            "`{prefix} --help` shows no example:\n{text}"
        );
        for example in examples {
            for flag in example.split_whitespace().filter(|w| w.starts_with("--")) {
                assert!(
                    text.contains(&format!("{flag} ")) || text.contains(&format!("{flag}\n")),
                    "`{example}` uses {flag}, which `{prefix}` does not list"
                );
            }
        }
        checked += 1;
    }
    assert!(checked >= 25, "only {checked} commands checked");
}
