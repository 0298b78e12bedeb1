//! One component of `cargo xtask parity` on the embedded runtime: its golden loaded, the model
//! file it runs from chosen (the ONNX, or on HTP the fresh context wrapper), run and judged.
//! Any error becomes a failed result, so the other components still run.

use std::path::Path;

use anyhow::Result;

use super::component::{ComponentResult, GoldenIo, failed_component, load_golden, run_component};
use crate::recipe::{Component, Model};
use crate::runtime::{Backend, Runtime};

/// Runs `comp` with `run`: the embedded session by default (`run` = `None`), or another
/// runner (for example the QAIRT SDK's tools) given the golden.
#[allow(clippy::type_complexity)]
pub fn run_one(
    root: &Path,
    rt: &Runtime,
    model: &Model,
    comp: &Component,
    backend: &Backend,
    clamp_masks: bool,
    other: Option<&dyn Fn(&GoldenIo) -> Result<ComponentResult>>,
) -> ComponentResult {
    let run = || -> Result<ComponentResult> {
        let golden = load_golden(root, comp)?;
        if let Some(other) = other {
            return other(&golden);
        }
        let session_model = match backend {
            Backend::QnnHtp(_) => {
                crate::ctx_build::fresh::fresh_context_wrapper(root, rt, model, comp)?
            }
            // QNN's CPU backend runs what the build converts (the rewritten copy, if any);
            // ORT judges the recipe's ONNX, the graph's meaning.
            _ => crate::onnx::decompose::onnx_for(root, &model.file.model.name, comp, backend)?,
        };
        let mut result = run_component(
            rt,
            model,
            comp,
            &golden,
            &session_model,
            backend,
            clamp_masks,
        )?;
        result.session_model = crate::project::rel(root, &session_model);
        Ok(result)
    };
    run().unwrap_or_else(|e| failed_component(root, comp.name(), backend.label(), &e))
}
