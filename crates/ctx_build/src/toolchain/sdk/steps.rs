//! The three build steps run by the QAIRT SDK's tools: `qairt-converter` (convert),
//! `qnn-net-run` on `libQnnCpu.so` (cpu parity: `.raw` files and an input list), and
//! `qnn-context-binary-generator` + `qnn-context-binary-utility` (context binary and the
//! EPContext wrapper that lets ONNX Runtime load it). Outputs are written in a staging folder.
//!
//! `qnn-net-run` files: the input list holds one line per inference of space-separated
//! `name:=path` pairs; outputs are `Result_<i>/<raw tensor name>.raw` (a `/` in a name makes
//! subfolders), `<raw tensor name>_native.raw` for a native output that is not float32. Files
//! are float32 unless native I/O is asked for ([`NativeIo`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::profile::ExecuteStats;
use super::{
    NativeIo, Sdk, backend_extensions_config, context_generator_args, converter_args, net_run_args,
    run_tool, skip_simplification,
};
use xtask_onnx::onnx::writer::epcontext_wrapper;
use xtask_onnx::tensor::{DType, Tensor};
use xtask_recipe::htp_target::HtpTarget;
use xtask_recipe::htp_target::sdk_config::SdkConfigFile;
use xtask_recipe::recipe::Component;

