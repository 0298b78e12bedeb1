//! A newcomer's first hour: the first `cargo xtask` shows cargo compiling the tool (the tool
//! cannot speak before it exists), and every command's `--help` shows an example.

use crate::common::{help, repo_root, subcommands};

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

/// Every command's `--help`, nested ones too, ends with `Examples:` and at least one
/// `cargo xtask <that command> …` line whose every flag the command's help lists.
#[test]
fn every_command_s_help_shows_an_example_that_it_accepts() {
    let mut stack: Vec<Vec<String>> = subcommands(&help::<&str>(&[]))
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

/// A missing bundle is named as missing, not as a bundle without its manifest.
#[test]
fn verify_says_a_missing_folder_does_not_exist() {
    let p = crate::common::Scratch::offline();
    let missing = p.path("no-such-bundle");
    p.run(&["verify", missing.to_str().unwrap()])
        .assert_refused(2, "does not exist");
}

/// `source_repo = "OWNER/NAME"` is refused by `package` and `release` with the file, line and
/// key, before anything is packaged or uploaded.
#[test]
fn the_source_repo_placeholder_is_refused_by_package_and_release() {
    let p = crate::common::Scratch::offline();
    let recipe = p.path("recipes/tiny/model.toml");
    let text = std::fs::read_to_string(&recipe).unwrap();
    let text = text.replacen("[model]\n", "[model]\nsource_repo = \"OWNER/NAME\"\n", 1);
    std::fs::write(&recipe, &text).unwrap();
    let line = crate::common::line_of(&text, "source_repo");
    let want = format!(
        "recipes/tiny/model.toml:{line}: [model] source_repo = \"OWNER/NAME\" is a placeholder"
    );
    let out = p.path("dist/t");
    p.run(&["package", "--soc", "77", "--out", out.to_str().unwrap()])
        .assert_refused(2, &want);
    let bundle = p.path("dist/t");
    p.run(&[
        "release",
        "--repo",
        "acme/policy",
        "--bundle",
        bundle.to_str().unwrap(),
        "--dry-run",
    ])
    .assert_refused(2, &want);
}

/// The CI plan's timeouts scale with the components' sizes: the tiny model's jobs get
/// minutes, not GitHub's 6 h.
#[test]
fn the_plan_gives_tiny_a_timeout_of_its_size() {
    let p = crate::common::Scratch::offline();
    let run = p.run(&["plan", "--json"]);
    run.assert_code(0);
    let plan: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let entries = plan["include"].as_array().unwrap();
    assert_eq!(entries.len(), 7, "{plan}");
    for e in entries {
        let t = e["timeout_minutes"].as_u64().unwrap();
        assert!((30..=60).contains(&t), "{e}");
    }
}
