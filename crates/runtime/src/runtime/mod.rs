//! The embedded QNN 2.47 runtime: fetching it (`bootstrap`), loading it and opening checked
//! sessions on it (`session`), and asking it for versions (`version`).

pub mod backend;
pub mod bootstrap;
pub mod compile_config;
pub mod device;
pub mod placement;
pub mod platform;
pub mod probe;
pub mod session;
pub mod trust_stamp;
pub mod values;
pub mod version;
pub mod wheels;

pub use session::{Backend, Runtime};
pub use xtask_recipe::htp_target::HtpTarget;

/// The backend of a command that runs built artifacts for the whole model (`parity`, `run`):
/// on the HTP those are context binaries, whose graph options were compiled in by build-ctx
/// from each component's `[context]`, so the target names only the model's device.
pub fn backend_for(
    model: &xtask_recipe::recipe::Model,
    kind: xtask_base::vocab::BackendKind,
) -> crate::runtime::Backend {
    use crate::runtime::Backend;
    use xtask_base::vocab::BackendKind;
    match kind {
        BackendKind::Ort => Backend::OrtCpu,
        BackendKind::Cpu => Backend::QnnCpu,
        BackendKind::Htp => {
            Backend::QnnHtp(xtask_recipe::htp_target::HtpTarget::for_built_contexts(
                model.file.target.soc,
                model.file.target.htp_arch,
            ))
        }
    }
}

/// The backend of a command that compiles one component's ONNX graph (bisect on the HTP):
/// the HTP target comes from the component's `[context]` on the model's SoC.
pub fn backend_for_component(
    model: &xtask_recipe::recipe::Model,
    comp: &xtask_recipe::recipe::Component,
    kind: xtask_base::vocab::BackendKind,
) -> anyhow::Result<crate::runtime::Backend> {
    Ok(match kind {
        xtask_base::vocab::BackendKind::Htp => {
            let soc = xtask_recipe::htp_target::target_soc(model, None)?;
            crate::runtime::Backend::QnnHtp(xtask_recipe::htp_target::HtpTarget::for_component(
                &soc, comp,
            ))
        }
        other => backend_for(model, other),
    })
}
