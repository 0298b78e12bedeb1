//! TEST DOUBLE of the QAIRT SDK's tools (`qairt-converter`, `qnn-net-run`,
//! `qnn-context-binary-generator`, `qnn-context-binary-utility`, `qnn-profile-viewer`), used
//! only by the tests through the scripts in `xtask/tests/fixtures/qairt-sdk-test-double/`. The
//! real SDK cannot be installed here; this binary stands in for it and computes real numbers
//! with the embedded QNN 2.47 runtime (ONNX Runtime's QNN EP, CPU and emulated HTP backends).
//!
//! Real behaviours it reproduces, and where they come from (see
//! `/work/shared/notes/real-tool-formats.md`; [C] = the tool's docs or source, [O] = observed):
//! - Strict command lines: an unknown flag is an error (exit 2), a missing required one exits 1.
//! - `qairt-converter --float_bitwidth 16` stores fp16 weights: every float32 initializer of
//!   the graph the DLC carries is rounded to fp16 (and back, so the CPU backend runs it);
//!   `--preserve_io_datatype` keeps int64/fp16/bool I/O in their types; without it int64 I/O
//!   becomes int32 [?: the double's assumption] (Qualcomm SDK docs, doc 80-63442-2 [C]).
//!   `--onnx_skip_simplification` is accepted (quic/efficient-transformers passes it [O]).
//! - `qnn-net-run` (Qualcomm docs and sample apps [C]): the input list has one line per
//!   inference of space-separated `name:=path`; outputs go to
//!   `<output_dir>/Result_<i>/<raw tensor name>.raw`, a `/` in a name making subfolders.
//!   Files are float32 unless native I/O is asked for: an input whose DLC type is not float32
//!   (with `--preserve_io_datatype`) must come as a native file with `--use_native_input_files`
//!   or `--native_input_tensor_names`, or the run fails; every file's byte count must match its
//!   tensor. Outputs are native with `--use_native_output_files` or
//!   `--output_data_type native_only`. `--profiling_level basic|detailed` writes
//!   `<output_dir>/qnn-profiling-data_0.log`.
//! - `qnn-profile-viewer --output x.csv` [O, 2.47 usage; header as ORT's QNN EP writes it]:
//!   preamble lines, the header `Msg Timestamp,Message,Time,Unit of Measurement,Timing
//!   Source,Event Level,Event Identifier`, one row per event with a timestamp first; per
//!   inference one EXECUTE row with `NETRUN` and one with `BACKEND` timing source (US), plus
//!   CYCLES/COUNT rows, and LOAD/INIT/DEINIT rows around them.
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

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use xtask::onnx::rewrite::put_bytes;
use xtask::runtime::bootstrap::ensure_runtime;
use xtask::runtime::{Backend, Runtime};
use xtask::target::HtpTarget;
use xtask::tensor::{DType, Tensor};

/// The converted graph the DLC carries (what net-run and the context generator work on).
const GRAPH_MEMBER: &str = "xtask-test-double/graph.onnx";
/// The converter's flags and the DLC's I/O (names, QNN data types, dims).
const FLAGS_MEMBER: &str = "xtask-test-double/converter.json";
/// Where the generator records what the utility reports, by sha256 of the binary's bytes.
const CONTEXTS: &str = "target/qairt-sdk-test-double/contexts";

/// `qairt-sdk-test-double <tool> <args…>`, run from the project root (the scripts in
/// `xtask/tests/fixtures/qairt-sdk-test-double/` call it under each tool's name).
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
            ],
            &["--preserve_io_datatype", "--onnx_skip_simplification"],
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
        "qnn-net-run" => net_run(&rt, &args),
        _ => generate(&rt, &args, mode == "corrupt"),
    }
}

/// A required flag's value, as the real tools require it.
fn need<'a>(a: &'a BTreeMap<String, String>, flag: &str) -> Result<&'a str> {
    a.get(flag)
        .map(String::as_str)
        .with_context(|| format!("missing required argument {flag}"))
}

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

fn qnn_name(d: Option<DType>) -> &'static str {
    xtask::toolchain::sdk::steps::qnn_data_type(d)
}

/// Bytes per element of a QNN data type name.
fn qnn_size(qnn: &str) -> Result<usize> {
    Ok(match qnn {
        "QNN_DATATYPE_FLOAT_32" | "QNN_DATATYPE_INT_32" => 4,
        "QNN_DATATYPE_FLOAT_16" => 2,
        "QNN_DATATYPE_INT_64" => 8,
        "QNN_DATATYPE_BOOL_8" => 1,
        other => bail!("data type {other} is not supported by the test double"),
    })
}

