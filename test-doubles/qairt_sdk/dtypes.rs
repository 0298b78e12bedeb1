//! QNN data types of the double: names, sizes, raw encodings, tensors from values.

use super::*;

pub(crate) fn qnn_name(d: Option<DType>) -> &'static str {
    xtask_ctx_build::toolchain::sdk::steps::qnn_data_type(d)
}

/// Bytes per element of a QNN data type name.
pub(crate) fn qnn_size(qnn: &str) -> Result<usize> {
    Ok(match qnn {
        "QNN_DATATYPE_FLOAT_32" | "QNN_DATATYPE_INT_32" => 4,
        "QNN_DATATYPE_FLOAT_16" => 2,
        "QNN_DATATYPE_INT_64" => 8,
        "QNN_DATATYPE_BOOL_8" => 1,
        other => bail!("data type {other} is not supported by the test double"),
    })
}

/// Values of a file in a QNN data type, widened to f64.
pub(crate) fn decode(bytes: &[u8], qnn: &str) -> Result<Vec<f64>> {
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

pub(crate) fn encode(values: &[f64], qnn: &str) -> Vec<u8> {
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
pub(crate) fn tensor_of(d: Option<DType>, shape: Vec<usize>, v: Vec<f64>) -> Result<Tensor> {
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

/// The I/O of a graph as the DLC records it: name, QNN data type, dims; `declared` holds the
/// inputs given another type with `--source_model_input_datatype` (an unknown name is an error).
pub(crate) fn io_json(
    list: Vec<(String, Option<DType>, Vec<i64>)>,
    preserve: bool,
    declared: &BTreeMap<String, &str>,
) -> Result<Vec<serde_json::Value>> {
    for name in declared.keys() {
        if !list.iter().any(|(n, _, _)| n == name) {
            bail!("--source_model_input_datatype {name}: the graph has no input {name}");
        }
    }
    Ok(list
        .into_iter()
        .map(|(name, d, dims)| {
            let qnn = match (declared.get(&name), preserve, d) {
                (Some(q), _, _) => q,
                (None, true, d) => qnn_name(d),
                (None, false, Some(DType::I64)) => "QNN_DATATYPE_INT_32",
                (None, false, Some(DType::Bool)) => "QNN_DATATYPE_BOOL_8",
                (None, false, _) => "QNN_DATATYPE_FLOAT_32",
            };
            serde_json::json!({ "info": { "name": name, "dataType": qnn, "dimensions": dims } })
        })
        .collect())
}

// ---------------------------------------------------------------------------------------------
// qairt-converter
