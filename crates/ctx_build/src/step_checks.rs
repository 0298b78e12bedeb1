//! What a step checks besides running: the DLC is a DLC, the binary's graph name against the
//! recipe's, the rewritten graph on ORT, and no fp16 hazard in the golden before the HTP.

use std::path::Path;

use anyhow::{Context as _, Result, bail};

use crate::toolchain::{StepJob, Toolchain};
use xtask_parity::parity::component::load_golden;
use xtask_recipe::recipe::{Component, Model};

/// None when the binary's graph carries the recipe's `graph_name`; else why not (the
/// toolchain says: `Toolchain::graph_name_note`).
pub fn graph_name_note(tc: &dyn Toolchain, inside: &str, asked: &str) -> Option<String> {
    (inside != asked).then(|| tc.graph_name_note(inside, asked))
}

/// The rewritten copy the toolchain converted, run on ORT against the golden: a rewrite that
/// changed what the graph computes fails the step (None without `[rewrite]`).
pub fn check_rewrites(job: &StepJob<'_>) -> Result<Option<xtask_parity::rewritten::RewriteCheck>> {
    if job.comp.file.rewrite.apply.is_empty() {
        return Ok(None);
    }
    let golden = load_golden(job.root, job.comp)?;
    let check = xtask_parity::rewritten::check_on_ort(
        job.rt,
        job.root,
        job.model,
        job.comp,
        &golden,
        &job.onnx.path,
        job.onnx.applied.clone(),
    )?;
    if !check.ort_pass {
        bail!(
            "the rewritten graph {} fails its ONNX Runtime parity gate ({}): a rewrite must not \
             change what the graph computes",
            check.onnx,
            check.summary()
        );
    }
    Ok(Some(check))
}

/// A QNN IR DLC is a zip holding at least the `model` member; anything else is not a DLC.
pub fn check_dlc(path: &Path) -> Result<()> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot open the DLC {}", path.display()))?;
    let zip = zip::ZipArchive::new(file)
        .with_context(|| format!("{} is not a DLC (not a zip archive)", path.display()))?;
    if !zip.file_names().any(|n| n == "model") {
        bail!("{} is not a QNN DLC: no `model` member", path.display());
    }
    Ok(())
}

/// Before the HTP (fp16) sees a component: no golden tensor beyond fp16's range unless it is a
/// mask the recipe marks for clamping.
pub fn require_fp16_safe_golden(root: &Path, model: &Model, comp: &Component) -> Result<()> {
    let golden = load_golden(root, comp)?;
    let offenders: Vec<String> =
        xtask_recipe::fp16::scan_golden(comp, &golden.inputs, &golden.expected)
            .into_iter()
            .filter(|f| f.offender)
            .map(|f| {
                format!(
                    "{} {} (max |x| {:.3e}, min {:.3e}): {}",
                    f.kind, f.tensor, f.max_abs, f.min, f.status
                )
            })
            .collect();
    if !offenders.is_empty() {
        bail!(
            "fp16 hazard before the HTP: {} (see `cargo xtask lint-fp16 --model {}`)",
            offenders.join("; "),
            model.file.model.name
        );
    }
    Ok(())
}