/// Values of a file in a QNN data type, widened to f64.
fn decode(bytes: &[u8], qnn: &str) -> Result<Vec<f64>> {
    let size = qnn_size(qnn)?;
    Ok(bytes
        .chunks_exact(size)
        .map(|c| match qnn {
            "QNN_DATATYPE_FLOAT_32" => f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            "QNN_DATATYPE_INT_32" => f64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            "QNN_DATATYPE_FLOAT_16" => f64::from(half::f16::from_le_bytes([c[0], c[1]])),
            "QNN_DATATYPE_INT_64" => i64::from_le_bytes(c.try_into().unwrap()) as f64,
            _ => f64::from(c[0] != 0),
        })
        .collect())
}

fn encode(values: &[f64], qnn: &str) -> Vec<u8> {
    values
        .iter()
        .flat_map(|&v| match qnn {
            "QNN_DATATYPE_INT_32" => (v as i32).to_le_bytes().to_vec(),
            "QNN_DATATYPE_FLOAT_16" => half::f16::from_f64(v).to_le_bytes().to_vec(),
            "QNN_DATATYPE_INT_64" => (v as i64).to_le_bytes().to_vec(),
            "QNN_DATATYPE_BOOL_8" => vec![u8::from(v != 0.0)],
            _ => (v as f32).to_le_bytes().to_vec(),
        })
        .collect()
}

/// A tensor of the ONNX graph's element type from f64 values.
fn tensor_of(d: Option<DType>, shape: Vec<usize>, v: Vec<f64>) -> Result<Tensor> {
    Ok(match d {
        Some(DType::F16) => Tensor::F16(ndarray::ArrayD::from_shape_vec(
            shape,
            v.iter().map(|x| half::f16::from_f64(*x)).collect(),
        )?),
        Some(DType::I64) => Tensor::I64(ndarray::ArrayD::from_shape_vec(
            shape,
            v.iter().map(|x| *x as i64).collect(),
        )?),
        Some(DType::Bool) => Tensor::Bool(ndarray::ArrayD::from_shape_vec(
            shape,
            v.iter().map(|x| *x != 0.0).collect(),
        )?),
        _ => Tensor::F32(ndarray::ArrayD::from_shape_vec(
            shape,
            v.iter().map(|x| *x as f32).collect(),
        )?),
    })
}

/// The I/O of a graph as the DLC records it: name, QNN data type, dims.
fn io_json(list: Vec<(String, Option<DType>, Vec<i64>)>, preserve: bool) -> Vec<serde_json::Value> {
    list.into_iter()
        .map(|(name, d, dims)| {
            let qnn = match (preserve, d) {
                (true, d) => qnn_name(d),
                (false, Some(DType::I64)) => "QNN_DATATYPE_INT_32",
                (false, Some(DType::Bool)) => "QNN_DATATYPE_BOOL_8",
                (false, _) => "QNN_DATATYPE_FLOAT_32",
            };
            serde_json::json!({ "info": { "name": name, "dataType": qnn, "dimensions": dims } })
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// qairt-converter

/// One protobuf field: (number, wire type, payload, whole span including the key).
type PbField<'a> = (u32, u8, &'a [u8], &'a [u8]);

/// A minimal protobuf field walker.
fn pb_fields(buf: &[u8]) -> Result<Vec<PbField<'_>>> {
    fn varint(buf: &[u8], pos: &mut usize) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *buf.get(*pos).context("truncated varint")?;
            *pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        bail!("varint too long")
    }
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let start = pos;
        let key = varint(buf, &mut pos)?;
        let wire = (key & 7) as u8;
        let body = pos;
        match wire {
            0 => {
                varint(buf, &mut pos)?;
            }
            1 => pos += 8,
            2 => {
                let len = varint(buf, &mut pos)? as usize;
                let b = pos;
                pos += len;
                if pos > buf.len() {
                    bail!("field runs past the end");
                }
                out.push(((key >> 3) as u32, 2, &buf[b..pos], &buf[start..pos]));
                continue;
            }
            5 => pos += 4,
            w => bail!("unsupported wire type {w}"),
        }
        if pos > buf.len() {
            bail!("field runs past the end");
        }
        out.push(((key >> 3) as u32, wire, &buf[body..pos], &buf[start..pos]));
    }
    Ok(out)
}

