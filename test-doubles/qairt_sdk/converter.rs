//! `qairt-converter`: a DLC carrying the converted graph and the flags it was made with.

use super::*;

pub(crate) fn convert(rt: &Runtime, a: &BTreeMap<String, String>) -> Result<()> {
    let onnx = std::path::absolute(need(a, "--input_network")?)?;
    let out = need(a, "--output_path")?;
    let bitwidth: u8 = need(a, "--float_bitwidth")?.parse()?;
    if ![16, 32].contains(&bitwidth) {
        bail!("--float_bitwidth must be 16 or 32, not {bitwidth}");
    }
    let preserve = a.contains_key("--preserve_io_datatype");
    // `--source_model_input_datatype NAME DTYPE`: the DLC's input NAME takes DTYPE.
    let mut declared = BTreeMap::new();
    for (k, v) in a {
        if let Some(name) = k.strip_prefix("--source_model_input_datatype:") {
            let qnn = match v.as_str() {
                "int32" => "QNN_DATATYPE_INT_32",
                "float32" => "QNN_DATATYPE_FLOAT_32",
                "bool" => "QNN_DATATYPE_BOOL_8",
                other => bail!(
                    "--source_model_input_datatype {name} {other}: not a data type the test double reproduces"
                ),
            };
            declared.insert(name.to_string(), qnn);
        }
    }
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
        "graphInputs": io_json(session.input_contract(), preserve, &declared)?,
        "graphOutputs": io_json(session.output_contract(), preserve, &BTreeMap::new())?,
    });
    drop(session);
    let (dlc, _) = rt.dump_dlc(&graph_path, &tmp.path().join("ir"), false)?;
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
pub(crate) fn read_dlc(path: &str) -> Result<(Vec<u8>, serde_json::Value)> {
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
