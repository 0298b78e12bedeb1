//! The calibration samples of a quantized component: each sample is every graph input of the
//! component by name, as the chain feeds it. Where they come from (`[quantize] calibration`):
//!
//! - `golden`: the component's golden inputs (one sample);
//! - `trace` (the default): those, plus every other input of this component the chain trace
//!   holds. For the action step that is one sample per Euler step (step i's trajectory is step
//!   i-1's output, its timestep `timesteps[i]`); a trace of one chain run holds no other input
//!   of the vision or the LLM splits, so theirs stays the golden's (bring a folder for more);
//! - a folder of `.npz` files inside the project, each one sample keyed by input name (e.g.
//!   written from several episodes of the reference policy).
//!
//! Masks (`mask = true` inputs) calibrate clamped at `-MASK_CALIBRATION_FLOOR`.
//! Every sample is checked against the recipe (names, shapes, dtypes, finite values), at most
//! `samples` are kept, identical samples once. The set's hash (over every sample's tensors in
//! order) is part of the quantize step's key and record: another set is another binary.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use xtask_onnx::tensor::Tensor;
use xtask_recipe::recipe::quantize::{CalibrationSource, QuantizeSection};
use xtask_recipe::recipe::tensor_names::{NEXT_TRAJECTORY, TIMESTEP, TRAJECTORY};
use xtask_recipe::recipe::{Component, Model};

/// How negative a `mask = true` input calibrates. An additive mask of -65504 (fp16's floor)
/// calibrated as is stretches the 16-bit range of every tensor it is added to, the attention
/// scores, to ~65,500: a step of 1.0 on logits of a few units (tiny's `llm_split0` at w8a16:
/// cosine 0.9977; at real width 0.9947). Calibrated at -100 the masked logits still vanish in
/// the softmax (e^-100 ≈ 4e-44) and the step is ~0.002; the quantized graph's input Q node
/// then clamps the real mask to the same floor, in the QDQ simulation and on the HTP alike.
pub const MASK_CALIBRATION_FLOOR: f32 = 100.0;

/// One sample: every input of the component.
pub type Sample = BTreeMap<String, Tensor>;

/// The samples and where each came from.
#[derive(Debug, Clone)]
pub struct CalibrationSet {
    pub samples: Vec<Sample>,
    /// Where each sample came from (`golden`, `trace: Euler step 1`, `calib/a.npz`).
    pub origins: Vec<String>,
    /// sha256 over every sample's tensors, in order (names, dtypes, shapes, bytes).
    pub sha256: String,
}

impl CalibrationSet {
    /// The samples of `comp` per its `[quantize]` table.
    pub fn of(root: &Path, model: &Model, comp: &Component, q: &QuantizeSection) -> Result<Self> {
        let golden = xtask_recipe::golden::load_golden(root, comp)?;
        let mut found: Vec<(String, Sample)> = match &q.calibration {
            CalibrationSource::Golden => vec![("golden".into(), golden.inputs)],
            CalibrationSource::Trace => {
                let mut all = vec![("golden".to_string(), golden.inputs.clone())];
                all.extend(from_trace(root, model, comp, &golden.inputs)?);
                all
            }
            CalibrationSource::Folder(dir) => from_folder(root, comp, dir)?,
        };
        dedupe(&mut found);
        found.truncate(q.samples);
        for (_, sample) in found.iter_mut() {
            *sample = xtask_recipe::fp16::clamp_masks_at(comp, sample, -MASK_CALIBRATION_FLOOR);
        }
        for (origin, sample) in &found {
            check_sample(comp, origin, sample)?;
        }
        let sha256 = hash_samples(found.iter().map(|(_, s)| s));
        let (origins, samples) = found.into_iter().unzip();
        Ok(CalibrationSet {
            samples,
            origins,
            sha256,
        })
    }

    /// Writes one `.npz` per sample into `dir` and a JSON list of them (what `quantize.py
    /// --samples` reads); the list's path.
    pub fn write(&self, dir: &Path) -> Result<PathBuf> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let mut files = Vec::new();
        for (i, sample) in self.samples.iter().enumerate() {
            let path = dir.join(format!("sample_{i:03}.npz"));
            xtask_onnx::tensor::write_npz(&path, sample)?;
            files.push(path.display().to_string());
        }
        let list = dir.join("samples.json");
        std::fs::write(&list, serde_json::to_vec_pretty(&files)?)?;
        Ok(list)
    }
}

/// The files that decide a component's calibration set, project-relative, in order: its
/// golden; with `trace`, for the action step, the trace's JSON and tensors (its Euler steps);
/// with a folder, every `.npz` in it. Their hashes enter the quantize step's key (the set
/// itself is built, and its content hashed into the record, when the step runs).
pub fn source_files(
    root: &Path,
    model: &Model,
    comp: &Component,
    q: &QuantizeSection,
) -> Result<Vec<PathBuf>> {
    let mut files = vec![comp.file.golden.file.clone()];
    match &q.calibration {
        CalibrationSource::Golden => {}
        CalibrationSource::Trace => {
            if let Some(host) = &model.file.host
                && host.action_step == comp.name()
            {
                let found = xtask_recipe::golden::trace_files(root, host)?;
                files.push(host.trace.clone());
                files.push(xtask_base::project::rel(root, &found.npz).into());
            }
        }
        CalibrationSource::Folder(dir) => {
            files.clear();
            let mut npz: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
                .with_context(|| {
                    format!(
                        "{}: quantize.calibration = {:?} is not a folder",
                        comp.recipe_path.display(),
                        dir.display().to_string()
                    )
                })?
                .flatten()
                .map(|e| dir.join(e.file_name()))
                .filter(|p| p.extension().is_some_and(|e| e == "npz"))
                .collect();
            npz.sort();
            files.extend(npz);
        }
    }
    Ok(files)
}