fn pb_varint(payload: &[u8]) -> u64 {
    payload
        .iter()
        .enumerate()
        .fold(0, |v, (i, b)| v | (u64::from(b & 0x7f) << (7 * i)))
}

/// The model with every initializer's data inline (external data read from `dir`) and, with
/// `fp16`, every float32 initializer rounded to fp16 and back.
fn converted_model(model: &[u8], dir: &Path, fp16: bool) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for (num, _, payload, span) in pb_fields(model)? {
        if num != 7 {
            out.extend_from_slice(span);
            continue;
        }
        let mut graph = Vec::new();
        for (num, wire, payload, span) in pb_fields(payload)? {
            if num == 5 && wire == 2 {
                put_bytes(&mut graph, 5, &converted_tensor(payload, dir, fp16)?);
            } else {
                graph.extend_from_slice(span);
            }
        }
        put_bytes(&mut out, 7, &graph);
    }
    Ok(out)
}

fn converted_tensor(t: &[u8], dir: &Path, fp16: bool) -> Result<Vec<u8>> {
    let fields = pb_fields(t)?;
    let mut data_type = 0;
    let mut raw: Option<Vec<u8>> = None;
    let mut floats = Vec::new();
    let mut external = BTreeMap::new();
    for (num, wire, payload, _) in &fields {
        match (num, wire) {
            (2, 0) => data_type = pb_varint(payload),
            (9, 2) => raw = Some(payload.to_vec()),
            (4, 2) | (4, 5) => floats.extend_from_slice(payload),
            (13, 2) => {
                let (mut k, mut v) = (String::new(), String::new());
                for (n, _, p, _) in pb_fields(payload)? {
                    match n {
                        1 => k = String::from_utf8_lossy(p).into(),
                        2 => v = String::from_utf8_lossy(p).into(),
                        _ => {}
                    }
                }
                external.insert(k, v);
            }
            _ => {}
        }
    }
    if let Some(loc) = external.get("location") {
        let bytes = std::fs::read(dir.join(loc))
            .with_context(|| format!("external data {loc} (beside the ONNX)"))?;
        let offset: usize = external.get("offset").map_or(Ok(0), |s| s.parse())?;
        let length: usize = external
            .get("length")
            .map_or(Ok(bytes.len() - offset), |s| s.parse())?;
        raw = Some(
            bytes
                .get(offset..offset + length)
                .context("external data shorter than declared")?
                .to_vec(),
        );
    } else if raw.is_none() && !floats.is_empty() {
        raw = Some(floats);
    }
    let Some(mut data) = raw else {
        return Ok(t.to_vec());
    };
    if data_type == 1 && fp16 {
        for c in data.chunks_exact_mut(4) {
            let v = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            c.copy_from_slice(&half::f16::from_f32(v).to_f32().to_le_bytes());
        }
    }
    let mut out = Vec::new();
    for (num, _, _, span) in &fields {
        if !matches!(num, 4 | 9 | 13 | 14) {
            out.extend_from_slice(span);
        }
    }
    put_bytes(&mut out, 9, &data);
    Ok(out)
}

fn convert(rt: &Runtime, a: &BTreeMap<String, String>) -> Result<()> {
    let onnx = std::path::absolute(need(a, "--input_network")?)?;
    let out = need(a, "--output_path")?;
    let bitwidth: u8 = need(a, "--float_bitwidth")?.parse()?;
    if ![16, 32].contains(&bitwidth) {
        bail!("--float_bitwidth must be 16 or 32, not {bitwidth}");
    }
    let preserve = a.contains_key("--preserve_io_datatype");
    let tmp = tempfile::tempdir()?;
    let graph = converted_model(
        &std::fs::read(&onnx)?,
        onnx.parent().unwrap_or(Path::new(".")),
        bitwidth == 16,
    )?;
    let graph_path = tmp.path().join("graph.onnx");
    std::fs::write(&graph_path, &graph)?;
    let session = rt.open(&graph_path, &Backend::OrtCpu)?;
    let flags = serde_json::json!({
        "float_bitwidth": bitwidth,
        "float_bias_bitwidth": a.get("--float_bias_bitwidth"),
        "preserve_io_datatype": preserve,
        "onnx_skip_simplification": a.contains_key("--onnx_skip_simplification"),
        "graphInputs": io_json(session.input_contract(), preserve),
        "graphOutputs": io_json(session.output_contract(), preserve),
    });
    drop(session);
    let (dlc, _) = rt.dump_dlc(&graph_path, &tmp.path().join("ir"))?;
    let mut zip = zip::ZipWriter::new_append(
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&dlc)?,
    )?;
    zip.start_file(GRAPH_MEMBER, zip::write::SimpleFileOptions::default())?;
    zip.write_all(&graph)?;
    zip.start_file(FLAGS_MEMBER, zip::write::SimpleFileOptions::default())?;
    zip.write_all(&serde_json::to_vec_pretty(&flags)?)?;
    zip.finish()?;
    std::fs::copy(&dlc, out)?;
    Ok(())
}

