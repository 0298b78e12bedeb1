//! A quantized component on the QAIRT SDK: `qairt-converter --quantization_overrides` with the
//! AIMET encodings the quantize step wrote (so both toolchains start from the same ranges),
//! then `qairt-quantizer` on the component's calibration set (`--input_list`) with the
//! precision's bit widths, which fills in what the overrides leave out (qairt_quantizer.html).
//! `--preserve_io_datatype` keeps the binary's I/O float, as the embedded path's is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::NativeIo;
use super::steps::Job;
use xtask_recipe::recipe::Component;
use xtask_recipe::recipe::quantize::{CalibrationMethod, QuantizeSection};

/// Why the SDK cannot build `comp` as its recipe asks, if it cannot: said before anything runs.
pub fn cannot_express(comp: &Component) -> Option<String> {
    let q = comp.file.quantize.as_ref()?;
    if q.precision.is_quantized() && !q.exclude.is_empty() {
        return Some(format!(
            "{}: `exclude` keeps operators in float, and qairt-quantizer quantizes every tensor the overrides leave out (float fallback needs per-tensor overrides this tool does not write); remove `exclude` or build with the embedded toolchain",
            comp.name()
        ));
    }
    None
}

/// The calibration input list, in the staging folder.
pub fn calibration_list(staging: &Path) -> PathBuf {
    staging.join("calibration").join("input_list.txt")
}

/// `qairt-quantizer`'s arguments for `q` (the precision's bit widths, 32-bit bias).
pub fn quantizer_args(
    comp: &Component,
    q: &QuantizeSection,
    input: &Path,
    output: &Path,
    list: &Path,
) -> Vec<String> {
    let (weights, act) = q.precision.bits();
    let mut args = vec![
        "--input_dlc".to_string(),
        input.display().to_string(),
        "--output_dlc".into(),
        output.display().to_string(),
        "--input_list".into(),
        list.display().to_string(),
        "--weights_bitwidth".into(),
        weights.to_string(),
        "--act_bitwidth".into(),
        act.to_string(),
        "--bias_bitwidth".into(),
        "32".into(),
        "--act_quantizer_calibration".into(),
        match q.method {
            CalibrationMethod::Minmax => "min-max",
            CalibrationMethod::Entropy => "entropy",
            CalibrationMethod::Percentile => "percentile",
        }
        .into(),
        "--preserve_io_datatype".into(),
    ];
    if q.per_channel {
        args.push("--use_per_channel_quantization".into());
    }
    if NativeIo::of(comp).inputs {
        args.push("--use_native_input_files".into());
    }
    args
}

/// Writes the calibration set as `.raw` files and an input list of one line per sample;
/// runs `qairt-quantizer` on the converter's float DLC. Returns the quantized DLC.
pub fn quantize(
    job: &Job<'_>,
    model: &xtask_recipe::recipe::Model,
    float_dlc: &Path,
) -> Result<PathBuf> {
    let q = job
        .comp
        .file
        .quantize
        .as_ref()
        .context("internal: the SDK quantizer for a component without [quantize]")?;
    let set =
        xtask_runtime::quantize::calibration::CalibrationSet::of(job.root, model, job.comp, q)?;
    let list = calibration_list(job.staging);
    write_samples(job.comp, &set.samples, &list)?;
    let dlc = job.staging.join(format!("{}.dlc", job.comp.name()));
    let args = quantizer_args(job.comp, q, float_dlc, &dlc, &list);
    job.run("qairt-quantizer", &args, "quantize-dlc")?;
    if !dlc.is_file() {
        bail!("qairt-quantizer exited 0 but wrote no {}", dlc.display());
    }
    Ok(dlc)
}

/// One line per sample: `name:=path` for every input, in the recipe's order.
fn write_samples(
    comp: &Component,
    samples: &[BTreeMap<String, xtask_onnx::tensor::Tensor>],
    list: &Path,
) -> Result<()> {
    let dir = list.parent().context("the input list has no folder")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let native = NativeIo::of(comp).inputs;
    let mut lines = String::new();
    for (s, sample) in samples.iter().enumerate() {
        let prefix = format!("sample_{s:03}_input");
        let line = super::steps::write_sample(comp, sample, dir, &prefix, native)
            .with_context(|| format!("calibration sample {s}"))?;
        lines.push_str(&line);
        lines.push('\n');
    }
    std::fs::write(list, lines)?;
    Ok(())
}
