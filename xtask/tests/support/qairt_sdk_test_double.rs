//! TEST DOUBLE of the QAIRT SDK's tools (`qairt-converter`, `qnn-net-run`,
//! `qnn-context-binary-generator`, `qnn-context-binary-utility`, `qnn-profile-viewer`), used
//! only by the tests
//! through the scripts in `xtask/tests/fixtures/qairt-sdk-test-double/`. It parses the
//! documented flags strictly (an unknown flag fails, as the real tools do), writes its outputs
//! in the documented layout, and computes real numbers with the embedded QNN 2.47 runtime.
//! `QAIRT_DOUBLE_FAIL=<tool>:exit1|hang|no-output` makes one tool misbehave.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use xtask::runtime::bootstrap::ensure_runtime;
use xtask::runtime::{Backend, Runtime};
use xtask::target::HtpTarget;
use xtask::tensor::Tensor;

/// The DLC member where the double remembers which ONNX it converted.
const SOURCE_MEMBER: &str = "xtask-test-double/source-onnx";

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
    {
        let (valued, flags): (&[&str], &[&str]) = match tool {
            "qairt-converter" => (
                &[
                    "--input_network",
                    "--output_path",
                    "--float_bitwidth",
                    "--float_bias_bitwidth",
                ],
                &["--preserve_io_datatype"],
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
                ],
                &[],
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
        // The embedded runtime of the project the tools are run from (its `target/qnn-runtime/`).
        let root = std::env::current_dir()?;
        let rt = Runtime::load(ensure_runtime(&root)?)?;
        match tool {
            "qairt-converter" => convert(&rt, &args),
            "qnn-net-run" => net_run(&rt, &args),
            "qnn-context-binary-generator" => generate(&rt, &args),
            "qnn-profile-viewer" => profile_viewer(&args),
            _ => utility(&args),
        }
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

/// A real QNN IR DLC of the ONNX, plus the double's note of its source.
fn convert(rt: &Runtime, a: &BTreeMap<String, String>) -> Result<()> {
    let onnx = std::path::absolute(need(a, "--input_network")?)?;
    need(a, "--output_path")?;
    let tmp = tempfile::tempdir()?;
    let (dlc, _) = rt.dump_dlc(&onnx, tmp.path())?;
    let mut zip = zip::ZipWriter::new_append(
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&dlc)?,
    )?;
    zip.start_file(SOURCE_MEMBER, zip::write::SimpleFileOptions::default())?;
    zip.write_all(onnx.display().to_string().as_bytes())?;
    zip.finish()?;
    std::fs::copy(&dlc, &a["--output_path"])?;
    Ok(())
}

fn source_onnx(dlc: &str) -> Result<PathBuf> {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(dlc)?)?;
    let mut s = String::new();
    zip.by_name(SOURCE_MEMBER)
        .context("not a DLC made by the test double's qairt-converter")?
        .read_to_string(&mut s)?;
    Ok(PathBuf::from(s))
}

/// Runs the DLC's graph on the CPU backend named by `--backend`; `Result_0/<name>.raw` out.
fn net_run(rt: &Runtime, a: &BTreeMap<String, String>) -> Result<()> {
    let backend = need(a, "--backend")?;
    if !Path::new(backend).is_file() {
        bail!("qnn-net-run: backend library {backend} not found");
    }
    need(a, "--input_list")?;
    need(a, "--output_dir")?;
    let tmp = tempfile::tempdir()?;
    let mut session = match a.get("--retrieve_context") {
        Some(bin) => {
            if !backend.ends_with("libQnnHtp.so") || a.contains_key("--dlc_path") {
                bail!(
                    "qnn-net-run: --retrieve_context goes with the HTP backend and no --dlc_path"
                );
            }
            let (wrapper, target) = wrapper_for_binary(Path::new(bin), tmp.path())?;
            rt.open(&wrapper, &Backend::QnnHtp(target))?
        }
        None => {
            if !backend.ends_with("libQnnCpu.so") {
                bail!("qnn-net-run: the test double runs DLCs on libQnnCpu.so only");
            }
            need(a, "--model")?;
            rt.open(&source_onnx(need(a, "--dlc_path")?)?, &Backend::QnnCpu)?
        }
    };
    let shapes: BTreeMap<String, Vec<usize>> = session
        .input_contract()
        .into_iter()
        .map(|(n, _, s)| (n, s.iter().map(|d| *d as usize).collect()))
        .collect();
    let line = std::fs::read_to_string(&a["--input_list"])?
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    let mut inputs = BTreeMap::new();
    for entry in line.split_whitespace() {
        let (name, path) = entry
            .split_once(":=")
            .context("input list entries are name:=path")?;
        let bytes = std::fs::read(path)?;
        let values: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let shape = shapes
            .get(name)
            .with_context(|| format!("the graph has no input {name}"))?
            .clone();
        inputs.insert(
            name.to_string(),
            Tensor::F32(ndarray::ArrayD::from_shape_vec(shape, values)?),
        );
    }
    let started = std::time::Instant::now();
    let outputs = session.run(&inputs)?;
    let execute_us = started.elapsed().as_secs_f64() * 1e6;
    if a.get("--profiling_level").is_some_and(|l| l == "basic") {
        std::fs::create_dir_all(&a["--output_dir"])?;
        std::fs::write(
            Path::new(&a["--output_dir"]).join("qnn-profiling-data_0.log"),
            format!("xtask-test-double-profile\nexecute_us={execute_us:.1}\n"),
        )?;
    }
    let dir = Path::new(&a["--output_dir"]).join("Result_0");
    std::fs::create_dir_all(&dir)?;
    for (name, t) in outputs {
        let bytes: Vec<u8> = t
            .to_f64_vec()
            .iter()
            .flat_map(|v| (*v as f32).to_le_bytes())
            .collect();
        std::fs::write(
            dir.join(format!("{}.raw", xtask::toolchain::sdk::sanitize(&name))),
            bytes,
        )?;
    }
    Ok(())
}

