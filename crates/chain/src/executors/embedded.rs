//! The embedded runtime as a parity executor: the session model chosen by backend (the ONNX
//! for ORT; the rewritten copy the build converts for QNN's CPU backend; the fresh context
//! wrapper on the HTP; a quantized component's QDQ ONNX on ORT for the CPU stage), run and
//! judged.

use std::path::Path;

use anyhow::Result;

use xtask_base::vocab::BackendKind;
use xtask_parity::parity::component::{
    ComponentResult, GoldenIo, run_component, run_qdq_simulation,
};
use xtask_parity::parity::runner::Executor;
use xtask_recipe::recipe::{Component, Model};
use xtask_runtime::runtime::{Backend, Runtime};

pub struct Embedded<'a> {
    pub root: &'a Path,
    pub rt: &'a Runtime,
    pub model: &'a Model,
    pub backend: Backend,
    /// Clamp `mask = true` inputs to fp16's range before the HTP (off: `--no-clamp`).
    pub clamp_masks: bool,
}

impl Executor for Embedded<'_> {
    fn backend(&self) -> BackendKind {
        self.backend.kind()
    }

    fn run(&self, comp: &Component, golden: &GoldenIo) -> Result<ComponentResult> {
        let (root, model) = (self.root, self.model);
        if self.backend == Backend::QnnCpu && comp.precision().is_quantized() {
            // A quantized component's CPU stage is its QDQ simulation (QNN's CPU backend
            // does not execute QDQ graphs), against the float golden.
            let qdq = xtask_ctx_build::fresh::fresh_qdq_model(root, self.rt, model, comp)?;
            let mut result = run_qdq_simulation(self.rt, model, comp, golden, &qdq)?;
            result.session_model = xtask_base::project::rel(root, &qdq);
            return Ok(result);
        }
        let session_model = match &self.backend {
            Backend::QnnHtp(_) => {
                xtask_ctx_build::fresh::fresh_context_wrapper(root, self.rt, model, comp)?
            }
            // QNN's CPU backend runs what the build converts (the rewritten copy, if any);
            // ORT judges the recipe's ONNX, the graph's meaning.
            backend => {
                xtask_parity::rewritten::onnx_for(root, &model.file.model.name, comp, backend)?
            }
        };
        let mut result = run_component(
            self.rt,
            model,
            comp,
            golden,
            &session_model,
            &self.backend,
            self.clamp_masks,
        )?;
        result.session_model = xtask_base::project::rel(root, &session_model);
        Ok(result)
    }
}