/// The action step's input at every Euler step after the first (the first is the golden's).
fn from_trace(
    root: &Path,
    model: &Model,
    comp: &Component,
    golden: &Sample,
) -> Result<Vec<(String, Sample)>> {
    let Some(host) = &model.file.host else {
        return Ok(Vec::new());
    };
    if host.action_step != comp.name() || !golden.contains_key(TRAJECTORY) {
        return Ok(Vec::new());
    }
    let files = xtask_recipe::golden::trace_files(root, host)?;
    let trace = xtask_recipe::golden::trace::read_under_our_names(model, host, root, &files)?;
    let mut out = Vec::new();
    for (i, t) in host.timesteps.iter().enumerate().skip(1) {
        let key = xtask_recipe::golden::trace::step_out_key(i - 1);
        let Some(previous) = trace.get(&key) else {
            continue;
        };
        let mut sample = golden.clone();
        sample.insert(TRAJECTORY.into(), previous.clone());
        if let Some(Tensor::F32(ts)) = golden.get(TIMESTEP) {
            let mut ts = ts.clone();
            ts.fill(*t);
            sample.insert(TIMESTEP.into(), Tensor::F32(ts));
        }
        out.push((
            format!("trace: Euler step {i} ({key} -> {NEXT_TRAJECTORY})"),
            sample,
        ));
    }
    Ok(out)
}

/// Every `.npz` of a folder of the project, in name order.
fn from_folder(root: &Path, comp: &Component, dir: &Path) -> Result<Vec<(String, Sample)>> {
    let full = root.join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&full)
        .with_context(|| {
            format!(
                "{}: quantize.calibration = {:?} is not a folder",
                comp.recipe_path.display(),
                dir.display().to_string()
            )
        })?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "npz"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!(
            "{}: quantize.calibration folder {} holds no .npz sample",
            comp.recipe_path.display(),
            dir.display()
        );
    }
    files
        .into_iter()
        .map(|f| {
            let rel = xtask_base::project::rel(root, &f);
            let all = xtask_onnx::tensor::read_npz(&f)?;
            let sample = comp
                .file
                .inputs
                .iter()
                .map(|s| {
                    let name = s.name.get_ref();
                    let t = all
                        .get(name)
                        .with_context(|| format!("calibration sample {rel} has no `{name}`"))?;
                    Ok((name.clone(), t.clone()))
                })
                .collect::<Result<Sample>>()?;
            Ok((rel, sample))
        })
        .collect()
}

/// Keeps the first of identical samples.
fn dedupe(found: &mut Vec<(String, Sample)>) {
    let mut seen = std::collections::BTreeSet::new();
    found.retain(|(_, s)| seen.insert(hash_samples(std::iter::once(s))));
}

/// Every input the recipe declares, with its shape and dtype, finite.
fn check_sample(comp: &Component, origin: &str, sample: &Sample) -> Result<()> {
    for spec in &comp.file.inputs {
        let name = spec.name.get_ref();
        let t = sample
            .get(name)
            .with_context(|| format!("calibration sample ({origin}) has no input `{name}`"))?;
        if t.shape() != spec.shape || t.dtype() != spec.dtype {
            bail!(
                "calibration sample ({origin}): `{name}` is {:?} {:?}, the recipe declares {:?} {:?}",
                t.dtype(),
                t.shape(),
                spec.dtype,
                spec.shape
            );
        }
        if t.to_f64_vec().iter().any(|v| !v.is_finite()) {
            bail!("calibration sample ({origin}): `{name}` holds NaN or Inf");
        }
    }
    Ok(())
}

/// sha256 over the samples in order: each tensor's name, dtype, shape and little-endian bytes.
pub fn hash_samples<'a>(samples: impl Iterator<Item = &'a Sample>) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for (i, sample) in samples.enumerate() {
        h.update(format!("sample {i}\n"));
        for (name, t) in sample {
            h.update(format!("{name} {:?} {:?}\n", t.dtype(), t.shape()));
            h.update(t.to_le_bytes());
        }
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(v: f32) -> Sample {
        BTreeMap::from([(
            "x".to_string(),
            Tensor::F32(ndarray::ArrayD::from_elem(ndarray::IxDyn(&[2]), v)),
        )])
    }

    #[test]
    fn the_hash_follows_the_samples_and_their_order() {
        let (a, b) = (sample(1.0), sample(2.0));
        let ab = hash_samples([&a, &b].into_iter());
        assert_eq!(ab, hash_samples([&a, &b].into_iter()));
        assert_ne!(ab, hash_samples([&b, &a].into_iter()));
        assert_ne!(ab, hash_samples([&a].into_iter()));
    }

    #[test]
    fn identical_samples_are_kept_once() {
        let mut found = vec![
            ("golden".to_string(), sample(1.0)),
            ("trace".to_string(), sample(1.0)),
            ("other".to_string(), sample(3.0)),
        ];
        dedupe(&mut found);
        let origins: Vec<&str> = found.iter().map(|(o, _)| o.as_str()).collect();
        assert_eq!(origins, ["golden", "other"]);
    }
}
