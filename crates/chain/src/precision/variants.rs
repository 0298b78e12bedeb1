//! The variants the search builds a component in: `<model>.<precision>`, every component at
//! that precision with the recipe's other `[quantize]` settings kept (`ctx/tiny.w8a16/`,
//! `reports/tiny.w8a16/`), so the model's own artifacts are never touched; and a component's
//! gate in its variant set to what it measured (`--component-gates report`).

use anyhow::{Context, Result};

use xtask_base::vocab::Precision;
use xtask_recipe::recipe::Model;
use xtask_recipe::recipe::quantize::{PrecisionGate, QuantizeSection};

/// The model with every component at `p`, named `<model>.<p>` (its artifacts and reports apart
/// from the model's own); the recipes' other `[quantize]` settings are kept.
pub(crate) fn variant(model: &Model, p: Precision) -> Result<Model> {
    let mut m = model.clone();
    m.file.model.name = format!("{}.{p}", model.file.model.name);
    for c in &mut m.components {
        c.recipe_text = super::apply::with_precision(&c.recipe_text, p)
            .with_context(|| format!("cannot set {} to {p}", c.recipe_path.display()))?;
        c.file.quantize = match c.file.quantize.take() {
            Some(q) => Some(QuantizeSection { precision: p, ..q }),
            None if p.is_quantized() => Some(QuantizeSection::of(p)),
            None => None,
        };
    }
    Ok(m)
}

/// `comp`'s gate at `p` in the variant set to `gate` (recipe and text alike).
pub(crate) fn set_gate(m: &mut Model, comp: &str, p: Precision, gate: PrecisionGate) -> Result<()> {
    let c = m
        .components
        .iter_mut()
        .find(|c| c.name() == comp)
        .with_context(|| format!("no component `{comp}`"))?;
    let line = super::apply::GateLine {
        gate: gate.clone(),
        reason: "set by the precision search (--component-gates report) to measure it in the chain"
            .into(),
    };
    c.recipe_text = super::apply::with_gate(&c.recipe_text, p, &line)?;
    let q = c
        .file
        .quantize
        .as_mut()
        .with_context(|| format!("`{comp}` has no [quantize] at {p}"))?;
    let entry = q.gates.entry(p.label().to_string()).or_default();
    if gate.min_cosine.is_some() {
        entry.min_cosine = gate.min_cosine;
    }
    if gate.max_norm_ratio_error.is_some() {
        entry.max_norm_ratio_error = gate.max_norm_ratio_error;
    }
    entry.reason = Some(line.reason);
    Ok(())
}
