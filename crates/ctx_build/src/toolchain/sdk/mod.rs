//! The QAIRT SDK toolchain: Qualcomm's own command-line tools drive the same steps where the
//! SDK is installed (`QAIRT_SDK_ROOT` / `QNN_SDK_ROOT`). Argument vectors and config files are
//! pure functions of the recipe (printed by `--dry-run`, checked against expected files in
//! tests); running them checks exit status, a per-step timeout and the expected outputs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use xtask_recipe::htp_target::sdk_config::{BackendExtensions, BackendExtensionsConfig};

use xtask_onnx::tensor::DType;
use xtask_recipe::recipe::Component;

pub mod context_info;
pub mod env;
pub mod profile;
pub mod quantizer;
pub mod raw;
pub mod steps;
pub mod toolchain;

/// The tools' folder and libraries' folder for this host, under the SDK root.
pub const HOST: &str = "x86_64-linux-clang";

#[derive(Debug, Clone)]
pub struct Sdk {
    pub root: PathBuf,
    pub version: String,
}

impl Sdk {
    /// Finds the SDK from `QAIRT_SDK_ROOT` or `QNN_SDK_ROOT`; its version comes from `sdk.yaml`
    /// (`version: …`) or else from the root folder's name (`…/2.47.0.250…`).
    pub fn detect() -> Result<Sdk> {
        let root = ["QAIRT_SDK_ROOT", "QNN_SDK_ROOT"]
            .iter()
            .find_map(|v| std::env::var_os(v).filter(|s| !s.is_empty()))
            .map(PathBuf::from)
            .context("--toolchain sdk needs the QAIRT SDK: set QAIRT_SDK_ROOT (or QNN_SDK_ROOT) to its root folder")?;
        if !root.is_dir() {
            bail!("QAIRT_SDK_ROOT={} is not a folder", root.display());
        }
        // Absolute: the tools run from the project root with paths into the SDK in their
        // environment (see `env`).
        let root = std::path::absolute(&root)?;
        let from_yaml = std::fs::read_to_string(root.join("sdk.yaml"))
            .ok()
            .and_then(|t| {
                t.lines().find_map(|l| {
                    l.trim()
                        .strip_prefix("version:")
                        .map(|v| v.trim().trim_matches('"').to_string())
                })
            });
        let from_name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| n.split('.').count() >= 3 && n.starts_with(|c: char| c.is_ascii_digit()));
        let version = from_yaml.or(from_name).with_context(|| {
            format!(
                "cannot tell the SDK version of {} (no sdk.yaml `version:`)",
                root.display()
            )
        })?;
        Ok(Sdk { root, version })
    }

    /// Refuses an SDK whose version differs from the recipe's `qairt`, unless allowed.
    pub fn check_version(&self, wanted: &str, allow_other: bool) -> Result<()> {
        let same = self.version == wanted || self.version.starts_with(&format!("{wanted}."));
        if !same && !allow_other {
            bail!(
                "the QAIRT SDK at {} is {}, the recipe asks for {wanted}; pass --allow-sdk-version to use it anyway",
                self.root.display(),
                self.version
            );
        }
        Ok(())
    }

    pub fn lib(&self, name: &str) -> PathBuf {
        self.root.join("lib").join(HOST).join(name)
    }

    /// A tool from the SDK's `bin/<host>/`, else from PATH.
    pub fn tool(&self, name: &str) -> Result<PathBuf> {
        let in_sdk = self.root.join("bin").join(HOST).join(name);
        if in_sdk.is_file() {
            return Ok(in_sdk);
        }
        xtask_base::proc::on_path(name).with_context(|| {
            format!(
                "`{name}` is missing: not in {} nor on PATH",
                self.root.join("bin").join(HOST).display()
            )
        })
    }
}

/// Above this much external data the converter's ONNX simplification is skipped by default
/// (`--onnx_skip_simplification`): 2 GiB is protobuf's hard limit on one serialized message,
/// so an ONNX whose weights need external data beyond it cannot be simplified in memory as one
/// model (the simplifier re-serializes the graph); Qualcomm's own LLM flows pass the flag for
/// such multi-GB graphs (quic/efficient-transformers).
pub const SKIP_SIMPLIFICATION_ABOVE_BYTES: u64 = 2 << 30;

/// Whether the converter gets `--onnx_skip_simplification`: the recipe's
/// `[convert] onnx_skip_simplification` when set, else on when the ONNX's external data
/// exceeds [`SKIP_SIMPLIFICATION_ABOVE_BYTES`] (`None` = the size is not known yet: off).
pub fn skip_simplification(comp: &Component, external_data_bytes: Option<u64>) -> bool {
    comp.file
        .convert
        .onnx_skip_simplification
        .unwrap_or_else(|| external_data_bytes.is_some_and(|b| b > SKIP_SIMPLIFICATION_ABOVE_BYTES))
}

