//! The host tensors of one reference chain run (`[host] trace`: a JSON whose `npz` key names
//! the tensors beside it), read under *our* names: `[host.trace_keys]` maps each of our names
//! to the file's, so a trace written by another exporter is used as it is, without converting
//! files.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};

use xtask_onnx::tensor::Tensor;
use xtask_recipe::recipe::host::{DimMode, HOST_INPUT_KEYS};
use xtask_recipe::recipe::tensor_names as names;
use xtask_recipe::recipe::{HostSection, Model};

pub use xtask_recipe::golden::trace::step_out_key;

/// Everything the chain starts from: the vision input and the trace's tensors, under our
/// names.
pub struct HostInputs {
    pub pixel_values: Tensor,
    pub trace: BTreeMap<String, Tensor>,
    /// What happens to each used action dim, resolved once here rather than per chain run.
    pub denorm: Vec<DimMode>,
    /// Every component's golden, read once per run (the vision golden gives `pixel_values`
    /// and every golden gives its boundaries' references).
    pub goldens: BTreeMap<String, xtask_recipe::golden::GoldenIo>,
}

/// Loads the chain's inputs and checks the host tensors are there, with a clear error if not.
pub fn load_host_inputs(root: &Path, model: &Model, host: &HostSection) -> Result<HostInputs> {
    let files = xtask_recipe::golden::trace_files(root, host)?;
    let npz_rel = xtask_base::project::rel(root, &files.npz);
    let trace = xtask_recipe::golden::trace::read_under_our_names(model, host, root, &files)?;
    let missing: Vec<&str> = HOST_INPUT_KEYS
        .iter()
        .copied()
        .filter(|k| !trace.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        bail!(
            "{npz_rel}: the golden has no host tensors {missing:?} (needed to run the chain; see golden/README.md)"
        );
    }
    let goldens = model
        .components
        .iter()
        .map(|c| {
            Ok((
                c.name().to_string(),
                xtask_recipe::golden::load_golden(root, c)?,
            ))
        })
        .collect::<Result<BTreeMap<_, _>>>()?;
    let pixel_values = goldens
        .get(&host.vision)
        .context("vision component")?
        .inputs
        .get(names::PIXEL_VALUES)
        .cloned()
        .context("the vision golden has no pixel_values")?;
    Ok(HostInputs {
        pixel_values,
        trace,
        denorm: host.denorm_modes()?,
        goldens,
    })
}
