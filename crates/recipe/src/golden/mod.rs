//! Golden tensors and host traces: the one place that reads them. A component's golden npz is
//! read and checked against its recipe here (`load_golden`), the host trace's files are found
//! from its JSON here (`trace_files`), and its tensors are read under our names here
//! (`trace::read_under_our_names`). The build, parity, the chain, bundle assembly and fetch all
//! go through this module, so a rule about these files (a missing `npz` key, a non-finite
//! input) holds everywhere at once.

pub mod trace;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};

use crate::recipe::{Component, check_golden};
use xtask_onnx::tensor::{Tensor, read_npz};

pub use trace::{TraceFiles, trace_files};

/// Golden inputs and expected outputs of a component, by graph tensor name, validated
/// against the recipe (keys, shapes, dtypes).
pub struct GoldenIo {
    pub inputs: BTreeMap<String, Tensor>,
    pub expected: BTreeMap<String, Tensor>,
    pub sha256: String,
}

pub fn load_golden(root: &Path, comp: &Component) -> Result<GoldenIo> {
    let path = root.join(&comp.file.golden.file);
    // Hashed as a stream: the file is not held in memory twice (the npz reader reads it too).
    let sha256 = xtask_base::hashing::sha256_file(&path)
        .with_context(|| format!("missing golden file {}", path.display()))?;
    let all = read_npz(&path)?;
    check_golden(comp, &all, &comp.file.golden.file)?;
    let pick = |specs: &[crate::recipe::TensorSpec]| -> BTreeMap<String, Tensor> {
        specs
            .iter()
            .map(|s| (s.name.get_ref().clone(), all[&s.golden_key].clone()))
            .collect()
    };
    let inputs = pick(&comp.file.inputs);
    require_finite_inputs(&inputs, &comp.file.golden.file)?;
    Ok(GoldenIo {
        inputs,
        expected: pick(&comp.file.outputs),
        sha256,
    })
}

/// Everything a component's files must satisfy before any step reads or writes anything: the
/// ONNX parses, its external data stays inside the project (or the data root), its graph I/O
/// is exactly the recipe's (names, ranks, dims, dtypes; a dynamic dim is a mismatch), and the
/// golden holds every declared tensor. Errors are marked as bad input (exit 2).
pub fn check_component_files(root: &Path, comp: &Component) -> Result<()> {
    use xtask_base::bad_input::MarkBadInput;
    let check = || -> Result<()> {
        let onnx = &comp.file.component.onnx;
        let summary = xtask_onnx::onnx::proto::read_summary(&root.join(onnx))?;
        refuse_wrapper(onnx, &summary)?;
        let dir = onnx.parent().unwrap_or(Path::new(""));
        for loc in &summary.external_data {
            crate::recipe::paths::require_inside(
                root,
                &dir.join(loc),
                &format!(
                    "{}: external data of {}",
                    comp.recipe_path.display(),
                    onnx.display()
                ),
            )?;
        }
        check_external_extent(root, dir, &summary)?;
        check_elem_types(onnx, &summary)?;
        let (inputs, outputs) = summary.io_contract();
        crate::recipe::check_graph_contract(comp, &inputs, &outputs)?;
        crate::recipe::check_rewrites_match(comp, &summary)?;
        load_golden(root, comp)?;
        Ok(())
    };
    check().bad_input()
}

/// A component's ONNX that is an EPContext wrapper (what `build-ctx` writes beside a context
/// binary, `ctx/<model>/<c>_socid<N>_archv<A>_ctx.onnx`) is named as such: ONNX Runtime would
/// only say it cannot acquire the HTP arch, or has no implementation of `EPContext`.
fn refuse_wrapper(onnx: &Path, summary: &xtask_onnx::onnx::proto::OnnxSummary) -> Result<()> {
    let Some(node) = summary.nodes.iter().find(|n| n.op_type == "EPContext") else {
        return Ok(());
    };
    anyhow::bail!(
        "{} is an EPContext wrapper (its node {:?} points at the context binary {:?}), not the component's exported graph: put the exported ONNX back (the wrapper belongs in ctx/, beside its binary)",
        onnx.display(),
        node.name,
        node.attr_str("ep_cache_context").unwrap_or("?")
    )
}

