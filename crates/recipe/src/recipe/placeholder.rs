//! `[model] source_repo = "OWNER/NAME"` is the documentation's placeholder, not a repository:
//! `package` (the card names it) and `release` refuse it, naming the file, line and key, before
//! anything is built or uploaded.

use std::path::Path;

use anyhow::Result;

/// Parts of a repository id that are the docs' placeholders, never a real owner or name.
const PLACEHOLDERS: [&str; 4] = ["OWNER", "NAME", "USER", "REPO"];

/// Refuses (exit 2) a placeholder `source_repo` in `recipes/<model>/model.toml`; nothing to
/// check when the file or the key is absent (a commented-out line is not the key).
pub fn refuse_placeholder_repo(root: &Path, model: &str) -> Result<()> {
    let rel = format!("recipes/{model}/model.toml");
    let Ok(text) = std::fs::read_to_string(root.join(&rel)) else {
        return Ok(());
    };
    for (i, line) in text.lines().enumerate() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim() != "source_repo" {
            continue;
        }
        let value = value
            .split('#')
            .next()
            .unwrap_or("")
            .trim()
            .trim_matches('"');
        if is_placeholder(value) {
            return Err(xtask_base::bad_input::BadInput(anyhow::anyhow!(
                "{rel}:{}: [model] source_repo = \"{value}\" is a placeholder: set it to the bundle's Hugging Face repository (owner/name) or remove the line",
                i + 1
            ))
            .into());
        }
    }
    Ok(())
}

fn is_placeholder(repo: &str) -> bool {
    repo.split('/').any(|part| PLACEHOLDERS.contains(&part))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_placeholder_is_refused_with_file_line_and_key_and_a_real_repo_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let recipe = dir.path().join("recipes/m/model.toml");
        std::fs::create_dir_all(recipe.parent().unwrap()).unwrap();
        let text =
            "[model]\n# source_repo = \"OWNER/NAME\"\nname = \"m\"\nsource_repo = \"OWNER/NAME\"\n";
        std::fs::write(&recipe, text).unwrap();
        let err = format!(
            "{:#}",
            refuse_placeholder_repo(dir.path(), "m").unwrap_err()
        );
        assert!(
            err.starts_with("recipes/m/model.toml:4: [model] source_repo = \"OWNER/NAME\""),
            "{err}"
        );
        std::fs::write(&recipe, text.replace("OWNER/NAME\"\n", "acme/policy\"\n")).unwrap();
        refuse_placeholder_repo(dir.path(), "m").unwrap();
    }
}
