//! Conversions between the tool's tensors and ORT values: zero-copy session inputs, owned
//! outputs, and the dtype/shape contract a session declares.

use anyhow::{Result, bail};
use ort::session::SessionInputValue;
use ort::value::{DynValue, TensorElementType, TensorRef, ValueType};

use xtask_onnx::tensor::{DType, Tensor};

pub fn outlet_contract(name: &str, ty: &ValueType) -> (String, Option<DType>, Vec<i64>) {
    match ty {
        ValueType::Tensor { ty, shape, .. } => (name.to_string(), dtype_of(*ty), shape.to_vec()),
        _ => (name.to_string(), None, Vec::new()),
    }
}

fn dtype_of(ty: TensorElementType) -> Option<DType> {
    match ty {
        TensorElementType::Float32 => Some(DType::F32),
        TensorElementType::Float16 => Some(DType::F16),
        TensorElementType::Int64 => Some(DType::I64),
        TensorElementType::Bool => Some(DType::Bool),
        _ => None,
    }
}

/// A zero-copy view of a tensor as a session input (no clone of the data per run).
pub fn input_view(t: &Tensor) -> Result<SessionInputValue<'_>> {
    Ok(match t {
        Tensor::F32(a) => TensorRef::from_array_view(a.view())?.into(),
        Tensor::F16(a) => TensorRef::from_array_view(a.view())?.into(),
        Tensor::I64(a) => TensorRef::from_array_view(a.view())?.into(),
        Tensor::Bool(a) => TensorRef::from_array_view(a.view())?.into(),
    })
}

pub fn from_ort_value(v: &DynValue) -> Result<Tensor> {
    if let Ok(a) = v.try_extract_array::<f32>() {
        return Ok(Tensor::F32(a.to_owned()));
    }
    if let Ok(a) = v.try_extract_array::<half::f16>() {
        return Ok(Tensor::F16(a.to_owned()));
    }
    if let Ok(a) = v.try_extract_array::<i64>() {
        return Ok(Tensor::I64(a.to_owned()));
    }
    if let Ok(a) = v.try_extract_array::<bool>() {
        return Ok(Tensor::Bool(a.to_owned()));
    }
    bail!("unsupported output element type")
}