/// Where the double keeps what `qnn-context-binary-utility` will report for a binary.
fn sidecar(bin: &Path) -> Result<PathBuf> {
    let dir = std::env::temp_dir().join("xtask-qairt-test-double");
    std::fs::create_dir_all(&dir)?;
    Ok(dir.join(format!("{}.json", xtask::hashing::sha256_file(bin)?)))
}

fn generate(rt: &Runtime, a: &BTreeMap<String, String>) -> Result<()> {
    for flag in [
        "--backend",
        "--model",
        "--dlc_path",
        "--binary_file",
        "--output_dir",
    ] {
        need(a, flag)?;
    }
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(need(a, "--config_file")?)?)?;
    let htp_path = config["backend_extensions"]["config_file_path"]
        .as_str()
        .context("no backend_extensions.config_file_path")?;
    let htp: serde_json::Value = serde_json::from_slice(&std::fs::read(htp_path)?)?;
    let target = HtpTarget::from_sdk_config(&htp)?;
    let onnx = source_onnx(&a["--dlc_path"])?;
    let tmp = tempfile::tempdir()?;
    let wrapper = tmp.path().join("g_ctx.onnx");
    rt.compile_context(&onnx, &target, &wrapper)?;
    let summary = xtask::onnx::proto::read_summary(&wrapper)?;
    let node = summary
        .nodes
        .iter()
        .find(|n| n.op_type == "EPContext")
        .context("no EPContext node")?;
    let bin = Path::new(&a["--output_dir"]).join(format!("{}.bin", a["--binary_file"]));
    std::fs::create_dir_all(Path::new(&a["--output_dir"]))?;
    std::fs::copy(tmp.path().join("g_ctx_qnn.bin"), &bin)?;
    let session = rt.open(&onnx, &Backend::OrtCpu)?;
    let io =
        |list: Vec<(String, Option<xtask::tensor::DType>, Vec<i64>)>| -> Vec<serde_json::Value> {
            list.into_iter()
            .map(|(name, d, dims)| serde_json::json!({ "info": { "name": name, "dataType": xtask::toolchain::sdk::steps::qnn_data_type(d), "dimensions": dims } }))
            .collect()
        };
    let info = serde_json::json!({ "xtask-test-double-target": target, "info": {
        "buildId": node.attr_str("ep_sdk_version").unwrap_or("unknown"),
        "graphs": [{ "info": { "graphName": node.name, "graphInputs": io(session.input_contract()), "graphOutputs": io(session.output_contract()) } }],
    }});
    std::fs::write(sidecar(&bin)?, serde_json::to_vec(&info)?)?;
    Ok(())
}

fn sidecar_info(bin: &Path) -> Result<serde_json::Value> {
    let bytes =
        std::fs::read(sidecar(bin)?).context("not a context binary made by the test double")?;
    Ok(serde_json::from_slice(&bytes)?)
}

fn utility(a: &BTreeMap<String, String>) -> Result<()> {
    let mut info = sidecar_info(Path::new(need(a, "--context_binary")?))?;
    if let Some(o) = info.as_object_mut() {
        o.remove("xtask-test-double-target");
    }
    std::fs::write(need(a, "--json_file")?, serde_json::to_vec(&info)?)?;
    Ok(())
}

/// An EPContext wrapper beside a copy of the binary, from what the generator remembered.
fn wrapper_for_binary(bin: &Path, dir: &Path) -> Result<(PathBuf, HtpTarget)> {
    let info = sidecar_info(bin)?;
    let target: HtpTarget = serde_json::from_value(info["xtask-test-double-target"].clone())?;
    let graph = &info["info"]["graphs"][0]["info"];
    let tensors = |key: &str| -> Vec<xtask::onnx::writer::WrapperTensor> {
        graph[key]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| xtask::onnx::writer::WrapperTensor {
                name: t["info"]["name"].as_str().unwrap_or_default().to_string(),
                dims: t["info"]["dimensions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|d| d.as_u64().map(|d| d as usize))
                    .collect(),
                elem_type: 1,
            })
            .collect()
    };
    std::fs::copy(bin, dir.join("ctx.bin"))?;
    let name = graph["graphName"].as_str().unwrap_or_default();
    let bytes = xtask::onnx::writer::epcontext_wrapper(
        name,
        "ctx.bin",
        info["info"]["buildId"].as_str().unwrap_or_default(),
        &tensors("graphInputs"),
        &tensors("graphOutputs"),
    );
    let wrapper = dir.join("ctx.onnx");
    std::fs::write(&wrapper, bytes)?;
    Ok((wrapper, target))
}

/// Reads the double's profiling log and writes the CSV of per-inference timings.
fn profile_viewer(a: &BTreeMap<String, String>) -> Result<()> {
    let log = std::fs::read_to_string(need(a, "--input_log")?)?;
    let us = log
        .lines()
        .find_map(|l| l.strip_prefix("execute_us="))
        .context("not a profiling log of the test double")?;
    std::fs::write(
        need(a, "--output")?,
        format!("Message,Time,Unit\nExecute,{us},us\n"),
    )?;
    Ok(())
}
