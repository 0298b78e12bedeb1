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
