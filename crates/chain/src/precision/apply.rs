//! `--apply`: the proposal written into the recipes, as a person would edit them: each
//! component's `[quantize] precision` set (the table added when missing, its other settings
//! and every comment kept); a component proposed at fp16 keeps no `[quantize]` it did not
//! have. A component measured past its own gate (`--component-gates report`) also gets
//! `[quantize.gates.<precision>]` set to what it was measured with, and the measured chain
//! error as its `reason` (the recipe requires one for a gate looser than the precision's
//! default). Every recipe is written atomically and
//! the model is loaded again afterwards, so a recipe the edit broke is an error, not a
//! surprise at the next build.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};

use super::outcome::Assignment;
use xtask_base::vocab::Precision;
use xtask_recipe::recipe::Model;
use xtask_recipe::recipe::quantize::PrecisionGate;

/// A gate `--apply` writes: the values and why (one line, written as the gate's `reason`).
#[derive(Debug, Clone, PartialEq)]
pub struct GateLine {
    pub gate: PrecisionGate,
    pub reason: String,
}

/// The recipe lines that apply `a` (what the report shows), with `gates` per component.
pub fn recipe_lines(
    model: &Model,
    a: &Assignment,
    gates: &BTreeMap<String, GateLine>,
) -> Vec<String> {
    model
        .components
        .iter()
        .filter_map(|c| {
            let p = *a.get(c.name())?;
            let had = c.file.quantize.is_some();
            let path = c.recipe_path.display();
            let mut text = format!("# {path}\n[quantize]\nprecision = \"{p}\"");
            if let Some(g) = gates.get(c.name()).filter(|_| p.is_quantized()) {
                text.push_str(&format!("\n[quantize.gates.{p}]"));
                for (key, v) in gate_values(&g.gate) {
                    text.push_str(&format!("\n{key} = {v}"));
                }
                text.push_str(&format!("\nreason = {:?}", g.reason));
            }
            (p.is_quantized() || had).then_some(text)
        })
        .collect()
}

fn gate_values(g: &PrecisionGate) -> Vec<(&'static str, f64)> {
    let mut out = Vec::new();
    if let Some(c) = g.min_cosine {
        out.push(("min_cosine", c));
    }
    if let Some(r) = g.max_norm_ratio_error {
        out.push(("max_norm_ratio_error", r));
    }
    out
}

/// Writes the proposal into the recipes of `model`; the components whose recipe changed.
pub fn apply(
    root: &Path,
    model: &Model,
    a: &Assignment,
    gates: &BTreeMap<String, GateLine>,
) -> Result<Vec<String>> {
    let mut changed = Vec::new();
    for comp in &model.components {
        let Some(&p) = a.get(comp.name()) else {
            continue;
        };
        let gate = gates.get(comp.name()).filter(|_| p.is_quantized());
        if comp.precision() == p && gate.is_none() {
            continue;
        }
        let path = root.join(&comp.recipe_path);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let mut edited = with_precision(&text, p)
            .with_context(|| format!("cannot edit {}", comp.recipe_path.display()))?;
        if let Some(g) = gate {
            edited = with_gate(&edited, p, g)
                .with_context(|| format!("cannot edit {}", comp.recipe_path.display()))?;
        }
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

/// The recipe text with `[quantize.gates.<p>]` holding `g`'s values and its `reason` (the
/// table's other keys and comments kept).
pub(crate) fn with_gate(text: &str, p: Precision, g: &GateLine) -> Result<String> {
    let mut doc: toml_edit::DocumentMut = text.parse()?;
    let quantize = doc
        .entry("quantize")
        .or_insert(toml_edit::table())
        .as_table_mut()
        .context("`quantize` is not a table")?;
    let gates = quantize
        .entry("gates")
        .or_insert_with(|| {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            toml_edit::Item::Table(t)
        })
        .as_table_mut()
        .context("`quantize.gates` is not a table")?;
    let table = gates
        .entry(p.label())
        .or_insert(toml_edit::table())
        .as_table_mut()
        .with_context(|| format!("`quantize.gates.{p}` is not a table"))?;
    for (key, v) in gate_values(&g.gate) {
        table.insert(key, toml_edit::value(v));
    }
    table.insert("reason", toml_edit::value(g.reason.replace('\n', " ")));
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

    #[test]
    fn a_gate_is_written_with_its_reason() {
        let text = "[component]\nname = \"c\"\n\n[quantize]\nprecision = \"fp16\"\n";
        let g = GateLine {
            gate: PrecisionGate {
                min_cosine: Some(0.999982),
                max_norm_ratio_error: None,
                reason: None,
            },
            reason: "measured 0.9999823; chain actions max |error| 1.3e-2".into(),
        };
        let out = with_precision(text, Precision::W8a16).unwrap();
        let out = with_gate(&out, Precision::W8a16, &g).unwrap();
        assert!(
            out.contains(
                "[quantize.gates.w8a16]\nmin_cosine = 0.999982\nreason = \"measured 0.9999823; chain actions max |error| 1.3e-2\"\n"
            ),
            "{out}"
        );
        assert!(!out.contains("[quantize.gates]\n"), "{out}");
        #[derive(serde::Deserialize)]
        struct F {
            quantize: xtask_recipe::recipe::quantize::QuantizeSection,
        }
        let f: F = xtask_recipe::recipe::parse_toml(Path::new("c.toml"), &out).unwrap();
        assert_eq!(f.quantize.gate(Precision::W8a16).0, 0.999982);
    }
}
