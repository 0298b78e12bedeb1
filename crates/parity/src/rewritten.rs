//! The rewritten copy of a component's ONNX that every QNN step gets, in
//! `target/rewrite/<model>/<component>/` (external data hard-linked beside it: ORT refuses
//! external data that resolves outside the model's folder), and its check on ONNX Runtime.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::parity::component::{GoldenIo, run_component};
use xtask_onnx::onnx::decompose::Applied;
use xtask_onnx::onnx::proto::parse_model;
use xtask_recipe::recipe::{Component, Model};
use xtask_runtime::runtime::{Backend, Runtime};

/// The folder of every rewritten copy, project-relative.
pub use xtask_base::project::REWRITE_DIR;

/// Where the rewritten copy of `comp` lives, project-relative (what renderings show).
pub fn qnn_onnx_rel(model: &str, comp: &Component) -> PathBuf {
    let file = comp.file.component.onnx.file_name().unwrap_or_default();
    Path::new(REWRITE_DIR)
        .join(model)
        .join(comp.name())
        .join(file)
}

/// The ONNX the QNN steps of `comp` run: the recipe's file, or with `[rewrite]` the rewritten
/// copy (written when missing or different; the recipe's file is never edited) and what each
/// rewrite replaced.
pub fn qnn_onnx(root: &Path, model: &str, comp: &Component) -> Result<(PathBuf, Vec<Applied>)> {
    let original = root.join(&comp.file.component.onnx);
    let names = &comp.file.rewrite.apply;
    if names.is_empty() {
        return Ok((original, Vec::new()));
    }
    let bytes =
        std::fs::read(&original).with_context(|| format!("cannot read {}", original.display()))?;
    let context = || {
        format!(
            "{}: [rewrite] of {}",
            comp.recipe_path.display(),
            comp.file.component.onnx.display()
        )
    };
    // Parsed once: the first rewrite reads its nodes, the copy its external data.
    let summary = parse_model(&bytes).with_context(context)?;
    let (rewritten, applied) =
        xtask_onnx::onnx::decompose::apply_parsed(&bytes, Some(&summary), names)
            .with_context(context)?;
    let copy = root.join(qnn_onnx_rel(model, comp));
    let dir = copy.parent().context("rewrite folder")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for loc in &summary.external_data {
        link_beside(&original.with_file_name(loc), &dir.join(loc))?;
    }
    if std::fs::read(&copy).ok().as_deref() != Some(rewritten.as_slice()) {
        xtask_base::atomic::write_atomic(&copy, &rewritten)?;
    }
    Ok((copy, applied))
}

/// The ONNX a session on `backend` runs for `comp`: on ORT's CPU EP the recipe's file (what
/// the graph means), on a QNN backend what the build converts (`qnn_onnx`: the rewritten copy,
/// if any).
pub fn onnx_for(root: &Path, model: &str, comp: &Component, backend: &Backend) -> Result<PathBuf> {
    match backend {
        Backend::OrtCpu => Ok(root.join(&comp.file.component.onnx)),
        _ => Ok(qnn_onnx(root, model, comp)?.0),
    }
}

