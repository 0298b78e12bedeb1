//! Node attributes as the tool reads them: scalars, and the int/float/string lists that
//! operators such as Transpose (`perm`) or Resize (`scales`) carry, so an attribute set can be
//! shown and compared as written (the conformance sweep groups operators by it).

use anyhow::Result;

use super::wire::{Fields, Wire, packed_varints};

#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    Int(i64),
    Float(f32),
    Str(String),
    Ints(Vec<i64>),
    Floats(Vec<f32>),
    Strs(Vec<String>),
    /// Tensors, graphs and sparse tensors: not read (their payload is never copied).
    Other,
}

impl std::fmt::Display for AttrValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fn list<T: std::fmt::Display>(
            f: &mut std::fmt::Formatter<'_>,
            v: &[T],
        ) -> std::fmt::Result {
            let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
            write!(f, "[{}]", items.join(","))
        }
        match self {
            AttrValue::Int(i) => write!(f, "{i}"),
            AttrValue::Float(x) => write!(f, "{x}"),
            AttrValue::Str(s) => write!(f, "{s:?}"),
            AttrValue::Ints(v) => list(f, v),
            AttrValue::Floats(v) => list(f, v),
            AttrValue::Strs(v) => {
                let items: Vec<String> = v.iter().map(|s| format!("{s:?}")).collect();
                write!(f, "[{}]", items.join(","))
            }
            AttrValue::Other => f.write_str("(tensor/graph)"),
        }
    }
}

/// One `AttributeProto`: name (1), f (2), i (3), s (4), floats (7), ints (8), strings (9);
/// repeated numbers are read packed or not (writers differ). The `type` field (20) is not
/// needed: a list attribute that is present but empty reads as an empty int list.
pub(super) fn parse_attribute(bytes: &[u8]) -> Result<(String, AttrValue)> {
    let mut name = String::new();
    let mut value = AttrValue::Other;
    let (mut ints, mut floats, mut strs) = (Vec::new(), Vec::new(), Vec::new());
    let mut kind = 0u64;
    for field in Fields::new(bytes) {
        match field? {
            (1, Wire::Bytes(b)) => name = String::from_utf8_lossy(b).into(),
            (2, Wire::Fixed32(bits)) => value = AttrValue::Float(f32::from_bits(bits)),
            (3, Wire::Varint(i)) => value = AttrValue::Int(i as i64),
            (4, Wire::Bytes(b)) => value = AttrValue::Str(String::from_utf8_lossy(b).into()),
            (7, Wire::Fixed32(bits)) => floats.push(f32::from_bits(bits)),
            (7, Wire::Bytes(packed)) => floats.extend(
                packed
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            ),
            (8, Wire::Varint(i)) => ints.push(i as i64),
            (8, Wire::Bytes(packed)) => ints.extend(packed_varints(packed)?),
            (9, Wire::Bytes(b)) => strs.push(String::from_utf8_lossy(b).into_owned()),
            (20, Wire::Varint(k)) => kind = k,
            _ => {}
        }
    }
    // AttributeType: FLOATS 6, INTS 7, STRINGS 8.
    if !floats.is_empty() || kind == 6 {
        value = AttrValue::Floats(floats);
    } else if !ints.is_empty() || kind == 7 {
        value = AttrValue::Ints(ints);
    } else if !strs.is_empty() || kind == 8 {
        value = AttrValue::Strs(strs);
    }
    Ok((name, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::builder::{Attr, Graph, Node};
    use crate::onnx::proto::parse_model;

    #[test]
    fn list_attributes_read_back_as_written() {
        let g = Graph {
            name: "g".into(),
            inputs: vec![("x".into(), vec![1, 2, 3])],
            outputs: vec![("y".into(), vec![3, 1, 2])],
            nodes: vec![
                Node::new("Transpose", "t", &["x"], &["y"])
                    .attr("perm", Attr::Ints(vec![2, 0, 1]))
                    .attr("scales", Attr::Floats(vec![0.5, 2.0])),
            ],
            ..Graph::default()
        };
        let s = parse_model(&g.to_bytes(20)).unwrap();
        let attrs = &s.nodes[0].attributes;
        assert_eq!(attrs[0], ("perm".into(), AttrValue::Ints(vec![2, 0, 1])));
        assert_eq!(attrs[1].1, AttrValue::Floats(vec![0.5, 2.0]));
        assert_eq!(attrs[0].1.to_string(), "[2,0,1]");
    }

    #[test]
    fn packed_ints_read_like_unpacked_ones() {
        let mut a = Vec::new();
        crate::onnx::rewrite::put_bytes(&mut a, 1, b"perm");
        crate::onnx::rewrite::put_bytes(&mut a, 8, &[0, 2, 1, 3]);
        assert_eq!(
            parse_attribute(&a).unwrap().1,
            AttrValue::Ints(vec![0, 2, 1, 3])
        );
    }
}
