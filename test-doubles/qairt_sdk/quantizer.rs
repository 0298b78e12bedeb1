//! `qairt-quantizer`: a quantized DLC from a DLC of this double's `qairt-converter`, calibrated
//! on the `--input_list` samples, with the converter's `--quantization_overrides` kept.

use super::*;

/// The helper that computes the QDQ graph (ONNX Runtime's QNN quantization tooling).
const HELPER: &str = include_str!("quantizer.py");
/// The Python environment the double runs its helper in: the project's quantization
/// environment (`target/quant-venv`, which `cargo xtask build-ctx` creates for the quantize step).
const PYTHON: &str = "target/quant-venv/bin/python";

pub(crate) fn quantize(rt: &Runtime, a: &BTreeMap<String, String>) -> Result<()> {
    let input = need(a, "--input_dlc")?;
    let out = need(a, "--output_dlc")?;
    // qairt-quantizer's defaults (the SDK's help): 8-bit weights, activations and bias.
    let bits = |flag: &str, allowed: &[u32]| -> Result<u32> {
        let v: u32 = a.get(flag).map_or(Ok(8), |v| {
            v.parse()
                .with_context(|| format!("{flag} {v}: not a number"))
        })?;
        if !allowed.contains(&v) {
            bail!("{flag} {v}: supported values are {allowed:?}");
        }
        Ok(v)
    };
    let weights = bits("--weights_bitwidth", &[4, 8])?;
    let act = bits("--act_bitwidth", &[8, 16])?;
    bits("--bias_bitwidth", &[8, 32])?;
    let calibration = a
        .get("--act_quantizer_calibration")
        .map_or("min-max", String::as_str);
    match calibration {
        "min-max" | "entropy" | "percentile" => {}
        "sqnr" | "mse" => bail!(
            "--act_quantizer_calibration {calibration} is a real choice the test double does not reproduce"
        ),
        other => bail!(
            "argument --act_quantizer_calibration: invalid choice: '{other}' (choose from 'min-max', 'sqnr', 'entropy', 'mse', 'percentile')"
        ),
    }
    let list = need(a, "--input_list")
        .context("the test double calibrates every tensor: --input_list is required")?;
    let (graph, flags, overrides) = read_dlc_with_overrides(input)?;
    if flags.get("quantizer").is_some() {
        bail!("{input} is already quantized");
    }
    let tmp = tempfile::tempdir()?;
    let graph_path = tmp.path().join("graph.onnx");
    std::fs::write(&graph_path, &graph)?;
    let samples = calibration_samples(
        list,
        &flags,
        a.contains_key("--use_native_input_files"),
        tmp.path(),
    )?;
    let qdq_path = tmp.path().join("qdq.onnx");
    let job = serde_json::json!({
        "graph": graph_path,
        "out": qdq_path,
        "samples": samples,
        "weights_bitwidth": weights,
        "act_bitwidth": act,
        "per_channel": a.contains_key("--use_per_channel_quantization"),
        "calibration": calibration,
        "overrides": overrides,
    });
    run_helper(tmp.path(), &job)?;
    let qdq = std::fs::read(&qdq_path)?;
    // The quantized DLC's I/O: float where `--preserve_io_datatype` keeps the source model's
    // types, the activations' fixed-point type otherwise.
    let preserve = a.contains_key("--preserve_io_datatype");
    let fixed = if act == 16 {
        "QNN_DATATYPE_UFIXED_POINT_16"
    } else {
        "QNN_DATATYPE_UFIXED_POINT_8"
    };
    let mut flags = flags;
    for key in ["graphInputs", "graphOutputs"] {
        for t in flags[key].as_array_mut().into_iter().flatten() {
            if !preserve && t["info"]["dataType"] == "QNN_DATATYPE_FLOAT_32" {
                t["info"]["dataType"] = fixed.into();
            }
        }
    }
    flags["quantizer"] = serde_json::json!({
        "weights_bitwidth": weights,
        "act_bitwidth": act,
        "bias_bitwidth": a.get("--bias_bitwidth"),
        "per_channel": a.contains_key("--use_per_channel_quantization"),
        "act_quantizer_calibration": calibration,
        "preserve_io_datatype": preserve,
        "samples": samples.len(),
    });
    // What it did, on stdout as the real tool logs its progress (the wording is the double's).
    println!(
        "[INFO] qairt-quantizer (test double): {} calibration sample(s), weights {weights}-bit, activations {act}-bit, {}, {} activation override(s) from the converter",
        samples.len(),
        if a.contains_key("--use_per_channel_quantization") {
            "per channel"
        } else {
            "per tensor"
        },
        overrides["activation_encodings"]
            .as_object()
            .map_or(0, |m| m.len()),
    );
    let (dlc, _) = rt.dump_dlc(&qdq_path, &tmp.path().join("ir"), true)?;
    write_dlc_members(&dlc, &qdq, &flags, None)?;
    std::fs::copy(&dlc, out)?;
    Ok(())
}