/// The graph and the converter's record a DLC of this double carries.
fn read_dlc(path: &str) -> Result<(Vec<u8>, serde_json::Value)> {
    let mut zip = zip::ZipArchive::new(
        std::fs::File::open(path).with_context(|| format!("cannot open the DLC {path}"))?,
    )
    .with_context(|| format!("{path} is not a DLC"))?;
    let mut member = |name: &str| -> Result<Vec<u8>> {
        let mut bytes = Vec::new();
        zip.by_name(name)
            .with_context(|| {
                format!(
                    "{path}: not a DLC written by the test double's qairt-converter (no {name})"
                )
            })?
            .read_to_end(&mut bytes)?;
        Ok(bytes)
    };
    let graph = member(GRAPH_MEMBER)?;
    let flags = serde_json::from_slice(&member(FLAGS_MEMBER)?)?;
    Ok((graph, flags))
}

// ---------------------------------------------------------------------------------------------
// qnn-context-binary-generator / -utility: the binary and its trailer

fn generate(rt: &Runtime, a: &BTreeMap<String, String>, corrupt: bool) -> Result<()> {
    for flag in ["--backend", "--model", "--binary_file", "--output_dir"] {
        need(a, flag)?;
    }
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(need(a, "--config_file")?)?)?;
    let htp_path = config["backend_extensions"]["config_file_path"]
        .as_str()
        .context("no backend_extensions.config_file_path")?;
    let htp: serde_json::Value = serde_json::from_slice(&std::fs::read(htp_path)?)?;
    let target = HtpTarget::from_sdk_config(&htp)?;
    let (graph, flags) = read_dlc(need(a, "--dlc_path")?)?;
    let tmp = tempfile::tempdir()?;
    let graph_path = tmp.path().join("graph.onnx");
    std::fs::write(&graph_path, &graph)?;
    let wrapper = tmp.path().join("g_ctx.onnx");
    rt.compile_context(&graph_path, &target, &wrapper)?;
    let summary = xtask::onnx::proto::read_summary(&wrapper)?;
    let node = summary
        .nodes
        .iter()
        .find(|n| n.op_type == "EPContext")
        .context("no EPContext node")?;
    let mut qnn = std::fs::read(tmp.path().join("g_ctx_qnn.bin"))?;
    let session = rt.open(&graph_path, &Backend::OrtCpu)?;
    let onnx_io = |list: Vec<(String, Option<DType>, Vec<i64>)>| -> Vec<serde_json::Value> {
        list.into_iter()
            .map(|(n, d, dims)| serde_json::json!({ "name": n, "dtype": d, "dims": dims }))
            .collect()
    };
    let meta = serde_json::json!({
        "target": target,
        "onnx_inputs": onnx_io(session.input_contract()),
        "onnx_outputs": onnx_io(session.output_contract()),
        "preserve_io_datatype": flags["preserve_io_datatype"],
        "info": {
            "buildId": node.attr_str("ep_sdk_version").unwrap_or("unknown"),
            "graphs": [{ "info": {
                "graphName": node.name,
                "graphInputs": flags["graphInputs"],
                "graphOutputs": flags["graphOutputs"],
            }}],
        },
    });
    let sha = xtask::hashing::sha256_bytes(&qnn);
    std::fs::create_dir_all(CONTEXTS)?;
    std::fs::write(
        Path::new(CONTEXTS).join(format!("{sha}.json")),
        serde_json::to_vec_pretty(&meta)?,
    )?;
    if corrupt {
        let mid = qnn.len() / 2;
        qnn[mid] ^= 0x5a;
    }
    std::fs::create_dir_all(&a["--output_dir"])?;
    std::fs::write(
        Path::new(&a["--output_dir"]).join(format!("{}.bin", a["--binary_file"])),
        qnn,
    )?;
    Ok(())
}

