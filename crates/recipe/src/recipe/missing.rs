//! A recipe's input file that is not on disk, said where the recipe names it
//! (`recipes/m/c.toml:7: golden.file = "…"`) and, when a file of a close name lies beside it,
//! as the typo it likely is (then fixing the recipe line is said first, before how to obtain
//! the model's files, since a near name is only a guess).

use std::path::{Path, PathBuf};

use super::Component;

/// One missing file of a component.
pub struct Missing {
    /// `recipes/m/c.toml:7: golden.file = "golden/m/visoin.npz" not found (component c)`.
    pub line: String,
    /// A file of a close name beside it: a typo in the recipe, not a file to obtain.
    pub typo: bool,
}

/// The component's ONNX and golden files that are missing, each with its recipe line.
pub fn missing(root: &Path, comp: &Component) -> Vec<Missing> {
    [
        ("component", "onnx", &comp.file.component.onnx),
        ("golden", "file", &comp.file.golden.file),
    ]
    .into_iter()
    .filter(|(_, _, p)| !root.join(p).is_file())
    .map(|(table, key, path)| describe(root, comp, table, key, path))
    .collect()
}

fn describe(root: &Path, comp: &Component, table: &str, key: &str, path: &PathBuf) -> Missing {
    let at = super::validate::key_line(&comp.recipe_text, table, key, 0)
        .map(|l| format!(":{l}"))
        .unwrap_or_default();
    let recipe = xtask_base::project::rel(root, &root.join(&comp.recipe_path));
    let beside = sibling_names(&root.join(path));
    let typo = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| xtask_base::ui::suggest::closest(n, beside.iter().map(String::as_str)));
    let hint = typo
        .map(|t| format!(" (did you mean `{t}`?)"))
        .unwrap_or_default();
    Missing {
        line: format!(
            "{recipe}{at}: {table}.{key} = {:?}: not found{hint} (component {})",
            path.display().to_string(),
            comp.name()
        ),
        typo: typo.is_some(),
    }
}

fn sibling_names(path: &Path) -> Vec<String> {
    path.parent()
        .and_then(|d| std::fs::read_dir(d).ok())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect()
}