pub fn converter_args(
    comp: &Component,
    onnx: &Path,
    dlc: &Path,
    skip_simplify: bool,
) -> Vec<String> {
    let c = &comp.file.convert;
    let mut args = vec![
        "--input_network".into(),
        onnx.display().to_string(),
        "--output_path".into(),
        dlc.display().to_string(),
        "--float_bitwidth".into(),
        c.float_bitwidth.to_string(),
    ];
    if let Some(b) = c.float_bias_bitwidth {
        args.extend(["--float_bias_bitwidth".into(), b.to_string()]);
    }
    if c.preserve_io_datatype {
        args.push("--preserve_io_datatype".into());
        // int64 inputs are declared int32 at conversion, as Qualcomm's own conversion flows do
        // (the HTP has no int64 I/O path we could verify; `qnn-net-run`'s float-to-native
        // conversion has no INT_64 case): the host writes them as int32 files (see
        // `raw::input_bytes`, which refuses values beyond int32).
        for spec in comp.file.inputs.iter().filter(|s| s.dtype == DType::I64) {
            args.extend([
                "--source_model_input_datatype".into(),
                spec.name.get_ref().clone(),
                "int32".into(),
            ]);
        }
    }
    if skip_simplify {
        args.push("--onnx_skip_simplification".into());
    }
    args
}

/// Which side of `qnn-net-run` exchanges files in the tensors' native data types: with
/// `--preserve_io_datatype` at conversion, non-float32 inputs (int64, fp16, bool) must be
/// given as native files (`--use_native_input_files`) and non-float32 outputs are read as
/// native files (`--use_native_output_files`); otherwise every `.raw` file is float32.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NativeIo {
    pub inputs: bool,
    pub outputs: bool,
}

impl NativeIo {
    pub fn of(comp: &Component) -> NativeIo {
        let f = &comp.file;
        let non_f32 = |specs: &[xtask_recipe::recipe::TensorSpec]| {
            specs
                .iter()
                .any(|s| s.dtype != xtask_onnx::tensor::DType::F32)
        };
        let preserve = f.convert.preserve_io_datatype;
        NativeIo {
            inputs: preserve && non_f32(&f.inputs),
            outputs: preserve && non_f32(&f.outputs),
        }
    }

    pub fn flags(self) -> Vec<String> {
        let mut out = Vec::new();
        if self.inputs {
            out.push("--use_native_input_files".into());
        }
        if self.outputs {
            out.push("--use_native_output_files".into());
        }
        out
    }
}

pub fn net_run_args(
    sdk: &Sdk,
    backend_lib: &str,
    dlc: &Path,
    input_list: &Path,
    out_dir: &Path,
    native: NativeIo,
) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "--backend".into(),
        sdk.lib(backend_lib).display().to_string(),
        "--model".into(),
        sdk.lib("libQnnModelDlc.so").display().to_string(),
        "--dlc_path".into(),
        dlc.display().to_string(),
        "--input_list".into(),
        input_list.display().to_string(),
        "--output_dir".into(),
        out_dir.display().to_string(),
    ];
    args.extend(native.flags());
    args
}

pub fn context_generator_args(
    sdk: &Sdk,
    dlc: &Path,
    binary_file: &str,
    out_dir: &Path,
    config: &Path,
) -> Vec<String> {
    vec![
        "--backend".into(),
        sdk.lib("libQnnHtp.so").display().to_string(),
        "--model".into(),
        sdk.lib("libQnnModelDlc.so").display().to_string(),
        "--dlc_path".into(),
        dlc.display().to_string(),
        "--binary_file".into(),
        binary_file.into(),
        "--output_dir".into(),
        out_dir.display().to_string(),
        "--config_file".into(),
        config.display().to_string(),
    ]
}

/// The `--config_file` of qnn-context-binary-generator: points at the HTP extension and config.
pub fn backend_extensions_config(sdk: &Sdk, htp_config_path: &Path) -> BackendExtensionsConfig {
    BackendExtensionsConfig {
        backend_extensions: BackendExtensions {
            config_file_path: htp_config_path.display().to_string(),
            shared_library_path: sdk
                .lib("libQnnHtpNetRunExtensions.so")
                .display()
                .to_string(),
        },
    }
}

/// A step's timeout: `XTASK_SDK_TIMEOUT_SECS`, else one hour (large LLM splits take long).
pub fn step_timeout() -> Duration {
    std::env::var("XTASK_SDK_TIMEOUT_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_secs(3600), Duration::from_secs)
}

/// Runs one SDK tool in `cwd` with the SDK's environment ([`Sdk::env`]), keeping its output in
/// `log`; a failure shows the argv, the exit status, the tail of the output and the log; a hang
/// is stopped at the timeout.
pub fn run_tool(sdk: &Sdk, tool: &Path, args: &[String], cwd: &Path, log: &Path) -> Result<()> {
    let mut p = xtask_base::proc::Proc::new(tool)
        .args(args)
        .dir(cwd)
        .log(log)
        .timeout(step_timeout())
        .hint("set XTASK_SDK_TIMEOUT_SECS for longer steps; the tool's whole output is in the log");
    for (k, v) in sdk.env() {
        p = p.env(k, v);
    }
    p.run()?;
    Ok(())
}
