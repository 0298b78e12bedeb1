//! The host trace of one reference chain run (`[host] trace`: a JSON whose `npz` key names
//! the tensors beside it), and its tensors under *our* names: `[host.trace_keys]` maps each of
//! our names to the file's, so a trace written by another exporter is used as it is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::recipe::host::{STEP_OUT, trace_keys};
use crate::recipe::validate::{at, at_entry};
use crate::recipe::{HostSection, Model};
use xtask_base::bad_input::{BadInput, MarkBadInput};
use xtask_onnx::tensor::{Tensor, read_npz};

/// Our name of Euler step `i`'s output in the trace.
pub fn step_out_key(i: usize) -> String {
    crate::recipe::host::step_name(STEP_OUT, i)
}

/// The two files of a host trace, as found from its JSON (never by a file-name pattern).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceFiles {
    /// The trace JSON (the recipe's `[host] trace`).
    pub json: PathBuf,
    /// The npz its `npz` key names, beside it.
    pub npz: PathBuf,
}

/// Finds the trace's files from its JSON: a missing file, invalid JSON or a missing `npz` key
/// is an error naming the file (never silently skipped). The `npz` key must be a plain file
/// name: the tensors live beside the JSON.
pub fn trace_files(root: &Path, host: &HostSection) -> Result<TraceFiles> {
    let json = root.join(&host.trace);
    let meta: serde_json::Value = serde_json::from_slice(
        &std::fs::read(&json)
            .with_context(|| format!("missing host trace {}", host.trace.display()))?,
    )
    .with_context(|| format!("{} is not valid JSON", host.trace.display()))?;
    let npz_name = meta["npz"].as_str().with_context(|| {
        format!(
            "{}: no `npz` key naming the host tensors",
            host.trace.display()
        )
    })?;
    let plain = Path::new(npz_name)
        .file_name()
        .is_some_and(|n| n == std::ffi::OsStr::new(npz_name));
    if !plain {
        bail!(
            "{}: `npz` = {npz_name:?} must be a file name beside the trace, not a path",
            host.trace.display()
        );
    }
    let npz = json.parent().unwrap_or(root).join(npz_name);
    // Read inside the project only, as the goldens are: a link out of it is refused.
    let npz_rel = host.trace.parent().unwrap_or(Path::new("")).join(npz_name);
    crate::recipe::paths::require_inside(root, &npz_rel, &format!("{}: npz", host.trace.display()))
        .bad_input()?;
    Ok(TraceFiles { json, npz })
}