/// The bytes of a context binary this double wrote and the generator's record of it.
fn read_context(path: &Path) -> Result<(Vec<u8>, serde_json::Value)> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("cannot read the context binary {}", path.display()))?;
    let sha = xtask::hashing::sha256_bytes(&bytes);
    let record = Path::new(CONTEXTS).join(format!("{sha}.json"));
    let meta: serde_json::Value = match std::fs::read(&record) {
        Ok(b) => serde_json::from_slice(&b)?,
        Err(_) => bail!(
            "{}: not a context binary written by the test double's qnn-context-binary-generator, \
             or modified since it was written (no record for sha256 {sha})",
            path.display()
        ),
    };
    let graph = &meta["info"]["graphs"][0]["info"];
    let mut names = vec![graph["graphName"].as_str().unwrap_or_default().to_string()];
    for key in ["graphInputs", "graphOutputs"] {
        for t in graph[key].as_array().into_iter().flatten() {
            names.push(t["info"]["name"].as_str().unwrap_or_default().to_string());
        }
    }
    for name in names {
        if name.is_empty() || !bytes.windows(name.len()).any(|w| w == name.as_bytes()) {
            bail!(
                "{}: the record names `{name}`, which the binary's bytes do not contain",
                path.display()
            );
        }
    }
    Ok((bytes, meta))
}

fn utility(a: &BTreeMap<String, String>) -> Result<()> {
    let (_, meta) = read_context(Path::new(need(a, "--context_binary")?))?;
    let json = serde_json::json!({ "info": meta["info"] });
    std::fs::write(need(a, "--json_file")?, serde_json::to_vec_pretty(&json)?)?;
    Ok(())
}

/// An EPContext wrapper beside the QNN bytes of the binary, from the binary's own trailer.
fn wrapper_for_binary(bin: &Path, dir: &Path) -> Result<(PathBuf, HtpTarget, serde_json::Value)> {
    let (qnn, meta) = read_context(bin)?;
    let target: HtpTarget = serde_json::from_value(meta["target"].clone())?;
    let tensors = |key: &str| -> Result<Vec<xtask::onnx::writer::WrapperTensor>> {
        meta[key]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                let d: Option<DType> = serde_json::from_value(t["dtype"].clone())?;
                Ok(xtask::onnx::writer::WrapperTensor {
                    name: t["name"].as_str().unwrap_or_default().to_string(),
                    dims: t["dims"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|d| d.as_u64().map(|d| d as usize))
                        .collect(),
                    elem_type: match d {
                        Some(DType::F16) => 10,
                        Some(DType::I64) => 7,
                        Some(DType::Bool) => 9,
                        _ => 1,
                    },
                })
            })
            .collect()
    };
    std::fs::write(dir.join("ctx.bin"), qnn)?;
    let graph = &meta["info"]["graphs"][0]["info"];
    let bytes = xtask::onnx::writer::epcontext_wrapper(
        graph["graphName"].as_str().unwrap_or_default(),
        "ctx.bin",
        meta["info"]["buildId"].as_str().unwrap_or_default(),
        &tensors("onnx_inputs")?,
        &tensors("onnx_outputs")?,
    );
    let wrapper = dir.join("ctx.onnx");
    std::fs::write(&wrapper, bytes)?;
    Ok((wrapper, target, meta))
}

// ---------------------------------------------------------------------------------------------
// qnn-net-run

