//! The host trace of one reference chain run (`[host] trace`: a JSON whose `npz` key names
//! the tensors beside it), and its tensors under *our* names: `[host.trace_keys]` maps each of
//! our names to the file's, so a trace written by another exporter is used as it is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::recipe::host::{STEP_OUT, trace_keys};
use crate::recipe::validate::at_entry;
use crate::recipe::{HostSection, Model};
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
    Ok(TraceFiles { json, npz })
}

/// The trace's tensors the chain reads, read once, under our names.
pub fn read_under_our_names(
    model: &Model,
    host: &HostSection,
    root: &Path,
    files: &TraceFiles,
) -> Result<BTreeMap<String, Tensor>> {
    let npz_rel = xtask_base::project::rel(root, &files.npz);
    under_our_names(model, host, &npz_rel, read_npz(&files.npz)?)
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
            "[model]\nname='m'\nfamily='molmoact2'\ncomponents=[]\nseq_len=1\n\
             [target]\nqairt='2.47.0'\nsoc=77\nhtp_arch=73\n\
             [host]\ntrace='t.json'\nvision='c'\nllm_splits=['c']\naction_context='c'\n\
             action_step='c'\ntimesteps=[0.0, 0.5]\naction_dim_used=2\nnorm_mode='q01_q99'\n{tail}"
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