/// Two floats the same up to the printing of an f32 (a trace JSON may hold `0.3333333432674408`
/// where model.toml says `0.33333334`).
fn same_value(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

/// What the trace JSON says that `model.toml` says too must agree: `seq_len`, `timesteps`,
/// `num_flow_steps` (their count) and `action_dim_used`. A field the JSON does not hold (another
/// exporter's trace) is not compared. A disagreement is bad input (exit 2) naming both files.
pub fn check_against_recipe(model: &Model, host: &HostSection, files: &TraceFiles) -> Result<()> {
    let trace = host.trace.display();
    let meta: serde_json::Value = serde_json::from_slice(
        &std::fs::read(&files.json).with_context(|| format!("missing host trace {trace}"))?,
    )
    .with_context(|| format!("{trace} is not valid JSON"))?;
    let (path, text) = (&model.recipe_path, &model.recipe_text);
    let steps: Vec<f64> = host.timesteps.iter().map(|t| f64::from(*t)).collect();
    let mut problems = Vec::new();
    let mut compare = |key: &str, theirs: Option<String>, ours: String, where_: String| {
        if let Some(theirs) = theirs.filter(|t| *t != ours) {
            problems.push(format!("{trace}: {key} = {theirs}, but {where_} = {ours}"));
        }
    };
    let int = |key: &str| meta.get(key).map(|v| v.to_string());
    compare(
        "seq_len",
        int("seq_len"),
        model.file.model.seq_len.to_string(),
        at(path, text, "model", "seq_len", 0),
    );
    compare(
        "num_flow_steps",
        int("num_flow_steps"),
        steps.len().to_string(),
        format!("the count of {}", at(path, text, "host", "timesteps", 0)),
    );
    compare(
        "action_dim_used",
        int("action_dim_used"),
        host.action_dim_used.to_string(),
        at(path, text, "host", "action_dim_used", 0),
    );
    if let Some(listed) = meta.get("timesteps") {
        let theirs: Option<Vec<f64>> = listed
            .as_array()
            .map(|a| a.iter().filter_map(serde_json::Value::as_f64).collect());
        let agree = theirs.as_ref().is_some_and(|t| {
            t.len() == steps.len() && t.iter().zip(&steps).all(|(a, b)| same_value(*a, *b))
        });
        if !agree {
            problems.push(format!(
                "{trace}: timesteps = {listed}, but {} = {:?}",
                at(path, text, "host", "timesteps", 0),
                host.timesteps
            ));
        }
    }
    if !problems.is_empty() {
        return Err(BadInput(anyhow::anyhow!(
            "the host trace disagrees with its recipe (nothing was run):\n  {}",
            problems.join("\n  ")
        ))
        .into());
    }
    Ok(())
}

/// The trace's inputs hold finite values only (named by the trace's key and ours), `q01` and
/// `q99` hold one value per used action dim with `q01 < q99` in each, and the reference
/// actions have one value per used dim: a trace that fails these would be reported as a NaN or
/// a cosine failure of the chain instead.
fn check_tensors(
    host: &HostSection,
    npz_rel: &str,
    trace: &BTreeMap<String, Tensor>,
) -> Result<()> {
    let mut problems = Vec::new();
    let named = |ours: &str| {
        let theirs = host.trace_key(ours, None);
        match theirs == ours {
            true => format!("`{ours}`"),
            false => format!("`{theirs}` (our `{ours}`)"),
        }
    };
    for key in crate::recipe::host::HOST_INPUT_KEYS {
        let Some(t) = trace.get(key) else { continue };
        if !matches!(
            t.dtype(),
            xtask_onnx::tensor::DType::F32 | xtask_onnx::tensor::DType::F16
        ) {
            continue;
        }
        let values = t.to_f64_vec();
        let nan = values.iter().filter(|v| v.is_nan()).count();
        let inf = values.iter().filter(|v| v.is_infinite()).count();
        if nan + inf > 0 {
            problems.push(format!(
                "{}: {nan} NaN, {inf} Inf (a trace input must be finite)",
                named(key)
            ));
        }
    }
    let used = host.action_dim_used;
    if let (Some(lo), Some(hi)) = (trace.get("q01"), trace.get("q99")) {
        let (lo, hi) = (lo.to_f64_vec(), hi.to_f64_vec());
        for (key, values) in [("q01", &lo), ("q99", &hi)] {
            if values.len() != used {
                problems.push(format!(
                    "{}: {} values, but action_dim_used = {used} dims are de-normalised",
                    named(key),
                    values.len()
                ));
            }
        }
        for (i, (a, b)) in lo.iter().zip(&hi).enumerate() {
            if a.is_finite() && b.is_finite() && a >= b {
                problems.push(format!(
                    "{} is not below {} at dim {i} ({a} >= {b}): q01 < q99 in every dim",
                    named("q01"),
                    named("q99")
                ));
            }
        }
    }
    if let Some(actions) = trace.get("actions")
        && actions.shape().last() != Some(&used)
    {
        problems.push(format!(
            "{}: shape {:?}, but action_dim_used = {used}: the reference actions hold one value per used dim",
            named("actions"),
            actions.shape()
        ));
    }
    if !problems.is_empty() {
        return Err(BadInput(anyhow::anyhow!(
            "{npz_rel}, the host trace's tensors, cannot drive the chain (nothing was run):\n  {}",
            problems.join("\n  ")
        ))
        .into());
    }
    Ok(())
}

/// The trace's tensors the chain reads, read once, under our names, after its JSON was held to
/// the recipe (`check_against_recipe`); its inputs checked (`check_tensors`).
pub fn read_under_our_names(
    model: &Model,
    host: &HostSection,
    root: &Path,
    files: &TraceFiles,
) -> Result<BTreeMap<String, Tensor>> {
    check_against_recipe(model, host, files)?;
    let npz_rel = xtask_base::project::rel(root, &files.npz);
    let trace = under_our_names(model, host, &npz_rel, read_npz(&files.npz)?)?;
    check_tensors(host, &npz_rel, &trace)?;
    Ok(trace)
}

/// The trace's tensors the chain reads, under our names. A tensor the recipe maps must be in
/// the file (naming it is a statement about the file, so its absence is an error naming both
/// names, the file and the recipe line); an unmapped one may be absent: a missing host input
/// is refused by the caller, a missing reference leaves its boundary ungated.
pub fn under_our_names(
    model: &Model,
    host: &HostSection,
    npz_rel: &str,
    mut file: BTreeMap<String, Tensor>,
) -> Result<BTreeMap<String, Tensor>> {
    let wanted = trace_keys()
        .map(|k| (k.to_string(), k, None))
        .chain((0..host.timesteps.len()).map(|i| (step_out_key(i), STEP_OUT, Some(i))));
    let mut out = BTreeMap::new();
    // The file's name → ours, for a file tensor two of our names map to.
    let mut moved: BTreeMap<String, String> = BTreeMap::new();
    let mut missing = Vec::new();
    for (ours, key, step) in wanted {
        let theirs = host.trace_key(key, step);
        let tensor = match file.remove(&theirs) {
            Some(t) => Some(t),
            None => moved.get(&theirs).and_then(|o| out.get(o)).cloned(),
        };
        match tensor {
            Some(t) => {
                moved.entry(theirs).or_insert_with(|| ours.clone());
                out.insert(ours, t);
            }
            None if host.trace_keys.contains_key(key) => missing.push(format!(
                "  `{theirs}`, which {} names for our `{ours}`",
                at_entry(
                    &model.recipe_path,
                    &model.recipe_text,
                    "host.trace_keys",
                    key
                )
            )),
            None => {}
        }
    }
    if !missing.is_empty() {
        let mut held: Vec<&str> = file
            .keys()
            .chain(moved.keys())
            .map(String::as_str)
            .collect();
        held.sort();
        bail!(
            "{npz_rel} has no tensor of the name the recipe maps to:\n{}\nthe file holds: {}",
            missing.join("\n"),
            held.join(", ")
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{ArrayD, IxDyn};

    fn model_with(tail: &str) -> (Model, HostSection) {
        let text = format!(
            "[model]\nname='m'\nfamily='molmoact2'\ncomponents=['v','l','a','s']\nseq_len=1\n\
             [target]\nqairt='2.47.0'\nsoc=77\nhtp_arch=73\n\
             [host]\ntrace='t.json'\nvision='v'\nllm_splits=['l']\naction_context='a'\n\
             action_step='s'\ntimesteps=[0.0, 0.5]\naction_dim_used=2\nnorm_mode='q01_q99'\n{tail}"
        );
        let file: crate::recipe::ModelFile =
            crate::recipe::parse_toml(Path::new("m.toml"), &text).unwrap();
        let host = file.host.clone().unwrap();
        let model = Model {
            file,
            components: Vec::new(),
            recipe_path: "recipes/m/model.toml".into(),
            recipe_text: text,
        };
        (model, host)
    }

    fn tensor(v: f32) -> Tensor {
        Tensor::F32(ArrayD::from_elem(IxDyn(&[1]), v))
    }

    fn file(names: &[&str]) -> BTreeMap<String, Tensor> {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.to_string(), tensor(i as f32)))
            .collect()
    }

    fn value(t: &Tensor) -> f32 {
        match t {
            Tensor::F32(a) => a[[0]],
            _ => unreachable!(),
        }
    }

    #[test]
    fn mapped_tensors_are_read_under_our_names() {
        let (model, host) =
            model_with("[host.trace_keys]\nq01 = 'lo'\n\"trajectory_step{i}_out\" = 'flow_{i}'\n");
        let got = under_our_names(
            &model,
            &host,
            "t.npz",
            file(&["lo", "q99", "flow_0", "flow_1", "extra"]),
        )
        .unwrap();
        let keys: Vec<&str> = got.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["q01", "q99", "trajectory_step0_out", "trajectory_step1_out"]
        );
        assert_eq!(value(&got["q01"]), 0.0);
        assert_eq!(value(&got["trajectory_step1_out"]), 3.0);
    }

    #[test]
    fn one_file_tensor_may_serve_two_of_our_names() {
        let (model, host) = model_with("[host.trace_keys]\nkeys = 'kv'\nvalues = 'kv'\n");
        let got = under_our_names(&model, &host, "t.npz", file(&["kv"])).unwrap();
        assert_eq!(value(&got["keys"]), value(&got["values"]));
    }

    #[test]
    fn a_missing_mapped_tensor_names_the_key_the_file_and_the_line() {
        let (model, host) =
            model_with("[host.trace_keys]\nq01 = 'lo'\n\"trajectory_step{i}_out\" = 'flow_{i}'\n");
        let err = under_our_names(&model, &host, "golden/m/t.npz", file(&["q01", "flow_0"]))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("golden/m/t.npz has no tensor of the name the recipe maps to:"),
            "{err}"
        );
        assert!(
            err.contains(
                "  `lo`, which recipes/m/model.toml:20: host.trace_keys.q01 names for our `q01`"
            ),
            "{err}"
        );
        assert!(
            err.contains("  `flow_1`, which recipes/m/model.toml:21: host.trace_keys.trajectory_step{i}_out names for our `trajectory_step1_out`"),
            "{err}"
        );
        assert!(err.ends_with("the file holds: flow_0, q01"), "{err}");
        // Unmapped and absent is not an error here (the caller decides).
        let (model, host) = model_with("");
        assert!(under_our_names(&model, &host, "t.npz", file(&[])).is_ok());
    }
}
