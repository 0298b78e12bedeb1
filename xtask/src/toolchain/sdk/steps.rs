//! The three build steps run by the QAIRT SDK's tools: `qairt-converter` (convert),
//! `qnn-net-run` on `libQnnCpu.so` (cpu parity, float32 `.raw` files and an input list), and
//! `qnn-context-binary-generator` + `qnn-context-binary-utility` (context binary and the
//! EPContext wrapper that lets ONNX Runtime load it). Outputs are written in a staging folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::{
    Sdk, backend_extensions_config, context_generator_args, converter_args, net_run_args, run_tool,
    sanitize,
};
use crate::onnx::writer::{WrapperTensor, epcontext_wrapper};
use crate::recipe::Component;
use crate::target::soc::Soc;
use crate::tensor::{DType, Tensor};

/// What every SDK step works on: the SDK, the project, the component, its staging folder.
pub struct Job<'a> {
    pub sdk: &'a Sdk,
    pub root: &'a Path,
    pub model: &'a str,
    pub comp: &'a Component,
    pub staging: &'a Path,
}

impl Job<'_> {
    /// Runs one SDK tool for this component, its output kept in the step's log.
    fn run(&self, tool: &str, args: &[String], step: &str) -> Result<()> {
        run_tool(
            &self.sdk.tool(tool)?,
            args,
            self.root,
            &log_path(self.root, self.model, self.comp.name(), step),
        )
    }
}

/// Where a step keeps the tools' output (`reports/<model>/logs/<component>-<step>.log`).
pub fn log_path(root: &Path, model: &str, comp: &str, step: &str) -> PathBuf {
    root.join("reports")
        .join(model)
        .join("logs")
        .join(format!("{comp}-{step}.log"))
}

/// ONNX → DLC with `qairt-converter`; returns the staged DLC.
pub fn convert(job: &Job<'_>) -> Result<PathBuf> {
    let dlc = job.staging.join(format!("{}.dlc", job.comp.name()));
    let args = converter_args(
        job.comp,
        &job.root.join(&job.comp.file.component.onnx),
        &dlc,
    );
    job.run("qairt-converter", &args, "convert")?;
    if !dlc.is_file() {
        bail!("qairt-converter exited 0 but wrote no {}", dlc.display());
    }
    Ok(dlc)
}

/// The golden inputs through `qnn-net-run` on the CPU backend; outputs read back by name.
pub fn cpu_run(
    job: &Job<'_>,
    dlc: &Path,
    inputs: &BTreeMap<String, Tensor>,
) -> Result<BTreeMap<String, Tensor>> {
    let list = write_inputs(job, inputs)?;
    let out_dir = job.staging.join("output");
    let args = net_run_args(job.sdk, "libQnnCpu.so", dlc, &list, &out_dir);
    job.run("qnn-net-run", &args, "cpu-parity")?;
    read_outputs(job, &out_dir)
}

/// The golden inputs through `qnn-net-run --retrieve_context` on the HTP backend, profiled
/// (`--profiling_level basic`); returns the outputs and the execute time `qnn-profile-viewer`
/// reports, in microseconds.
pub fn htp_run(
    job: &Job<'_>,
    bin: &Path,
    inputs: &BTreeMap<String, Tensor>,
) -> Result<(BTreeMap<String, Tensor>, Option<f64>)> {
    let list = write_inputs(job, inputs)?;
    let out_dir = job.staging.join("output");
    let args: Vec<String> = vec![
        "--retrieve_context".into(),
        bin.display().to_string(),
        "--backend".into(),
        job.sdk.lib("libQnnHtp.so").display().to_string(),
        "--input_list".into(),
        list.display().to_string(),
        "--output_dir".into(),
        out_dir.display().to_string(),
        "--profiling_level".into(),
        "basic".into(),
    ];
    job.run("qnn-net-run", &args, "htp-run")?;
    let outputs = read_outputs(job, &out_dir)?;
    let log = out_dir.join("qnn-profiling-data_0.log");
    if !log.is_file() {
        return Ok((outputs, None));
    }
    let csv = out_dir.join("profile.csv");
    let args = vec![
        "--input_log".to_string(),
        log.display().to_string(),
        "--output".into(),
        csv.display().to_string(),
    ];
    job.run("qnn-profile-viewer", &args, "profile")?;
    Ok((
        outputs,
        execute_us(&std::fs::read_to_string(&csv).unwrap_or_default()),
    ))
}

