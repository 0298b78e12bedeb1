//! A minimal reader of the ONNX protobuf: just what the tool must check itself (nodes and their
//! op types, EPContext attributes, external-data locations, metadata), without a protobuf
//! dependency. Initializer payloads are skipped, never copied.

use std::path::Path;

use anyhow::{Context, Result, bail};

pub use super::attr::AttrValue;
pub(super) use super::attr::parse_attribute;
use super::wire::{Fields, Wire};

#[derive(Debug, Default, Clone)]
pub struct OnnxNode {
    pub name: String,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub op_type: String,
    pub domain: String,
    pub attributes: Vec<(String, AttrValue)>,
}

impl OnnxNode {
    pub fn attr_str(&self, name: &str) -> Option<&str> {
        self.attributes.iter().find_map(|(n, v)| match v {
            AttrValue::Str(s) if n == name => Some(s.as_str()),
            _ => None,
        })
    }
    pub fn attr_float(&self, name: &str) -> Option<f32> {
        self.attributes.iter().find_map(|(n, v)| match v {
            AttrValue::Float(f) if n == name => Some(*f),
            _ => None,
        })
    }
    pub fn attr_int(&self, name: &str) -> Option<i64> {
        self.attributes.iter().find_map(|(n, v)| match v {
            AttrValue::Int(i) if n == name => Some(*i),
            _ => None,
        })
    }
}

#[derive(Debug, Default, Clone)]
pub struct OnnxSummary {
    pub nodes: Vec<OnnxNode>,
    /// Distinct `location` values of initializers stored as external data (relative paths).
    pub external_data: Vec<String>,
    /// Per external-data location, the bytes its initializers need (the largest `offset +
    /// length` they declare): a shorter file is truncated.
    pub external_extent: Vec<(String, u64)>,
    pub initializers: Vec<String>,
    pub graph_inputs: Vec<String>,
    pub graph_outputs: Vec<String>,
    /// Element type and dims of each graph input/output, by name, as the file declares them
    /// (`-1` for a symbolic or missing dim; elem type 0 when the type is not a tensor).
    pub io_types: Vec<(String, i32, Vec<i64>)>,
    pub metadata: Vec<(String, String)>,
}

impl OnnxSummary {
    /// The graph's real inputs (initializers listed as inputs by old exporters left out) and
    /// outputs, as (name, dtype, dims) for `recipe::check_graph_contract`.
    pub fn io_contract(&self) -> IoContract {
        let pick = |names: &[String]| -> Vec<(String, Option<crate::tensor::DType>, Vec<i64>)> {
            names
                .iter()
                .filter(|n| !self.initializers.contains(n))
                .map(|n| {
                    let (elem, dims) = self
                        .io_types
                        .iter()
                        .find(|(name, _, _)| name == n)
                        .map(|(_, e, d)| (*e, d.clone()))
                        .unwrap_or((0, Vec::new()));
                    (n.clone(), dtype_of_elem(elem), dims)
                })
                .collect()
        };
        (pick(&self.graph_inputs), pick(&self.graph_outputs))
    }
}

/// (inputs, outputs) of a graph as (name, dtype, dims).
pub type IoContract = (
    Vec<(String, Option<crate::tensor::DType>, Vec<i64>)>,
    Vec<(String, Option<crate::tensor::DType>, Vec<i64>)>,
);

/// ONNX `TensorProto.DataType` of the tool's dtypes.
pub fn elem_type_of(dtype: crate::tensor::DType) -> u64 {
    use crate::tensor::DType;
    match dtype {
        DType::F32 => 1,
        DType::F16 => 10,
        DType::I64 => 7,
        DType::Bool => 9,
    }
}

/// ONNX `TensorProto.DataType` → the dtypes the tool handles (the inverse of `elem_type_of`).
pub fn dtype_of_elem(elem: i32) -> Option<crate::tensor::DType> {
    use crate::tensor::DType;
    [DType::F32, DType::F16, DType::I64, DType::Bool]
        .into_iter()
        .find(|&d| i64::from(elem) == elem_type_of(d) as i64)
}

pub fn read_summary(path: &Path) -> Result<OnnxSummary> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse_model(&bytes).with_context(|| format!("{} is not a valid ONNX model", path.display()))
}

pub fn parse_model(bytes: &[u8]) -> Result<OnnxSummary> {
    let mut summary = OnnxSummary::default();
    for field in Fields::new(bytes) {
        let (num, value) = field?;
        match (num, value) {
            (7, Wire::Bytes(graph)) => parse_graph(graph, &mut summary)?,
            (14, Wire::Bytes(entry)) => summary.metadata.push(parse_string_pair(entry)?),
            _ => {}
        }
    }
    if summary.nodes.is_empty() {
        bail!("no graph nodes found");
    }
    Ok(summary)
}

