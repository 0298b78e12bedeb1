//! What `qnn-context-binary-utility --json_file` says about a context binary: the QNN graph's
//! name, the SDK build and the graph's inputs and outputs, as the EPContext wrapper needs them.
//!
//! Two layouts exist. The legacy one (the default through 2.4x as far as known, and what ORT's
//! `gen_qnn_ctx_onnx_model.py` reads): `info.buildId`,
//! `info.graphs[].info.{graphName, graphInputs[], graphOutputs[]}`, each tensor
//! `.info.{name, dataType (a QNN_DATATYPE_* string), dimensions}`. With
//! `--unified_qairt_format` (seen with 2.46) the utility writes `graphInfoV*` keys and integer
//! data types; that layout is detected and refused with what to do (run the utility without
//! the flag), rather than guessed at.

use anyhow::{Context, Result, bail};
use serde_json::Value;

use xtask_onnx::onnx::writer::WrapperTensor;

pub struct ContextInfo {
    pub build_id: String,
    pub graph_name: String,
    pub inputs: Vec<WrapperTensor>,
    pub outputs: Vec<WrapperTensor>,
}

/// True when the JSON is the unified QAIRT layout: a `graphInfoV*` key or an integer `dataType`.
fn is_unified(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, v)| {
            k.starts_with("graphInfoV") || (k == "dataType" && v.is_number()) || is_unified(v)
        }),
        Value::Array(a) => a.iter().any(is_unified),
        _ => false,
    }
}

pub fn parse(json: &Value) -> Result<ContextInfo> {
    if is_unified(json) {
        bail!(
            "qnn-context-binary-utility wrote the unified QAIRT layout (`graphInfoV*` keys, integer \
             dataTypes, from --unified_qairt_format); this tool reads the legacy layout \
             (`info.graphs[].info.graphInputs[].info.dataType` as QNN_DATATYPE_* strings): run the \
             utility without --unified_qairt_format"
        );
    }
    let graphs = json["info"]["graphs"]
        .as_array()
        .context("the context JSON has no info.graphs")?;
    let graph = match graphs.as_slice() {
        [one] => &one["info"],
        [] => bail!("the context JSON lists no graph"),
        many => bail!(
            "the context binary holds {} graphs; one graph per binary is supported",
            many.len()
        ),
    };
    let graph_name = graph["graphName"]
        .as_str()
        .context("the context JSON names no graph (info.graphs[0].info.graphName)")?
        .to_string();
    let tensors = |key: &str| -> Result<Vec<WrapperTensor>> {
        graph[key]
            .as_array()
            .with_context(|| format!("the context JSON has no {key}"))?
            .iter()
            .map(wrapper_tensor)
            .collect()
    };
    Ok(ContextInfo {
        build_id: json["info"]["buildId"]
            .as_str()
            .unwrap_or("unknown")
            .to_string(),
        graph_name,
        inputs: tensors("graphInputs")?,
        outputs: tensors("graphOutputs")?,
    })
}

fn wrapper_tensor(t: &Value) -> Result<WrapperTensor> {
    let info = &t["info"];
    let name = info["name"].as_str().context("tensor without a name")?;
    let elem_type = match info["dataType"].as_str() {
        Some("QNN_DATATYPE_FLOAT_32") => 1,
        Some("QNN_DATATYPE_FLOAT_16") => 10,
        Some("QNN_DATATYPE_INT_64") => 7,
        Some("QNN_DATATYPE_BOOL_8") => 9,
        other => bail!(
            "tensor `{name}`: unsupported context I/O data type {other:?} (quantized I/O is not supported)"
        ),
    };
    Ok(WrapperTensor {
        name: name.to_string(),
        dims: info["dimensions"]
            .as_array()
            .with_context(|| format!("tensor `{name}` without dimensions"))?
            .iter()
            .map(|d| d.as_u64().map(|d| d as usize))
            .collect::<Option<Vec<_>>>()
            .with_context(|| format!("tensor `{name}`: dimensions are not all integers"))?,
        elem_type,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Value {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/context-utility-json")
            .join(name);
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    #[test]
    fn the_legacy_layout_is_read() {
        let info = parse(&fixture("legacy.json")).unwrap();
        assert_eq!(info.graph_name, "action_context");
        assert_eq!(info.build_id, "v2.47.0.260601114230_xxxxxx");
        let ins: Vec<(&str, u64, &[usize])> = info
            .inputs
            .iter()
            .map(|t| (t.name.as_str(), t.elem_type, t.dims.as_slice()))
            .collect();
        assert_eq!(
            ins,
            [
                ("keys", 1, &[8, 1, 130, 32][..]),
                ("token_ids", 7, &[1, 130][..])
            ]
        );
        assert_eq!(info.outputs[0].elem_type, 10);
    }

    #[test]
    fn the_unified_layout_is_refused_with_what_to_do() {
        let err = parse(&fixture("unified.json")).err().unwrap().to_string();
        assert!(
            err.contains("unified QAIRT layout") && err.contains("without --unified_qairt_format"),
            "{err}"
        );
        // An integer dataType alone is enough to tell.
        let mut legacy = fixture("legacy.json");
        legacy["info"]["graphs"][0]["info"]["graphInputs"][0]["info"]["dataType"] = 562.into();
        assert!(parse(&legacy).is_err());
    }

    #[test]
    fn quantized_io_and_missing_parts_are_errors() {
        let mut v = fixture("legacy.json");
        v["info"]["graphs"][0]["info"]["graphInputs"][0]["info"]["dataType"] =
            "QNN_DATATYPE_UFIXED_POINT_8".into();
        assert!(
            parse(&v)
                .err()
                .unwrap()
                .to_string()
                .contains("tensor `keys`")
        );
        let mut v = fixture("legacy.json");
        v["info"]["graphs"] = serde_json::json!([]);
        assert!(parse(&v).is_err());
    }
}