fn net_run(rt: &Runtime, a: &BTreeMap<String, String>) -> Result<()> {
    let backend = need(a, "--backend")?;
    if !Path::new(backend).is_file() {
        bail!("qnn-net-run: backend library {backend} not found");
    }
    let list = need(a, "--input_list")?;
    let out_dir = PathBuf::from(need(a, "--output_dir")?);
    let profiling = match a.get("--profiling_level").map(String::as_str) {
        None => false,
        Some("basic" | "detailed") => true,
        Some(other) => bail!("--profiling_level {other}: expected basic or detailed"),
    };
    let native_outputs = match a.get("--output_data_type").map(String::as_str) {
        None | Some("float_only") => a.contains_key("--use_native_output_files"),
        Some("native_only") => true,
        Some("float_and_native") => {
            bail!("--output_data_type float_and_native is not reproduced by the test double")
        }
        Some(other) => bail!("--output_data_type {other}: not a valid value"),
    };
    let native_names: Vec<&str> = a
        .get("--native_input_tensor_names")
        .map(|s| s.split(',').collect())
        .unwrap_or_default();
    let native_input =
        |name: &str| a.contains_key("--use_native_input_files") || native_names.contains(&name);
    let tmp = tempfile::tempdir()?;
    let opened = Instant::now();
    let (mut session, graph_io, preserve) = match a.get("--retrieve_context") {
        Some(bin) => {
            if !backend.ends_with("libQnnHtp.so") || a.contains_key("--dlc_path") {
                bail!(
                    "qnn-net-run: --retrieve_context goes with the HTP backend and no --dlc_path"
                );
            }
            let (wrapper, target, meta) = wrapper_for_binary(Path::new(bin), tmp.path())?;
            let io = meta["info"]["graphs"][0]["info"].clone();
            let preserve = meta["preserve_io_datatype"].as_bool().unwrap_or(false);
            (rt.open(&wrapper, &Backend::QnnHtp(target))?, io, preserve)
        }
        None => {
            if !backend.ends_with("libQnnCpu.so") {
                bail!("qnn-net-run: the test double runs DLCs on libQnnCpu.so only");
            }
            need(a, "--model")?;
            let (graph, flags) = read_dlc(need(a, "--dlc_path")?)?;
            let path = tmp.path().join("graph.onnx");
            std::fs::write(&path, graph)?;
            let preserve = flags["preserve_io_datatype"].as_bool().unwrap_or(false);
            (rt.open(&path, &Backend::QnnCpu)?, flags, preserve)
        }
    };
    let load_us = opened.elapsed().as_secs_f64() * 1e6;
    let init = Instant::now();
    let dlc_io = |key: &str| -> BTreeMap<String, (String, Vec<usize>)> {
        graph_io[key]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                let i = &t["info"];
                (
                    i["name"].as_str().unwrap_or_default().to_string(),
                    (
                        i["dataType"].as_str().unwrap_or_default().to_string(),
                        i["dimensions"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|d| d.as_u64().map(|d| d as usize))
                            .collect(),
                    ),
                )
            })
            .collect()
    };
    let (dlc_inputs, dlc_outputs) = (dlc_io("graphInputs"), dlc_io("graphOutputs"));
    let onnx_types: BTreeMap<String, Option<DType>> = session
        .input_contract()
        .into_iter()
        .map(|(n, d, _)| (n, d))
        .collect();
    let init_us = init.elapsed().as_secs_f64() * 1e6;
    let lines: Vec<String> = std::fs::read_to_string(list)
        .with_context(|| format!("cannot read the input list {list}"))?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    if lines.is_empty() {
        bail!("the input list {list} names no inference");
    }
    let mut executes = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let started = Instant::now();
        let mut inputs = BTreeMap::new();
        for entry in line.split_whitespace() {
            let (name, path) = entry
                .split_once(":=")
                .context("input list entries are name:=path")?;
            let (qnn, dims) = dlc_inputs
                .get(name)
                .with_context(|| format!("the graph has no input {name}"))?;
            let native = native_input(name);
            if preserve && qnn != "QNN_DATATYPE_FLOAT_32" && !native {
                bail!(
                    "input {name} is {qnn} in this graph (converted with --preserve_io_datatype): \
                     pass --use_native_input_files (or --native_input_tensor_names {name}) and a file of that type"
                );
            }
            let file_type = if native {
                qnn.as_str()
            } else {
                "QNN_DATATYPE_FLOAT_32"
            };
            let bytes = std::fs::read(path).with_context(|| format!("input file {path}"))?;
            let n: usize = dims.iter().product();
            let want = n * qnn_size(file_type)?;
            if bytes.len() != want {
                bail!(
                    "input {name}: {path} holds {} bytes, {n} values of {file_type} need {want}",
                    bytes.len()
                );
            }
            let values = decode(&bytes, file_type)?;
            let d = onnx_types.get(name).copied().flatten();
            inputs.insert(name.to_string(), tensor_of(d, dims.clone(), values)?);
        }
        let ran = Instant::now();
        let outputs = session.run(&inputs)?;
        let backend_us = ran.elapsed().as_secs_f64() * 1e6;
        let dir = out_dir.join(format!("Result_{i}"));
        for (name, t) in outputs {
            let qnn = dlc_outputs
                .get(&name)
                .map_or("QNN_DATATYPE_FLOAT_32", |(q, _)| q.as_str());
            let file_type = if native_outputs {
                qnn
            } else {
                "QNN_DATATYPE_FLOAT_32"
            };
            // The raw tensor name: a `/` makes subfolders.
            let path = dir.join(format!("{}.raw", name.trim_start_matches('/')));
            std::fs::create_dir_all(path.parent().unwrap_or(&dir))?;
            std::fs::write(&path, encode(&t.to_f64_vec(), file_type))?;
        }
        executes.push((started.elapsed().as_secs_f64() * 1e6, backend_us));
    }
    let deinit = Instant::now();
    drop(session);
    let deinit_us = deinit.elapsed().as_secs_f64() * 1e6;
    if profiling {
        let mut log =
            format!("xtask-test-double-profile v1\nload {load_us:.1}\ninit {init_us:.1}\n");
        for (netrun, backend) in &executes {
            log.push_str(&format!("execute {netrun:.1} {backend:.1}\n"));
        }
        log.push_str(&format!("deinit {deinit_us:.1}\n"));
        std::fs::create_dir_all(&out_dir)?;
        std::fs::write(out_dir.join("qnn-profiling-data_0.log"), log)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// qnn-profile-viewer

/// The double's profiling log as the CSV layout of the real viewer.
fn profile_viewer(a: &BTreeMap<String, String>) -> Result<()> {
    let log = std::fs::read_to_string(need(a, "--input_log")?)?;
    let mut lines = log.lines();
    if lines.next() != Some("xtask-test-double-profile v1") {
        bail!("not a profiling log of the test double");
    }
    let mut ts: u64 = 15_423_000_000;
    let mut rows = Vec::new();
    let mut row = |ts: &mut u64, msg: &str, time: String, unit: &str, src: &str, id: &str| {
        *ts += 137;
        rows.push(format!("{ts},{msg},{time},{unit},{src},ROOT,{id}"));
    };
    for line in lines {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let us = |i: usize| -> Result<f64> {
            Ok(parts.get(i).context("truncated profiling log")?.parse()?)
        };
        match parts.first().copied() {
            Some("load") => row(
                &mut ts,
                "LOAD",
                format!("{:.0}", us(1)?),
                "US",
                "NETRUN",
                "Load Binary",
            ),
            Some("init") => {
                row(
                    &mut ts,
                    "INIT",
                    format!("{:.0}", us(1)?),
                    "US",
                    "NETRUN",
                    "Graph Init",
                );
                row(
                    &mut ts,
                    "INIT",
                    format!("{:.0}", us(1)? * 0.8),
                    "US",
                    "BACKEND",
                    "\"RPC (init) time, incl. finalize\"",
                );
            }
            Some("execute") => {
                let (netrun, backend) = (us(1)?, us(2)?);
                row(
                    &mut ts,
                    "EXECUTE",
                    format!("{netrun:.0}"),
                    "US",
                    "NETRUN",
                    "Graph 0: execute",
                );
                row(
                    &mut ts,
                    "EXECUTE",
                    format!("{backend:.0}"),
                    "US",
                    "BACKEND",
                    "Accelerator (execute) time",
                );
                row(
                    &mut ts,
                    "EXECUTE",
                    format!("{:.0}", backend * 1000.0),
                    "CYCLES",
                    "BACKEND",
                    "Accelerator (execute) time (cycles)",
                );
                row(
                    &mut ts,
                    "EXECUTE",
                    "4".into(),
                    "COUNT",
                    "BACKEND",
                    "Number of HVX threads used",
                );
                ts += netrun as u64;
            }
            Some("deinit") => row(
                &mut ts,
                "DEINIT",
                format!("{:.0}", us(1)?),
                "US",
                "NETRUN",
                "Graph Deinit",
            ),
            _ => bail!("unreadable profiling log line `{line}`"),
        }
    }
    let csv = format!(
        "Log File Created: (test double)\nTime Scale: 1e-06\nEpoch Timestamp: 0 Steady Clock Timestamp: 15423000000\n\
         Generated using:\nqnn-profile-viewer v2.47.0 (test double)\nqnn-net-run        v2.47.0 (test double)\n\n\
         Msg Timestamp,Message,Time,Unit of Measurement,Timing Source,Event Level,Event Identifier\n{}\n",
        rows.join("\n")
    );
    std::fs::write(need(a, "--output")?, csv)?;
    Ok(())
}
