//! One module per subcommand; each flag struct is the command's input and has `run`.

pub mod bench;
pub mod bisect;
pub mod build_ctx;
pub mod doctor;
pub mod fetch;
pub mod lint_fp16;
pub mod package;
pub mod parity;
pub mod plan;
pub mod release;
pub mod run;
pub mod verify;

use std::path::PathBuf;

use anyhow::{Result, bail};

use crate::recipe::{Component, Model};
use crate::runtime::{Backend, HtpTarget};

pub struct Ctx {
    pub root: PathBuf,
    pub verbose: bool,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Success,
    GateFailed,
}

/// The SoC of `--soc` (an id or chip name), or the model's own target when absent.
pub fn target_soc(model: &Model, soc: Option<&str>) -> Result<crate::target::soc::Soc> {
    crate::target::soc::parse_soc(soc.unwrap_or(&model.file.target.soc.to_string()))
}

/// The components named by `--only` (all when empty), in pipeline order.
pub fn select_components<'m>(model: &'m Model, only: &[String]) -> Result<Vec<&'m Component>> {
    let known: Vec<&str> = model.components.iter().map(|c| c.name()).collect();
    for name in only {
        if !known.contains(&name.as_str()) {
            bail!(
                "unknown component `{name}` in --only; model `{}` has: {}",
                model.file.model.name,
                known.join(", ")
            );
        }
    }
    Ok(model
        .components
        .iter()
        .filter(|c| only.is_empty() || only.iter().any(|o| o == c.name()))
        .collect())
}

/// Refuses to start when input files are missing, listing all of them and how to get them.
pub fn require_files(ctx: &Ctx, model: &Model, comps: &[&Component]) -> Result<()> {
    let missing: Vec<String> = comps
        .iter()
        .flat_map(|c| {
            crate::recipe::missing_files(&ctx.root, c)
                .into_iter()
                .map(move |p| format!("  {} ({})", p.display(), c.name()))
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let hint = model
        .file
        .model
        .obtain
        .as_deref()
        .unwrap_or("see the model's recipes for where its files come from");
    bail!(
        "model `{}` is missing {} file(s):\n{}\nhow to obtain them: {hint}",
        model.file.model.name,
        missing.len(),
        missing.join("\n")
    )
}

/// The backend a command runs on.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendArg {
    /// ONNX Runtime's CPU execution provider on the ONNX graphs.
    Ort,
    /// The QNN CPU backend on the ONNX graphs.
    Cpu,
    /// The built HTP context binaries (emulated on x86_64, the NPU on a device).
    Htp,
}

/// The backend of a command that runs built artifacts for the whole model (`parity`, `run`):
/// on the HTP those are context binaries, whose graph options were compiled in by build-ctx
/// from each component's `[context]`, so the target names only the model's device.
pub fn backend_for(model: &Model, arg: BackendArg) -> Backend {
    match arg {
        BackendArg::Ort => Backend::OrtCpu,
        BackendArg::Cpu => Backend::QnnCpu,
        BackendArg::Htp => Backend::QnnHtp(HtpTarget::for_built_contexts(
            model.file.target.soc,
            model.file.target.htp_arch,
        )),
    }
}

/// The backend of a command that compiles one component's ONNX graph (bisect on the HTP):
/// the HTP target comes from the component's `[context]` on the model's SoC.
pub fn backend_for_component(model: &Model, comp: &Component, arg: BackendArg) -> Result<Backend> {
    Ok(match arg {
        BackendArg::Htp => {
            let soc = target_soc(model, None)?;
            Backend::QnnHtp(HtpTarget::from_recipe(&soc, &comp.file.context))
        }
        other => backend_for(model, other),
    })
}

/// The bisect command to suggest when a gate fails.
pub fn bisect_hint(model: &str, comp: &Component, backend: &str) -> String {
    format!(
        "cargo xtask bisect {} --backend {backend} --model {model}",
        comp.name()
    )
}

/// Which tools run a step: the embedded QNN 2.47 runtime, or the QAIRT SDK's tools.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ToolchainArg {
    Embedded,
    Sdk,
}