/// The execute time in a profile-viewer CSV: the first row naming "execute" with a number in
/// µs (or ms, converted).
pub fn execute_us(csv: &str) -> Option<f64> {
    csv.lines()
        .filter(|l| l.to_ascii_lowercase().contains("execute"))
        .find_map(|l| {
            let cells: Vec<&str> = l.split(',').map(str::trim).collect();
            let value = cells.iter().find_map(|c| c.parse::<f64>().ok())?;
            let ms = cells.iter().any(|c| c.eq_ignore_ascii_case("ms"));
            Some(if ms { value * 1e3 } else { value })
        })
}

/// Golden inputs as float32 `.raw` files plus the input list (`name:=path`, one inference).
fn write_inputs(job: &Job<'_>, inputs: &BTreeMap<String, Tensor>) -> Result<PathBuf> {
    let mut entries = Vec::new();
    for spec in &job.comp.file.inputs {
        let name = spec.name.get_ref();
        let t = inputs
            .get(name)
            .with_context(|| format!("no golden input `{name}`"))?;
        let path = job.staging.join(format!("{}.raw", sanitize(name)));
        let floats: Vec<u8> = t
            .to_f64_vec()
            .iter()
            .flat_map(|v| (*v as f32).to_le_bytes())
            .collect();
        std::fs::write(&path, floats)?;
        entries.push(format!("{name}:={}", path.display()));
    }
    let list = job.staging.join("input_list.txt");
    std::fs::write(&list, entries.join(" ") + "\n")?;
    Ok(list)
}

/// `Result_0/<name>.raw` of every declared output, reshaped by the recipe.
fn read_outputs(job: &Job<'_>, out_dir: &Path) -> Result<BTreeMap<String, Tensor>> {
    let mut outputs = BTreeMap::new();
    for spec in &job.comp.file.outputs {
        let name = spec.name.get_ref();
        let path = out_dir
            .join("Result_0")
            .join(format!("{}.raw", sanitize(name)));
        let bytes = std::fs::read(&path)
            .with_context(|| format!("qnn-net-run wrote no output {}", path.display()))?;
        let n: usize = spec.shape.iter().product();
        if bytes.len() != n * 4 {
            bail!(
                "{}: {} bytes, expected {} float32 values for {:?}",
                path.display(),
                bytes.len(),
                n,
                spec.shape
            );
        }
        let values: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        outputs.insert(
            name.clone(),
            Tensor::F32(ndarray::ArrayD::from_shape_vec(spec.shape.clone(), values)?),
        );
    }
    Ok(outputs)
}

/// The configs a context build writes: (file name, JSON).
pub fn context_configs(
    sdk: &Sdk,
    comp: &Component,
    soc: &Soc,
    staging: &Path,
) -> Vec<(PathBuf, serde_json::Value)> {
    let htp = staging.join(format!("{}_htp_config.json", comp.name()));
    let ext = staging.join(format!("{}_config.json", comp.name()));
    vec![
        (
            htp.clone(),
            crate::target::HtpTarget::from_recipe(soc, &comp.file.context).sdk_config(),
        ),
        (ext, backend_extensions_config(sdk, &htp)),
    ]
}

/// What the context step produced: the staged binary and wrapper, the QNN graph name, the SDK build.
pub struct SdkContext {
    pub bin: PathBuf,
    pub wrapper: PathBuf,
    pub graph_name: String,
    pub build_id: String,
}