/// Every line of the input list as one sample: `name:=path` for every graph input, each file
/// float32 (or the DLC's type with `--use_native_input_files`) of the input's byte count.
/// The values are written as float64 for the helper, which casts them to the graph's types.
fn calibration_samples(
    list: &str,
    flags: &serde_json::Value,
    native: bool,
    tmp: &Path,
) -> Result<Vec<BTreeMap<String, serde_json::Value>>> {
    let inputs = dlc_io(flags, "graphInputs");
    let text = std::fs::read_to_string(list)
        .with_context(|| format!("cannot read the input list {list}"))?;
    let mut samples = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let mut sample = BTreeMap::new();
        for entry in line.split_whitespace() {
            let (name, path) = entry
                .split_once(":=")
                .context("input list entries are name:=path")?;
            let (qnn, dims) = inputs
                .get(name)
                .with_context(|| format!("the graph has no input {name}"))?;
            let file_type = if native {
                qnn.as_str()
            } else {
                "QNN_DATATYPE_FLOAT_32"
            };
            let bytes = std::fs::read(path)
                .with_context(|| format!("cannot read the input file {path}"))?;
            let values = decode(&bytes, file_type)?;
            let count: usize = dims.iter().product();
            if values.len() != count {
                bail!(
                    "{path}: {} bytes, {} values of {file_type}; input {name} has {count}",
                    bytes.len(),
                    values.len()
                );
            }
            let f64_path = tmp.join(format!("sample{}-{}.f64", samples.len(), sample.len()));
            let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            std::fs::write(&f64_path, raw)?;
            sample.insert(
                name.to_string(),
                serde_json::json!([f64_path, "float64", dims]),
            );
        }
        if let Some(missing) = inputs.keys().find(|n| !sample.contains_key(*n)) {
            bail!(
                "input list line {}: no file for input {missing}",
                samples.len() + 1
            );
        }
        samples.push(sample);
    }
    if samples.is_empty() {
        bail!("the input list {list} names no sample");
    }
    Ok(samples)
}

/// Runs the helper in the project's quantization environment.
fn run_helper(tmp: &Path, job: &serde_json::Value) -> Result<()> {
    let python = std::env::current_dir()?.join(PYTHON);
    if !python.is_file() {
        bail!(
            "the test double's quantizer needs the project's quantization environment ({PYTHON}; `cargo xtask doctor --quantizer` creates it)"
        );
    }
    let script = tmp.join("quantizer.py");
    std::fs::write(&script, HELPER)?;
    let job_path = tmp.join("job.json");
    std::fs::write(&job_path, serde_json::to_vec(job)?)?;
    let out = std::process::Command::new(&python)
        .arg(&script)
        .arg(&job_path)
        .output()
        .with_context(|| format!("cannot run {}", python.display()))?;
    if !out.status.success() {
        bail!(
            "quantization failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
