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
    let overrides = a
        .get("--quantization_overrides")
        .map(|p| read_overrides(p))
        .transpose()?;
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
        "quantization_overrides": overrides.is_some(),
        "graphInputs": io_json(session.input_contract(), preserve, &declared)?,
        "graphOutputs": io_json(session.output_contract(), preserve, &BTreeMap::new())?,
    });
    drop(session);
    let (dlc, _) = rt.dump_dlc(&graph_path, &tmp.path().join("ir"), false)?;
    write_dlc_members(&dlc, &graph, &flags, overrides.as_ref())?;
    std::fs::copy(&dlc, out)?;
    Ok(())
}

/// `--quantization_overrides FILE`: AIMET encodings, `activation_encodings` and
/// `param_encodings` objects of tensor name → list of encodings (bitwidth, min, max, scale,
/// offset), as the QAIRT quantization specification describes them. A file that is not that
/// is an error, as the real converter's JSON loading makes it.
fn read_overrides(path: &str) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--quantization_overrides {path}: cannot read"))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("--quantization_overrides {path}: not JSON"))?;
    for key in ["activation_encodings", "param_encodings"] {
        let Some(map) = v.get(key).and_then(|m| m.as_object()) else {
            bail!("--quantization_overrides {path}: no `{key}` object");
        };
        for (name, entries) in map {
            let ok = entries.as_array().is_some_and(|l| {
                !l.is_empty()
                    && l.iter().all(|e| {
                        ["bitwidth", "min", "max", "scale", "offset"]
                            .iter()
                            .all(|k| e.get(k).is_some_and(|x| x.is_number()))
                    })
            });
            if !ok {
                bail!(
                    "--quantization_overrides {path}: {key}.{name} is not a list of encodings (bitwidth, min, max, scale, offset)"
                );
            }
        }
    }
    Ok(v)
}

/// Appends the double's members to the DLC the embedded runtime dumped: the graph, the
/// flags, and the converter's quantization overrides when it was given some.
pub(crate) fn write_dlc_members(
    dlc: &Path,
    graph: &[u8],
    flags: &serde_json::Value,
    overrides: Option<&serde_json::Value>,
) -> Result<()> {
    let mut zip = zip::ZipWriter::new_append(
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(dlc)?,
    )?;
    zip.start_file(GRAPH_MEMBER, zip::write::SimpleFileOptions::default())?;
    zip.write_all(graph)?;
    zip.start_file(FLAGS_MEMBER, zip::write::SimpleFileOptions::default())?;
    zip.write_all(&serde_json::to_vec_pretty(flags)?)?;
    if let Some(o) = overrides {
        zip.start_file(OVERRIDES_MEMBER, zip::write::SimpleFileOptions::default())?;
        zip.write_all(&serde_json::to_vec(o)?)?;
    }
    zip.finish()?;
    Ok(())
}

/// The graph and the converter's record a DLC of this double carries.
pub(crate) fn read_dlc(path: &str) -> Result<(Vec<u8>, serde_json::Value)> {
    let (graph, flags, _) = read_dlc_with_overrides(path)?;
    Ok((graph, flags))
}

/// `read_dlc`, and the quantization overrides the converter was given (JSON null if none).
pub(crate) fn read_dlc_with_overrides(
    path: &str,
) -> Result<(Vec<u8>, serde_json::Value, serde_json::Value)> {
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
    let overrides = match member(OVERRIDES_MEMBER) {
        Ok(bytes) => serde_json::from_slice(&bytes)?,
        Err(_) => serde_json::Value::Null,
    };
    Ok((graph, flags, overrides))
}

// ---------------------------------------------------------------------------------------------
// qnn-context-binary-generator / -utility: the binary and its trailer