pub fn context(
    job: &Job<'_>,
    soc: &Soc,
    dlc: &Path,
    stem: &str,
    bin_name: &str,
) -> Result<SdkContext> {
    let Job {
        sdk, comp, staging, ..
    } = *job;
    let configs = context_configs(sdk, comp, soc, staging);
    for (path, json) in &configs {
        std::fs::write(path, serde_json::to_vec_pretty(json)?)?;
    }
    let bin_stem = bin_name.trim_end_matches(".bin");
    let args = context_generator_args(sdk, dlc, bin_stem, staging, &configs[1].0);
    job.run("qnn-context-binary-generator", &args, "context")?;
    let bin = staging.join(bin_name);
    if std::fs::metadata(&bin).map(|m| m.len()).unwrap_or(0) == 0 {
        bail!(
            "qnn-context-binary-generator exited 0 but wrote no {}",
            bin.display()
        );
    }
    let json_path = staging.join(format!("{bin_stem}.json"));
    let args = vec![
        "--context_binary".to_string(),
        bin.display().to_string(),
        "--json_file".into(),
        json_path.display().to_string(),
    ];
    job.run("qnn-context-binary-utility", &args, "context-utility")?;
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json_path).with_context(|| {
            format!(
                "qnn-context-binary-utility wrote no {}",
                json_path.display()
            )
        })?)?;
    let graph = &info["info"]["graphs"][0]["info"];
    let graph_name = graph["graphName"]
        .as_str()
        .context("the context JSON names no graph")?
        .to_string();
    let build_id = info["info"]["buildId"]
        .as_str()
        .unwrap_or("unknown")
        .to_string();
    let tensors = |key: &str| -> Result<Vec<WrapperTensor>> {
        graph[key]
            .as_array()
            .with_context(|| format!("the context JSON has no {key}"))?
            .iter()
            .map(wrapper_tensor)
            .collect()
    };
    let wrapper_bytes = epcontext_wrapper(
        &graph_name,
        bin_name,
        &build_id,
        &tensors("graphInputs")?,
        &tensors("graphOutputs")?,
    );
    let wrapper = staging.join(format!("{stem}.onnx"));
    std::fs::write(&wrapper, wrapper_bytes)?;
    Ok(SdkContext {
        bin,
        wrapper,
        graph_name,
        build_id,
    })
}

fn wrapper_tensor(t: &serde_json::Value) -> Result<WrapperTensor> {
    let info = &t["info"];
    let elem_type = match info["dataType"].as_str() {
        Some("QNN_DATATYPE_FLOAT_32") => 1,
        Some("QNN_DATATYPE_FLOAT_16") => 10,
        Some("QNN_DATATYPE_INT_64") => 7,
        Some("QNN_DATATYPE_BOOL_8") => 9,
        other => {
            bail!("unsupported context I/O data type {other:?} (quantized I/O is not supported)")
        }
    };
    Ok(WrapperTensor {
        name: info["name"]
            .as_str()
            .context("tensor without a name")?
            .to_string(),
        dims: info["dimensions"]
            .as_array()
            .context("tensor without dimensions")?
            .iter()
            .filter_map(|d| d.as_u64().map(|d| d as usize))
            .collect(),
        elem_type,
    })
}

/// The QNN data type name of a recipe dtype (for the test double's context JSON).
pub fn qnn_data_type(d: Option<DType>) -> &'static str {
    match d {
        Some(DType::F16) => "QNN_DATATYPE_FLOAT_16",
        Some(DType::I64) => "QNN_DATATYPE_INT_64",
        Some(DType::Bool) => "QNN_DATATYPE_BOOL_8",
        _ => "QNN_DATATYPE_FLOAT_32",
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn execute_time_from_a_profile_csv() {
        assert_eq!(
            super::execute_us("Message,Time,Unit\nLoad,10,us\nExecute,1234,us\n"),
            Some(1234.0)
        );
        assert_eq!(super::execute_us("Execute,2.5,ms"), Some(2500.0));
        assert_eq!(super::execute_us("nothing here"), None);
    }
}