pub use super::raw::{from_raw, input_bytes, output_file, raw_bytes};

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
    pub(super) fn run(&self, tool: &str, args: &[String], step: &str) -> Result<()> {
        run_tool(
            self.sdk,
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

/// `onnx` (the recipe's, or its rewritten copy: its external data is the same) → DLC with
/// `qairt-converter`; returns the staged DLC. With `overrides` (a quantized component's
/// encodings) the DLC is the quantizer's input, `<component>.float.dlc`.
pub fn convert(job: &Job<'_>, onnx: &Path, overrides: Option<&Path>) -> Result<PathBuf> {
    let dlc = match overrides {
        Some(_) => float_dlc(job.staging, job.comp),
        None => job.staging.join(format!("{}.dlc", job.comp.name())),
    };
    let onnx_rel = &job.comp.file.component.onnx;
    let mut external_bytes = 0;
    for ext in crate::artifacts::external_data(job.root, onnx_rel)? {
        external_bytes += std::fs::metadata(job.root.join(&ext))
            .with_context(|| format!("external data {} of {}", ext.display(), onnx_rel.display()))?
            .len();
    }
    let mut args = converter_args(
        job.comp,
        onnx,
        &dlc,
        skip_simplification(job.comp, Some(external_bytes)),
    );
    if let Some(o) = overrides {
        args.extend(["--quantization_overrides".into(), o.display().to_string()]);
    }
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
    let native = NativeIo::of(job.comp);
    let list = write_inputs(job, inputs, 1, native)?;
    let out_dir = job.staging.join("output");
    let args = net_run_args(job.sdk, "libQnnCpu.so", dlc, &list, &out_dir, native);
    job.run("qnn-net-run", &args, "cpu-parity")?;
    read_outputs(job, &out_dir, native)
}

/// The golden inputs through `qnn-net-run --retrieve_context` on the HTP backend, `iters`
/// inferences in one call (an input list of `iters` lines), profiled (`--profiling_level
/// basic`); returns the first inference's outputs and the distribution of the execute times
/// `qnn-profile-viewer` reports (`None` when no profile was written).
pub fn htp_run(
    job: &Job<'_>,
    bin: &Path,
    inputs: &BTreeMap<String, Tensor>,
    iters: usize,
) -> Result<(BTreeMap<String, Tensor>, Option<ExecuteStats>)> {
    let native = NativeIo::of(job.comp);
    let list = write_inputs(job, inputs, iters.max(1), native)?;
    let out_dir = job.staging.join("output");
    let mut args: Vec<String> = vec![
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
    args.extend(native.flags());
    job.run("qnn-net-run", &args, "htp-run")?;
    let outputs = read_outputs(job, &out_dir, native)?;
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
    let text = std::fs::read_to_string(&csv)
        .with_context(|| format!("qnn-profile-viewer wrote no {}", csv.display()))?;
    let stats = super::profile::execute_stats(&text)
        .with_context(|| format!("reading the profile {}", csv.display()))?;
    if let Some(s) = &stats
        && s.samples != iters.max(1)
    {
        bail!(
            "{}: {} {} EXECUTE rows for {} inferences",
            csv.display(),
            s.samples,
            s.timing_source,
            iters.max(1)
        );
    }
    Ok((outputs, stats))
}

/// Golden inputs as `.raw` files (native dtype or float32, see [`NativeIo`]) plus the input
/// list: `iters` identical lines of `name:=path` pairs, one line per inference.
fn write_inputs(
    job: &Job<'_>,
    inputs: &BTreeMap<String, Tensor>,
    iters: usize,
    native: NativeIo,
) -> Result<PathBuf> {
    let line = write_sample(job.comp, inputs, job.staging, "input", native.inputs)?;
    let list = job.staging.join("input_list.txt");
    std::fs::write(&list, format!("{line}\n").repeat(iters))?;
    Ok(list)
}

/// One sample's `.raw` files in `dir` (`<prefix>_<i>.raw` per recipe input, native or
/// float32) and its input-list line of `name:=path` pairs in the recipe's order.
pub(super) fn write_sample(
    comp: &Component,
    sample: &BTreeMap<String, Tensor>,
    dir: &Path,
    prefix: &str,
    native_inputs: bool,
) -> Result<String> {
    let mut entries = Vec::new();
    for (i, spec) in comp.file.inputs.iter().enumerate() {
        let name = spec.name.get_ref();
        let t = sample
            .get(name)
            .with_context(|| format!("no input `{name}` in the sample"))?;
        let path = dir.join(format!("{prefix}_{i}.raw"));
        std::fs::write(&path, input_bytes(name, t, native_inputs)?)?;
        entries.push(format!("{name}:={}", path.display()));
    }
    Ok(entries.join(" "))
}

/// `Result_0/<raw name>.raw` (or `_native.raw`, see [`output_file`]) of every declared output,
/// shaped and typed by the recipe.
fn read_outputs(
    job: &Job<'_>,
    out_dir: &Path,
    native: NativeIo,
) -> Result<BTreeMap<String, Tensor>> {
    read_result_outputs(job.comp, out_dir, native)
}

/// `Result_0/<raw name>.raw` under `out_dir` for every declared output of `comp` (also used for
/// outputs copied back from a device, see `xtask_chain::device`).
pub fn read_result_outputs(
    comp: &Component,
    out_dir: &Path,
    native: NativeIo,
) -> Result<BTreeMap<String, Tensor>> {
    let mut outputs = BTreeMap::new();
    let result = out_dir.join("Result_0");
    for spec in &comp.file.outputs {
        let name = spec.name.get_ref();
        let path = output_file(&result, name, spec.dtype, native.outputs)?;
        let bytes = std::fs::read(&path)?;
        let t = from_raw(&bytes, spec.dtype, &spec.shape, native.outputs)
            .with_context(|| format!("{}", path.display()))?;
        outputs.insert(name.clone(), t);
    }
    Ok(outputs)
}

/// The configs a context build writes: (file name, JSON).
pub fn context_configs(
    sdk: &Sdk,
    comp: &Component,
    target: &HtpTarget,
    staging: &Path,
) -> Vec<(PathBuf, SdkConfigFile)> {
    let htp = staging.join(format!("{}_htp_config.json", comp.name()));
    let ext = staging.join(format!("{}_config.json", comp.name()));
    vec![
        (htp.clone(), SdkConfigFile::Htp(target.sdk_config())),
        (
            ext,
            SdkConfigFile::Extensions(backend_extensions_config(sdk, &htp)),
        ),
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
    target: &HtpTarget,
    dlc: &Path,
    stem: &str,
    bin_name: &str,
) -> Result<SdkContext> {
    let Job {
        sdk, comp, staging, ..
    } = *job;
    let configs = context_configs(sdk, comp, target, staging);
    for (path, config) in &configs {
        std::fs::write(path, config.to_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
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
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json_path).with_context(|| {
            format!(
                "qnn-context-binary-utility wrote no {}",
                json_path.display()
            )
        })?)?;
    let info = super::context_info::parse(&json)
        .with_context(|| format!("reading {}", json_path.display()))?;
    let wrapper_bytes = epcontext_wrapper(
        &info.graph_name,
        bin_name,
        &info.build_id,
        &info.inputs,
        &info.outputs,
    );
    let wrapper = staging.join(format!("{stem}.onnx"));
    std::fs::write(&wrapper, wrapper_bytes)?;
    Ok(SdkContext {
        bin,
        wrapper,
        graph_name: info.graph_name,
        build_id: info.build_id,
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

/// The staged float DLC the converter writes for a quantized component (the quantizer's input).
pub fn float_dlc(staging: &Path, comp: &Component) -> PathBuf {
    staging.join(format!("{}.float.dlc", comp.name()))
}
