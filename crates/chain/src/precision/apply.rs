//! `--apply`: the proposal written into the recipes, as a person would edit them: each
//! component's `[quantize] precision` set (the table added when missing, its other settings
//! and every comment kept); a component proposed at fp16 keeps no `[quantize]` it did not
//! have. Every recipe is written atomically and the model is loaded again afterwards, so a
//! recipe the edit broke is an error, not a surprise at the next build.

use std::path::Path;

use anyhow::{Context, Result};

use super::search::Assignment;
use xtask_base::vocab::Precision;
use xtask_recipe::recipe::Model;

/// The recipe lines that apply `a` (what the report shows).
pub fn recipe_lines(model: &Model, a: &Assignment) -> Vec<String> {
    model
        .components
        .iter()
        .filter_map(|c| {
            let p = *a.get(c.name())?;
            let had = c.file.quantize.is_some();
            let path = c.recipe_path.display();
            (p.is_quantized() || had).then(|| format!("# {path}\n[quantize]\nprecision = \"{p}\""))
        })
        .collect()
}

/// Writes the proposal into the recipes of `model`; the components whose recipe changed.
pub fn apply(root: &Path, model: &Model, a: &Assignment) -> Result<Vec<String>> {
    let mut changed = Vec::new();
    for comp in &model.components {
        let Some(&p) = a.get(comp.name()) else {
            continue;
        };
        if comp.precision() == p {
            continue;
        }
        let path = root.join(&comp.recipe_path);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let edited = with_precision(&text, p)
            .with_context(|| format!("cannot edit {}", comp.recipe_path.display()))?;
        xtask_base::atomic::write_atomic(&path, edited.as_bytes())?;
        changed.push(comp.name().to_string());
    }
    xtask_recipe::recipe::load_model(root, &model.file.model.name)
        .context("the recipes no longer load after --apply")?;
    Ok(changed)
}

/// The recipe text with `[quantize] precision = p` (the table added when missing).
pub(crate) fn with_precision(text: &str, p: Precision) -> Result<String> {
    let mut doc: toml_edit::DocumentMut = text.parse()?;
    if !p.is_quantized() && !doc.contains_key("quantize") {
        return Ok(text.to_string());
    }
    let table = doc
        .entry("quantize")
        .or_insert(toml_edit::table())
        .as_table_mut()
        .context("`quantize` is not a table")?;
    table.insert("precision", toml_edit::value(p.label()));
    Ok(doc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_added_or_edited_and_comments_stay() {
        let text = "# a recipe\n[component]\nname = \"c\"\n";
        let out = with_precision(text, Precision::W8a16).unwrap();
        assert!(out.starts_with("# a recipe\n[component]"), "{out}");
        assert!(out.contains("[quantize]\nprecision = \"w8a16\""), "{out}");
        let again = with_precision(&out, Precision::W4a16).unwrap();
        assert!(
            again.contains("precision = \"w4a16\"") && !again.contains("w8a16"),
            "{again}"
        );
        assert_eq!(with_precision(text, Precision::Fp16).unwrap(), text);
        let kept = "[quantize]\nprecision = \"w8a8\" # tried\nsamples = 4\n";
        let out = with_precision(kept, Precision::Fp16).unwrap();
        assert!(
            out.contains("precision = \"fp16\"") && out.contains("samples = 4"),
            "{out}"
        );
    }
}