/// Every external-data file holds the bytes its initializers declare: a truncated one is named
/// with the bytes expected and found (ONNX Runtime would say only that an offset is out of
/// bounds, without the file).
fn check_external_extent(
    root: &Path,
    dir: &Path,
    summary: &xtask_onnx::onnx::proto::OnnxSummary,
) -> Result<()> {
    for (loc, need) in &summary.external_extent {
        let rel = dir.join(loc);
        let have = std::fs::metadata(root.join(&rel))
            .with_context(|| format!("external data file {} is missing", rel.display()))?
            .len();
        if have < *need {
            anyhow::bail!(
                "external data file {} is truncated: its graph's initializers need {need} bytes, the file has {have}",
                rel.display()
            );
        }
    }
    Ok(())
}

/// A graph input or output of an element type the tool does not handle is named with its
/// ONNX code (`TensorProto.DataType`), not reported as a bare mismatch.
fn check_elem_types(onnx: &Path, summary: &xtask_onnx::onnx::proto::OnnxSummary) -> Result<()> {
    let io = summary.graph_inputs.iter().chain(&summary.graph_outputs);
    for name in io.filter(|n| !summary.initializers.contains(n)) {
        let Some((_, elem, _)) = summary.io_types.iter().find(|(n, _, _)| n == name) else {
            continue;
        };
        if xtask_onnx::onnx::proto::dtype_of_elem(*elem).is_none() {
            anyhow::bail!(
                "{}: tensor `{name}` has ONNX element type {elem}{}, which this tool does not handle (f32, f16, i64, bool)",
                onnx.display(),
                match xtask_onnx::onnx::extract::elem_name(*elem) {
                    n if n.starts_with("elem") => String::new(),
                    n => format!(" ({n})"),
                }
            );
        }
    }
    Ok(())
}

/// Hard-links `src` to `dest` when `src` is at least `link_from_bytes` long (no copy, no
/// memory), else copies it, so that small files edited in place in `dest` can never reach
/// back into the source. A failed link (another file system) falls back to a streamed copy.
pub fn link_or_copy(src: &Path, dest: &Path, link_from_bytes: u64) -> Result<Linked> {
    let large = std::fs::metadata(src)
        .map(|m| m.len() >= link_from_bytes)
        .unwrap_or(false);
    if large && std::fs::hard_link(src, dest).is_ok() {
        return Ok(Linked::Yes);
    }
    std::fs::copy(src, dest)
        .with_context(|| format!("cannot copy {} to {}", src.display(), dest.display()))?;
    Ok(Linked::Copied)
}

/// Whether [`link_or_copy`] made a hard link (one file, two names: the source's hash is the
/// destination's) or a copy (its bytes must be hashed where they landed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Linked {
    Yes,
    Copied,
}

/// A golden *input* holding NaN or Inf would make every figure downstream meaningless (and a
/// failed gate would point at an operator that is not at fault), so it is refused as bad input
/// (exit 2) before anything runs, naming each tensor, the file and the counts.
fn require_finite_inputs(inputs: &BTreeMap<String, Tensor>, file: &Path) -> Result<()> {
    let bad: Vec<String> = inputs
        .iter()
        .filter(|(_, t)| {
            matches!(
                t.dtype(),
                xtask_onnx::tensor::DType::F32 | xtask_onnx::tensor::DType::F16
            )
        })
        .filter_map(|(name, t)| {
            let (mut nan, mut inf) = (0usize, 0usize);
            for v in t.to_f64_vec() {
                nan += usize::from(v.is_nan());
                inf += usize::from(v.is_infinite());
            }
            (nan + inf > 0).then(|| format!("  `{name}`: {nan} NaN, {inf} Inf"))
        })
        .collect();
    if bad.is_empty() {
        return Ok(());
    }
    Err(anyhow::Error::new(xtask_base::bad_input::BadInput(
        anyhow::anyhow!(
            "the golden {} holds non-finite values in its inputs (nothing was run; regenerate the golden with finite inputs):\n{}",
            file.display(),
            bad.join("\n")
        ),
    )))
}
