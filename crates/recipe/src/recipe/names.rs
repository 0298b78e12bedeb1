//! The one name rule. A model, a component and a graph name each become a path (a folder
//! under `recipes/`, `ctx/<model>/<component>_…`, `onnx/<component>/` in a bundle) or an
//! argument of an SDK tool, so each must be one plain file name: `[A-Za-z0-9_][A-Za-z0-9_.-]*`,
//! without `..`, at most 128 characters (room for the suffixes artifacts append). Applied when
//! a recipe loads (naming file, line and key) and to every `--model` flag.

use std::path::Path;

use anyhow::{Result, bail};

use super::validate::at;

/// Longest accepted name: artifacts append up to ~40 characters and file names stop at 255.
pub const MAX_NAME_LEN: usize = 128;

/// Why `name` is not a plain name, or None when it is one.
pub fn name_problem(name: &str) -> Option<&'static str> {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return Some("it is empty");
    };
    if !(first.is_ascii_alphanumeric() || first == '_') {
        return Some("it must start with a letter, a digit or `_`");
    }
    if !chars.all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)) {
        return Some("only letters, digits, `_`, `.` and `-` are allowed");
    }
    if name.contains("..") {
        return Some("`..` is not allowed");
    }
    if name.len() > MAX_NAME_LEN {
        return Some("it is longer than 128 characters");
    }
    None
}

/// `--model` as clap parses it: refused (exit 2) before any command runs.
pub fn parse_model_name(name: &str) -> std::result::Result<String, String> {
    match name_problem(name) {
        None => Ok(name.to_string()),
        Some(why) => Err(format!(
            "{name:?} is not a model name: {why} (the plain folder name under recipes/: [A-Za-z0-9_][A-Za-z0-9_.-]*, no `..`)"
        )),
    }
}

/// `--model`, checked again where a model is loaded (library callers bypass clap).
pub fn check_model_name(name: &str) -> Result<()> {
    parse_model_name(name).map_err(|e| anyhow::anyhow!("--model {e}"))?;
    Ok(())
}

/// A name written in a recipe: "file:line: table.key = "…" is not a plain name: why".
pub fn check_recipe_name(
    path: &Path,
    text: &str,
    table: &str,
    key: &str,
    name: &str,
) -> Result<()> {
    if let Some(why) = name_problem(name) {
        bail!(
            "{} = {name:?} is not a plain name: {why} (names become file names and tool arguments: [A-Za-z0-9_][A-Za-z0-9_.-]*, no `..`)",
            at(path, text, table, key, 0)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_pass_and_everything_else_is_refused() {
        for good in ["tiny", "molmoact2-libero_lp.v2", "_x", "9a", "a.b-c_d"] {
            assert_eq!(name_problem(good), None, "{good}");
        }
        for bad in [
            "",
            "../x",
            "a/b",
            ".hidden",
            "-h",
            "x y",
            "a..b",
            "../../../outside/evil",
            "x;id",
            "é",
            "a\\b",
        ] {
            assert!(name_problem(bad).is_some(), "{bad:?}");
        }
        assert!(name_problem(&"a".repeat(129)).is_some());
        assert!(
            parse_model_name("../x")
                .unwrap_err()
                .contains("is not a model name")
        );
    }

    #[test]
    fn a_recipe_name_is_refused_with_file_line_and_key() {
        let text = "[model]\nname = 'm'\ncomponents = ['a', '../../x']\n";
        let err = check_recipe_name(Path::new("m.toml"), text, "model", "components", "../../x")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("m.toml:3: model.components = \"../../x\""),
            "{err}"
        );
    }
}