/// `to` becomes a hard link of `from` (a copy across filesystems), replaced atomically, unless
/// it already is one.
fn link_beside(from: &Path, to: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let src = std::fs::metadata(from)
        .with_context(|| format!("external data {} is missing", from.display()))?;
    if let Ok(dst) = std::fs::metadata(to)
        && dst.ino() == src.ino()
        && dst.dev() == src.dev()
    {
        return Ok(());
    }
    let tmp = to.with_extension(format!("tmp-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    xtask_onnx::onnx::link_external_data(from, &tmp)
        .with_context(|| format!("cannot copy external data {}", from.display()))?;
    std::fs::rename(&tmp, to).with_context(|| format!("cannot place {}", to.display()))
}

/// The rewritten copy on ONNX Runtime's CPU EP against the golden, gated like `parity
/// --backend ort`: a rewrite must not change what the graph computes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RewriteCheck {
    pub applied: Vec<Applied>,
    /// The copy QNN got, project-relative.
    pub onnx: String,
    /// (output, cosine, max abs error) of the copy on ORT against the golden.
    pub ort: Vec<(String, f64, f64)>,
    pub ort_pass: bool,
}

impl RewriteCheck {
    /// `decompose_gelu_tanh v1 (2 nodes); rewritten copy on ORT: y cosine 1.00000000 max abs 4.8e-7`.
    pub fn summary(&self) -> String {
        let applied: Vec<String> = self.applied.iter().map(Applied::label).collect();
        format!(
            "rewrites {}; rewritten copy on ORT: {}",
            applied.join(", "),
            self.ort_figures()
        )
    }

    /// `y cosine 1.00000000 max abs 4.8e-7, …`
    fn ort_figures(&self) -> String {
        let ort: Vec<String> = self
            .ort
            .iter()
            .map(|(o, c, m)| {
                format!(
                    "{o} cosine {} max abs {m:.3e}",
                    xtask_runtime::report::fmt_cosine(*c)
                )
            })
            .collect();
        ort.join(", ")
    }

    /// The cells of one row per rewrite of the `rewrites_table`, `who` (a component or
    /// context) in the first column.
    pub fn cells(&self, who: &str) -> Vec<Vec<String>> {
        let ort = self.ort_figures();
        self.applied
            .iter()
            .map(|a| {
                vec![
                    format!("`{who}`"),
                    format!("{} v{}", a.name, a.version),
                    a.nodes.len().to_string(),
                    a.what.clone(),
                    ort.clone(),
                ]
            })
            .collect()
    }
}

/// The table of rewrites `| who | rewrite | replaced nodes | what | copy on ORT |` from
/// `RewriteCheck::cells` (the build report and the model card show the same table),
/// `who_header` naming the first column.
pub fn rewrites_table(who_header: &str, rows: impl IntoIterator<Item = Vec<String>>) -> String {
    xtask_runtime::report::md_table(
        &[
            who_header,
            "rewrite",
            "replaced nodes",
            "what",
            "rewritten copy on ORT vs golden",
        ],
        rows,
    )
}

/// Runs the rewritten copy of `comp` (`copy`, made by `qnn_onnx` with `applied`) on ORT's CPU
/// EP with the golden inputs (asked only when the recipe has `[rewrite]`).
pub fn check_on_ort(
    rt: &Runtime,
    root: &Path,
    model: &Model,
    comp: &Component,
    golden: &GoldenIo,
    copy: &Path,
    applied: Vec<Applied>,
) -> Result<RewriteCheck> {
    let result = run_component(rt, model, comp, golden, copy, &Backend::OrtCpu, false)
        .context("the rewritten copy on ONNX Runtime's CPU EP")?;
    Ok(RewriteCheck {
        applied,
        onnx: xtask_base::project::rel(root, copy),
        ort: result
            .outputs
            .iter()
            .map(|o| (o.name.clone(), o.metrics.cosine, o.metrics.max_abs_err))
            .collect(),
        ort_pass: result.pass,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rewrites_table_is_the_hand_built_one_of_before() {
        let check = RewriteCheck {
            applied: vec![Applied {
                name: xtask_onnx::onnx::decompose::KNOWN[0].name.into(),
                version: xtask_onnx::onnx::decompose::KNOWN[0].version,
                what: xtask_onnx::onnx::decompose::KNOWN[0].what.into(),
                nodes: vec!["a".into(), "b".into()],
            }],
            onnx: "target/rewrite/m/mlp/mlp.onnx".into(),
            ort: vec![("y".into(), 1.0, 4.8e-7), ("z".into(), 0.99, 1e-3)],
            ort_pass: true,
        };
        let a = &check.applied[0];
        let expected = format!(
            "| component | rewrite | replaced nodes | what | rewritten copy on ORT vs golden |\n\
             |---|---|---|---|---|\n\
             | `mlp` | {} v{} | 2 | {} | y cosine 1.0 max abs 4.800e-7, z cosine 0.99000000 max abs 1.000e-3 |\n",
            a.name,
            a.version,
            a.what.replace('|', "\\|"),
        );
        assert_eq!(rewrites_table("component", check.cells("mlp")), expected);
    }
}