fn parse_graph(bytes: &[u8], summary: &mut OnnxSummary) -> Result<()> {
    for field in Fields::new(bytes) {
        match field? {
            (1, Wire::Bytes(node)) => summary.nodes.push(parse_node(node)?),
            (11, Wire::Bytes(vi)) => {
                summary.graph_inputs.push(value_info_name(vi)?);
                summary.io_types.push(value_info_type(vi)?);
            }
            (12, Wire::Bytes(vi)) => {
                summary.graph_outputs.push(value_info_name(vi)?);
                summary.io_types.push(value_info_type(vi)?);
            }
            (5, Wire::Bytes(tensor)) => {
                summary.initializers.push(tensor_name(tensor)?);
                if let Some((loc, end)) = external_location(tensor)? {
                    match summary.external_extent.iter_mut().find(|(l, _)| *l == loc) {
                        Some((_, most)) => *most = (*most).max(end),
                        None => summary.external_extent.push((loc.clone(), end)),
                    }
                    if !summary.external_data.contains(&loc) {
                        summary.external_data.push(loc);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

pub(super) fn parse_node(bytes: &[u8]) -> Result<OnnxNode> {
    let mut node = OnnxNode::default();
    for field in Fields::new(bytes) {
        match field? {
            (1, Wire::Bytes(b)) => node.inputs.push(utf8(b)?),
            (2, Wire::Bytes(b)) => node.outputs.push(utf8(b)?),
            (3, Wire::Bytes(b)) => node.name = utf8(b)?,
            (4, Wire::Bytes(b)) => node.op_type = utf8(b)?,
            (7, Wire::Bytes(b)) => node.domain = utf8(b)?,
            (5, Wire::Bytes(b)) => node.attributes.push(parse_attribute(b)?),
            _ => {}
        }
    }
    Ok(node)
}

fn value_info_name(bytes: &[u8]) -> Result<String> {
    for field in Fields::new(bytes) {
        if let (1, Wire::Bytes(b)) = field? {
            return utf8(b);
        }
    }
    Ok(String::new())
}

/// (name, elem type, dims) of a ValueInfoProto: `type` (2) → `tensor_type` (1) →
/// `elem_type` (1) and `shape` (2) → `dim` (1) → `dim_value` (1) or `dim_param` (2, → -1).
fn value_info_type(bytes: &[u8]) -> Result<(String, i32, Vec<i64>)> {
    let mut name = String::new();
    let (mut elem, mut dims) = (0i32, Vec::new());
    for field in Fields::new(bytes) {
        match field? {
            (1, Wire::Bytes(b)) => name = utf8(b)?,
            (2, Wire::Bytes(ty)) => {
                for f in Fields::new(ty) {
                    let (1, Wire::Bytes(tensor)) = f? else {
                        continue;
                    };
                    for g in Fields::new(tensor) {
                        match g? {
                            (1, Wire::Varint(e)) => elem = e as i32,
                            (2, Wire::Bytes(shape)) => {
                                for d in Fields::new(shape) {
                                    let (1, Wire::Bytes(dim)) = d? else { continue };
                                    let mut value = -1i64;
                                    for h in Fields::new(dim) {
                                        if let (1, Wire::Varint(v)) = h? {
                                            value = v as i64;
                                        }
                                    }
                                    dims.push(value);
                                }
                            }
                            _ => {}
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok((name, elem, dims))
}

fn tensor_name(bytes: &[u8]) -> Result<String> {
    for field in Fields::new(bytes) {
        if let (8, Wire::Bytes(b)) = field? {
            return utf8(b);
        }
    }
    Ok(String::new())
}

/// An external initializer's location and the end of its bytes (`offset + length`, 0 when
/// it declares neither).
fn external_location(tensor: &[u8]) -> Result<Option<(String, u64)>> {
    let mut external = false;
    let (mut location, mut offset, mut length) = (None, 0u64, 0u64);
    let number = |k: &str, v: &str| {
        v.parse::<u64>()
            .with_context(|| format!("external data `{k}` = {v:?} is not a byte count"))
    };
    for field in Fields::new(tensor) {
        match field? {
            (14, Wire::Varint(1)) => external = true,
            (13, Wire::Bytes(entry)) => {
                let (k, v) = parse_string_pair(entry)?;
                match k.as_str() {
                    "location" => location = Some(v),
                    "offset" => offset = number(&k, &v)?,
                    "length" => length = number(&k, &v)?,
                    _ => {}
                }
            }
            _ => {}
        }
    }
    let end = offset
        .checked_add(length)
        .context("external data offset + length overflows")?;
    Ok(if external {
        location.map(|l| (l, end))
    } else {
        None
    })
}

fn parse_string_pair(bytes: &[u8]) -> Result<(String, String)> {
    let (mut k, mut v) = (String::new(), String::new());
    for field in Fields::new(bytes) {
        match field? {
            (1, Wire::Bytes(b)) => k = utf8(b)?,
            (2, Wire::Bytes(b)) => v = utf8(b)?,
            _ => {}
        }
    }
    Ok((k, v))
}

fn utf8(b: &[u8]) -> Result<String> {
    String::from_utf8(b.to_vec()).context("string field is not UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_bytes(num: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![((num << 3) | 2) as u8, payload.len() as u8];
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn reads_node_op_type_and_string_attribute() {
        let attr = [field_bytes(1, b"source"), field_bytes(4, b"QNN")].concat();
        let node = [field_bytes(4, b"EPContext"), field_bytes(5, &attr)].concat();
        let graph = field_bytes(1, &node);
        let model = field_bytes(7, &graph);
        let summary = parse_model(&model).unwrap();
        assert_eq!(summary.nodes[0].op_type, "EPContext");
        assert_eq!(summary.nodes[0].attr_str("source"), Some("QNN"));
    }

    #[test]
    fn truncated_model_is_an_error() {
        let model = vec![(7 << 3) | 2, 50, 1, 2];
        assert!(parse_model(&model).is_err());
    }
}
