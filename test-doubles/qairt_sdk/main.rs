//! TEST DOUBLE of the QAIRT SDK's tools (`qairt-converter`, `qairt-quantizer`, `qnn-net-run`,
//! `qnn-context-binary-generator`, `qnn-context-binary-utility`, `qnn-profile-viewer`), used
//! only by the tests through the scripts in `test-doubles/qairt-sdk-root/bin/`. The
//! real SDK cannot be installed here; this binary stands in for it and computes real numbers
//! with the embedded QNN 2.47 runtime (ONNX Runtime's QNN EP, CPU and emulated HTP backends).
//!
//! Real behaviours it reproduces, and where they come from (see
//! the team notes `real-tool-formats.md`; [C] = the tool's docs or source, [O] = observed):
//! - Strict command lines: an unknown flag is an error (exit 2), a missing required one exits 1.
//! - `qairt-converter` is a Python script importing `qti.aisw.converters…` at its top (2.25
//!   mirror `qdsp6sw/qualcomm-ai-engine-direct-sdk`, `bin/arm64x-windows-msvc/qairt-converter`
//!   [C]); those modules live in `$SDK/lib/python` and load `$SDK/lib/x86_64-linux-clang`,
//!   put on `PYTHONPATH` / `LD_LIBRARY_PATH` by the SDK's `bin/envsetup.sh` [C], which also
//!   exports `QAIRT_SDK_ROOT` [C] (the Python tools' failure without it is the double's
//!   assumption [?]: exit 1 naming the variable). Without them
//!   (even for `--help`) it exits 1 with Python's traceback (`No module named 'qti'`); the
//!   wording of the library-path failure is illustrative.
//! - `qairt-converter --float_bitwidth 16` stores fp16 weights: every float32 initializer of
//!   the graph the DLC carries is rounded to fp16 (and back, so the CPU backend runs it);
//!   `--preserve_io_datatype` keeps int64/fp16/bool I/O in their types; without it int64 I/O
//!   becomes int32 [?: the double's assumption] (Qualcomm SDK docs, doc 80-63442-2 [C]).
//!   `--source_model_input_datatype NAME DTYPE` (repeatable, converters.html [C]) gives input
//!   NAME the type DTYPE in the DLC (`int32`, `float32`, `bool` reproduced).
//!   `--onnx_skip_simplification` is accepted (quic/efficient-transformers passes it [O]).
//! - `qairt-converter --quantization_overrides FILE` reads AIMET encodings
//!   (`activation_encodings` / `param_encodings`: tensor → list of `{bitwidth, min, max, scale,
//!   offset, …}`, the QAIRT Quantization Specification, doc 80-63442-10 "applyencodings" [C]); a
//!   file that is not that is an error. `qairt-quantizer --input_dlc D --output_dlc Q
//!   --input_list L` quantizes the tensors without an encoding ("fill in the gaps") calibrated on
//!   L's samples, one line per sample of `name:=path` float32 raws (`--use_native_input_files`:
//!   the DLC's types), qairt_quantizer.html [C]. `--weights_bitwidth` {4, 8}, `--act_bitwidth`
//!   {8, 16}, `--bias_bitwidth` {8, 32} (defaults 8), `--use_per_channel_quantization`,
//!   `--act_quantizer_calibration` {min-max, sqnr, entropy, mse, percentile} (sqnr and mse
//!   refused as not reproduced), `--preserve_io_datatype` (without it the float I/O becomes
//!   `UFIXED_POINT_<act bits>`); the flag set is the one public scripts pass (e.g.
//!   `--weights_bitwidth 8 --act_bitwidth 16 --bias_bitwidth 32 --use_per_channel_quantization
//!   --preserve_io_datatype` [O]). Which numbers the real quantizer picks is not reproduced:
//!   the double computes the QDQ graph with ONNX Runtime's QNN quantization tooling in the
//!   project's `target/quant-venv`, activations' ranges fixed by the overrides, parameters
//!   calibrated from their data at the overrides' bit widths (`quantizer.py`).
//! - `qnn-net-run` (Qualcomm docs and sample apps [C]): the input list has one line per
//!   inference of space-separated `name:=path`; outputs go to
//!   `<output_dir>/Result_<i>/<raw tensor name>.raw`, a `/` in a name making subfolders.
//!   Files are float32 unless native I/O is asked for. An input whose DLC type is int64 or
//!   fp16 (with `--preserve_io_datatype`) must come as a native file with
//!   `--use_native_input_files` or `--native_input_tensor_names`, or the run fails; a float file
//!   for a bool or int32 input is converted by the tool itself (the SampleApp's float-to-native
//!   conversion covers them, not INT_64 / FLOAT_16 [C: `IOTensor.cpp`, 2.25]). Every file's
//!   byte count must match its tensor. Outputs are native with `--use_native_output_files` or
//!   `--output_data_type native_only`: a native output that is not float32 is written as
//!   `Result_<i>/<name>_native.raw`, float32 outputs as `<name>.raw` (SampleApp `IOTensor.cpp`
//!   `writeOutputTensors` [C]). `--profiling_level basic|detailed` writes
//!   `<output_dir>/qnn-profiling-data_0.log`.
//! - `qnn-profile-viewer --output x.csv`: preamble lines, the header `Msg Timestamp, Message,
//!   Time, Unit of Measurement, Timing Source, Event Level, Event Identifier` (the strings in the
//!   real viewer binary, team notes [O, 2.47 usage]), one row per event with a timestamp first;
//!   levels `ROOT` and `SUB-EVENT`; messages `INIT`, `COMPOSE GRAPHS`, `FINALIZE`, `EXECUTE`,
//!   `DE-INIT` (hyphenated) and `EXECUTE IPS` (unit `INF/SEC`); units US/BYTES/CYCLES/COUNT
//!   [O: the binary's strings]. Per inference, as a public QAIRT 2.47 run prints them
//!   [O: `qnn-profile-viewer` CSV walk-through in a public tiny-LLM QAIRT 2.47 tutorial]: one
//!   ROOT EXECUTE row `NETRUN` (US, `Graph 0: <graph>`), and `BACKEND` ROOT EXECUTE rows
//!   `QNN accelerator (execute) time` (US), `Accelerator (execute) time (cycles)` (CYCLES),
//!   `QNN (execute) time` (US), `Number of HVX threads used` (COUNT), then BACKEND SUB-EVENT
//!   CYCLES rows per op (`<op>:OpId_<n> (cycles)`). ASSUMPTIONS: the identifiers of the INIT and
//!   DE-INIT rows (the double's own words) and one EXECUTE IPS row after the last inference.
//!   (ONNX Runtime's QNN profiler writes every row as BACKEND and no NETRUN rows: not a source.)
//! - `qnn-context-binary-utility --json_file` writes the legacy layout `info.buildId`,
//!   `info.graphs[].info.{graphName, graphInputs[], graphOutputs[]}` with
//!   `.info.{name, dataType (string), dimensions}` (ORT's `gen_qnn_ctx_onnx_model.py` [C]).
//!
//! What it cannot reproduce, and how it stands in (documented design):
//! - It is not Qualcomm's converter nor its HTP compiler. Its DLC is a zip holding the real QNN
//!   IR `model` the embedded runtime dumps, plus `xtask-test-double/graph.onnx` (the graph as
//!   converted: external data inlined, fp16-rounded weights with `--float_bitwidth 16`) and
//!   `xtask-test-double/converter.json` (the flags and the DLC's I/O types). `qnn-net-run
//!   --dlc_path` and the context generator work on that carried graph, never on the source
//!   ONNX: a wrong or swapped DLC gives wrong numbers.
//! - Its context binary is exactly the real QNN context bytes the embedded runtime compiles
//!   from the DLC's graph (so ONNX Runtime loads it through the tool's EPContext wrapper; a
//!   trailer after the QNN bytes was tried and QNN 2.47 refuses it: "Failed to get context
//!   binary info"). Parsing those bytes as the real utility does (libQnnSystem's
//!   `QnnSystemContext_getBinaryInfo`) is not reproduced. Instead the generator records what
//!   the utility reports (graph name, build id, the DLC's I/O types) under the sha256 of the
//!   exact bytes it wrote, in the project's `target/qairt-sdk-test-double/contexts/`
//!   (content-addressed: nothing is found by file name). The utility and `qnn-net-run
//!   --retrieve_context` hash the binary they are given: a binary this double did not write,
//!   or one changed by a single byte since, has no record and is an error (exit 1). They also
//!   check that the graph name and every I/O tensor name of the record occur in the binary's
//!   own bytes (QNN stores them there), so a record cannot describe another binary.
//! - The profiling log is the double's own text format (the real one is binary); only the CSV
//!   the viewer writes follows the real layout. The preamble lines' wording is illustrative.
//!   NETRUN = the whole inference as the tool sees it (input files read, run, outputs
//!   written); BACKEND = the session run alone; the CYCLES value is not a real cycle count.
//! - `--output_data_type float_and_native` and `--unified_qairt_format` are not reproduced
//!   (refused), since their file naming / layout are not verified.
//! - `QAIRT_DOUBLE_FAIL=<tool>:exit1|hang|no-output` makes one tool misbehave;
//!   `qnn-context-binary-generator:corrupt` flips one byte of the QNN bytes it writes.

