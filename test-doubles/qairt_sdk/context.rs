//! `qnn-context-binary-generator` and `qnn-context-binary-utility`: real QNN context bytes, described by a record keyed by their sha256.

use super::*;

pub(crate) fn generate(rt: &Runtime, a: &BTreeMap<String, String>, corrupt: bool) -> Result<()> {
    for flag in ["--backend", "--model", "--binary_file", "--output_dir"] {
        need(a, flag)?;
    }
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(need(a, "--config_file")?)?)?;
    let htp_path = config["backend_extensions"]["config_file_path"]
        .as_str()
        .context("no backend_extensions.config_file_path")?;
    let htp: xtask_recipe::htp_target::HtpBackendConfig =
        serde_json::from_slice(&std::fs::read(htp_path)?)
            .with_context(|| format!("{htp_path}: not an HTP backend-extension config"))?;
    let mut target = HtpTarget::from_sdk_config(&htp)?;
    let (graph, flags) = read_dlc(need(a, "--dlc_path")?)?;
    // A quantized DLC's graph is QDQ: with preserved (float) I/O its graph-I/O quantization
    // is compiled into the binary; without, the binary's I/O stays fixed point (the utility
    // reports the DLC's UFIXED types).
    if let Some(g) = &mut target.graph {
        g.quantized = flags["quantizer"]["preserve_io_datatype"] == true;
    }
    let tmp = tempfile::tempdir()?;
    let graph_path = tmp.path().join("graph.onnx");
    std::fs::write(&graph_path, &graph)?;
    let wrapper = tmp.path().join("g_ctx.onnx");
    rt.compile_context(&graph_path, &target, &wrapper)?;
    let summary = xtask_onnx::onnx::proto::read_summary(&wrapper)?;
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
    let sha = xtask_base::hashing::sha256_bytes(&qnn);
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
pub(crate) fn read_context(path: &Path) -> Result<(Vec<u8>, serde_json::Value)> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("cannot read the context binary {}", path.display()))?;
    let sha = xtask_base::hashing::sha256_bytes(&bytes);
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

pub(crate) fn utility(a: &BTreeMap<String, String>) -> Result<()> {
    let (_, meta) = read_context(Path::new(need(a, "--context_binary")?))?;
    let json = serde_json::json!({ "info": meta["info"] });
    std::fs::write(need(a, "--json_file")?, serde_json::to_vec_pretty(&json)?)?;
    Ok(())
}

/// An EPContext wrapper beside the QNN bytes of the binary, from the binary's own trailer.
pub(crate) fn wrapper_for_binary(
    bin: &Path,
    dir: &Path,
) -> Result<(PathBuf, HtpTarget, serde_json::Value)> {
    let (qnn, meta) = read_context(bin)?;
    let target: HtpTarget = serde_json::from_value(meta["target"].clone())?;
    let tensors = |key: &str| -> Result<Vec<xtask_onnx::onnx::writer::WrapperTensor>> {
        meta[key]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                let d: Option<DType> = serde_json::from_value(t["dtype"].clone())?;
                Ok(xtask_onnx::onnx::writer::WrapperTensor {
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
    let bytes = xtask_onnx::onnx::writer::epcontext_wrapper(
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
