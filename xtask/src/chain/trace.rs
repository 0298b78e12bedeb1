//! The host tensors of one reference chain run (`[host] trace`: a JSON whose `npz` key names
//! the tensors beside it), read under *our* names: `[host.trace_keys]` maps each of our names
//! to the file's, so a trace written by another exporter is used as it is, without converting
//! files.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::recipe::host::{DimMode, HOST_INPUT_KEYS};
use crate::recipe::tensor_names as names;
use crate::recipe::{HostSection, Model};
use crate::tensor::Tensor;

pub use crate::golden::trace::step_out_key;

/// Everything the chain starts from: the vision input and the trace's tensors, under our
/// names.
pub struct HostInputs {
    pub pixel_values: Tensor,
    pub trace: BTreeMap<String, Tensor>,
    /// What happens to each used action dim, resolved once here rather than per chain run.
    pub denorm: Vec<DimMode>,
    /// Every component's golden, read once per run (the vision golden gives `pixel_values`
    /// and every golden gives its boundaries' references).
    pub goldens: BTreeMap<String, crate::golden::GoldenIo>,
}

/// Loads the chain's inputs and checks the host tensors are there, with a clear error if not.
pub fn load_host_inputs(root: &Path, model: &Model, host: &HostSection) -> Result<HostInputs> {
    let files = crate::golden::trace_files(root, host)?;
    let npz_rel = crate::project::rel(root, &files.npz);
    let trace = crate::golden::trace::read_under_our_names(model, host, root, &files)?;
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
        .map(|c| Ok((c.name().to_string(), crate::golden::load_golden(root, c)?)))
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