mod context;
mod converter;
mod dtypes;
mod net_run;
mod onnx_edit;
mod profile;
mod quantizer;

use context::*;
use converter::*;
use dtypes::*;
use net_run::*;
use onnx_edit::*;
use profile::*;
use quantizer::*;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use xtask_onnx::onnx::rewrite::put_bytes;
use xtask_onnx::tensor::{DType, Tensor};
use xtask_recipe::htp_target::HtpTarget;
use xtask_runtime::runtime::bootstrap::ensure_runtime;
use xtask_runtime::runtime::{Backend, Runtime};

/// The converted graph the DLC carries (what net-run and the context generator work on).
pub(crate) const GRAPH_MEMBER: &str = "xtask-test-double/graph.onnx";
/// The converter's flags and the DLC's I/O (names, QNN data types, dims).
pub(crate) const FLAGS_MEMBER: &str = "xtask-test-double/converter.json";
/// The converter's `--quantization_overrides` (AIMET encodings), when it was given them.
pub(crate) const OVERRIDES_MEMBER: &str = "xtask-test-double/quantization_overrides.json";
/// Where the generator records what the utility reports, by sha256 of the binary's bytes.
pub(crate) const CONTEXTS: &str = "target/qairt-sdk-test-double/contexts";

/// `qairt-sdk-test-double <tool> <args…>`, run from the project root (the scripts in
/// `test-doubles/qairt-sdk-root/bin/` call it under each tool's name).
fn main() -> std::process::ExitCode {
    let mut argv = std::env::args().skip(1);
    let tool = argv.next().unwrap_or_default();
    let args: Vec<String> = argv.collect();
    match run(&tool, &args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{tool}: ERROR: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}

fn run(tool: &str, raw_args: &[String]) -> Result<()> {
    let (valued, flags): (&[&str], &[&str]) = match tool {
        "qairt-converter" => (
            &[
                "--input_network",
                "--output_path",
                "--float_bitwidth",
                "--float_bias_bitwidth",
                "--quantization_overrides",
            ],
            &["--preserve_io_datatype", "--onnx_skip_simplification"],
        ),
        "qairt-quantizer" => (
            &[
                "--input_dlc",
                "--output_dlc",
                "--input_list",
                "--weights_bitwidth",
                "--act_bitwidth",
                "--bias_bitwidth",
                "--act_quantizer_calibration",
            ],
            &[
                "--use_per_channel_quantization",
                "--preserve_io_datatype",
                "--use_native_input_files",
            ],
        ),
        "qnn-net-run" => (
            &[
                "--backend",
                "--model",
                "--dlc_path",
                "--retrieve_context",
                "--input_list",
                "--output_dir",
                "--profiling_level",
                "--native_input_tensor_names",
                "--output_data_type",
            ],
            &["--use_native_input_files", "--use_native_output_files"],
        ),
        "qnn-context-binary-generator" => (
            &[
                "--backend",
                "--model",
                "--dlc_path",
                "--binary_file",
                "--output_dir",
                "--config_file",
            ],
            &[],
        ),
        "qnn-context-binary-utility" => (&["--context_binary", "--json_file"], &[]),
        "qnn-profile-viewer" => (&["--input_log", "--output"], &[]),
        other => bail!("{other}: not a tool this test double stands in for"),
    };
    if tool == "qairt-converter" || tool == "qairt-quantizer" {
        // Python scripts whose first imports are `qti.aisw.converters…`: nothing runs, not
        // even `--help`, without the SDK's environment.
        converter_environment(tool)?;
        if raw_args == ["--help"] {
            println!("usage: {tool} ... (test double)");
            return Ok(());
        }
    }
    let args = parse_strict(tool, raw_args, valued, flags)?;
    let fail = std::env::var("QAIRT_DOUBLE_FAIL").unwrap_or_default();
    let mode = fail.strip_prefix(&format!("{tool}:")).unwrap_or("");
    match mode {
        "exit1" => {
            eprintln!("{tool}: ERROR: simulated failure (test double)");
            std::process::exit(1);
        }
        "hang" => loop {
            std::thread::sleep(std::time::Duration::from_secs(60));
        },
        "no-output" => return Ok(()),
        _ => {}
    }
    match tool {
        "qnn-context-binary-utility" => return utility(&args),
        "qnn-profile-viewer" => return profile_viewer(&args),
        _ => {}
    }
    // The embedded runtime of the project the tools are run from (its `target/qnn-runtime/`).
    let root = std::env::current_dir()?;
    let rt = Runtime::load(ensure_runtime(&root)?)?;
    match tool {
        "qairt-converter" => convert(&rt, &args),
        "qairt-quantizer" => quantize(&rt, &args),
        "qnn-net-run" => net_run(&rt, &args),
        _ => generate(&rt, &args, mode == "corrupt"),
    }
}

/// The real `qairt-converter` imports `qti.aisw…` from `$SDK/lib/python` (found through
/// `PYTHONPATH`) and its compiled modules load the SDK's libraries from `$SDK/lib/<arch>`
/// (`LD_LIBRARY_PATH`), both set by the SDK's `bin/envsetup.sh`. Without them Python stops at
/// the first import with a traceback and exit status 1, which this reproduces.
fn converter_environment(tool: &str) -> Result<()> {
    let root = PathBuf::from(std::env::var_os("QAIRT_DOUBLE_SDK_ROOT").unwrap_or_default());
    let entries = |var: &str| -> Vec<PathBuf> {
        std::env::var(var)
            .unwrap_or_default()
            .split(':')
            .filter(|e| !e.is_empty())
            .map(PathBuf::from)
            .collect()
    };
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let python = entries("PYTHONPATH")
        .iter()
        .any(|e| e.join("qti/__init__.py").is_file());
    let libs = entries("LD_LIBRARY_PATH")
        .iter()
        .any(|e| same(e, &root.join("lib/x86_64-linux-clang")));
    if !python {
        eprintln!(
            "Traceback (most recent call last):\n  File \"{}/bin/x86_64-linux-clang/{tool}\", line 16, in <module>\n    from qti.aisw.converters.common.utils import code_to_message\nModuleNotFoundError: No module named 'qti'",
            root.display()
        );
        std::process::exit(1);
    }
    // `envsetup.sh` exports QAIRT_SDK_ROOT, which the SDK's Python tools read to find the SDK
    // (the double's assumption of how they fail without it: exit 1 with a reason).
    let sdk_root = std::env::var_os("QAIRT_SDK_ROOT").map(PathBuf::from);
    if !sdk_root.as_deref().is_some_and(|r| same(r, &root)) {
        eprintln!(
            "{tool}: ERROR: QAIRT_SDK_ROOT is {} (expected {}: source the SDK's bin/envsetup.sh)",
            sdk_root.map_or("not set".to_string(), |r| format!("{}", r.display())),
            root.display()
        );
        std::process::exit(1);
    }
    if !libs {
        eprintln!(
            "Traceback (most recent call last):\n  File \"{}/bin/x86_64-linux-clang/{tool}\", line 20, in <module>\n    from qti.aisw.converters.qnn_backend.ir_to_dlc import DLCBackend\nImportError: libQnnIr.so: cannot open shared object file: No such file or directory (LD_LIBRARY_PATH lacks {}/lib/x86_64-linux-clang)",
            root.display(),
            root.display()
        );
        std::process::exit(1);
    }
    Ok(())
}

/// A required flag's value, as the real tools require it.
pub(crate) fn need<'a>(a: &'a BTreeMap<String, String>, flag: &str) -> Result<&'a str> {
    a.get(flag)
        .map(String::as_str)
        .with_context(|| format!("missing required argument {flag}"))
}

/// Flags taking two values (`NAME VALUE`), repeatable (argparse `nargs=2, action="append"`).
const PAIRED: [&str; 1] = ["--source_model_input_datatype"];

fn parse_strict(
    tool: &str,
    argv: &[String],
    valued: &[&str],
    flags: &[&str],
) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        if valued.contains(&a.as_str()) {
            let v = it
                .next()
                .with_context(|| format!("{tool}: {a} needs a value"))?;
            out.insert(a.clone(), v.clone());
        } else if tool == "qairt-converter" && PAIRED.contains(&a.as_str()) {
            // `--flag NAME VALUE`, repeatable: kept as `--flag:NAME` → VALUE.
            let (Some(n), Some(v)) = (it.next(), it.next()) else {
                eprintln!("{tool}: ERROR: argument {a}: expected 2 arguments");
                std::process::exit(2);
            };
            out.insert(format!("{a}:{n}"), v.clone());
        } else if flags.contains(&a.as_str()) {
            out.insert(a.clone(), String::new());
        } else {
            eprintln!("{tool}: ERROR: unrecognized argument {a}");
            std::process::exit(2);
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Data types
