//! Contracts between a recipe and the files it names: the golden npz holds every declared
//! tensor with the declared shape and dtype, and the ONNX graph's I/O is exactly the recipe's.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Result, bail};

use super::Component;
use xtask_onnx::tensor::DType;

/// Checks that the golden file holds every declared tensor with the declared shape and dtype.
pub fn check_golden(
    comp: &Component,
    golden: &BTreeMap<String, xtask_onnx::tensor::Tensor>,
    golden_path: &Path,
) -> Result<()> {
    for spec in comp.file.inputs.iter().chain(&comp.file.outputs) {
        let name = spec.name.get_ref();
        let Some(t) = golden.get(&spec.golden_key) else {
            let keys: Vec<&String> = golden.keys().collect();
            bail!(
                "{}: tensor `{name}` maps to golden key `{}`, which {} does not hold (keys: {keys:?})",
                comp.where_tensor(spec),
                spec.golden_key,
                golden_path.display()
            );
        };
        if t.shape() != spec.shape || t.dtype() != spec.dtype {
            bail!(
                "{}: tensor `{name}` is {} {:?} in the recipe but {} {:?} in {} (key `{}`)",
                comp.where_tensor(spec),
                spec.dtype,
                spec.shape,
                t.dtype(),
                t.shape(),
                golden_path.display(),
                spec.golden_key
            );
        }
    }
    Ok(())
}

/// Checks the recipe's I/O contract against the ONNX graph as the session reports it.
pub fn check_graph_contract(
    comp: &Component,
    graph_inputs: &[(String, Option<DType>, Vec<i64>)],
    graph_outputs: &[(String, Option<DType>, Vec<i64>)],
) -> Result<()> {
    for (kind, specs, graph) in [
        ("input", &comp.file.inputs, graph_inputs),
        ("output", &comp.file.outputs, graph_outputs),
    ] {
        let graph_names: Vec<&str> = graph.iter().map(|g| g.0.as_str()).collect();
        for spec in specs {
            let name = spec.name.get_ref();
            let Some((_, dtype, shape)) = graph.iter().find(|g| &g.0 == name) else {
                bail!(
                    "{}: {kind} `{name}` is not a graph {kind} of {} (graph {kind}s: {graph_names:?})",
                    comp.where_tensor(spec),
                    comp.file.component.onnx.display()
                );
            };
            let want: Vec<i64> = spec.shape.iter().map(|&d| d as i64).collect();
            if *shape != want || *dtype != Some(spec.dtype) {
                bail!(
                    "{}: {kind} `{name}` is {} {:?} in the recipe but {} {:?} in {}",
                    comp.where_tensor(spec),
                    spec.dtype,
                    spec.shape,
                    dtype.map_or("unsupported".into(), |d| d.to_string()),
                    shape,
                    comp.file.component.onnx.display()
                );
            }
        }
        for g in graph {
            if !specs.iter().any(|s| s.name.get_ref() == &g.0) {
                bail!(
                    "{}: graph {kind} `{}` of {} is not declared in the recipe",
                    comp.recipe_path.display(),
                    g.0,
                    comp.file.component.onnx.display()
                );
            }
        }
    }
    Ok(())
}

/// Each rewrite the recipe asks for replaces at least one node of its graph (one that matches
/// nothing means the recipe is mistaken about its graph).
pub fn check_rewrites_match(
    comp: &Component,
    summary: &xtask_onnx::onnx::proto::OnnxSummary,
) -> Result<()> {
    for name in &comp.file.rewrite.apply {
        let Some(rewrite) = xtask_onnx::onnx::decompose::find(name) else {
            continue; // refused when the recipe loaded
        };
        if xtask_onnx::onnx::decompose::matching_nodes(summary, rewrite)?.is_empty() {
            bail!(
                "{}: rewrite {name:?} matches no node of {} ({})",
                super::validate::at(&comp.recipe_path, &comp.recipe_text, "rewrite", "apply", 0),
                comp.file.component.onnx.display(),
                rewrite.what
            );
        }
    }
    Ok(())
}
