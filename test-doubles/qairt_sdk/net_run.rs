//! `qnn-net-run`: the DLC's graph on the CPU backend, or a context binary on the HTP; raw files in and out.

use super::*;

/// A DLC's (or a context record's) `graphInputs` / `graphOutputs`: name → (QNN data type, dims).
pub(crate) fn dlc_io(
    graph_io: &serde_json::Value,
    key: &str,
) -> BTreeMap<String, (String, Vec<usize>)> {
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
}

pub(crate) fn net_run(rt: &Runtime, a: &BTreeMap<String, String>) -> Result<()> {
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
    let (dlc_inputs, dlc_outputs) = (
        dlc_io(&graph_io, "graphInputs"),
        dlc_io(&graph_io, "graphOutputs"),
    );
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
            // Float files for bool and int32 inputs are converted by the tool itself (the
            // SampleApp's float-to-native conversion covers them); int64 and fp16 have no such
            // conversion and need native files.
            let converts_float =
                ["QNN_DATATYPE_INT_32", "QNN_DATATYPE_BOOL_8"].contains(&qnn.as_str());
            if preserve && qnn != "QNN_DATATYPE_FLOAT_32" && !native && !converts_float {
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
            // The raw tensor name: a `/` makes subfolders; a native output that is not
            // float32 is `<name>_native.raw` (SampleApp `IOTensor.cpp` `writeOutputTensors`).
            let suffix = if file_type == "QNN_DATATYPE_FLOAT_32" {
                ".raw"
            } else {
                "_native.raw"
            };
            let path = dir.join(format!("{}{suffix}", name.trim_start_matches('/')));
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
