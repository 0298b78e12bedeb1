//! Rewriting ONNX protobuf bytes without a protobuf dependency: set a node's string attribute
//! (an EPContext wrapper pointed at its renamed binary) or add graph outputs (intermediate
//! tensors exposed for bisect and lint). Everything not touched is copied byte for byte.

use anyhow::{Result, bail};

use super::proto::{parse_attribute, parse_node};
use super::wire::{Fields, Wire};

/// Returns a copy of the model with the string attribute `attr` of every node of type
/// `op_type` set to `value` (used to point an EPContext wrapper at its renamed `.bin`).
/// Lengths of the enclosing messages are re-encoded; everything else is copied byte for byte.
pub fn set_node_string_attr(
    model: &[u8],
    op_type: &str,
    attr: &str,
    value: &str,
) -> Result<Vec<u8>> {
    rewrite_fields(model, &mut |num, payload| match num {
        7 => Ok(Some(rewrite_fields(payload, &mut |num, node| {
            if num != 1 || parse_node(node)?.op_type != op_type {
                return Ok(None);
            }
            Ok(Some(rewrite_fields(node, &mut |num, attribute| {
                if num != 5 || parse_attribute(attribute)?.0 != attr {
                    return Ok(None);
                }
                let mut out = Vec::new();
                for field in Fields::new(attribute) {
                    match field? {
                        (4, Wire::Bytes(_)) => put_bytes(&mut out, 4, value.as_bytes()),
                        (n, Wire::Bytes(b)) => put_bytes(&mut out, n, b),
                        (n, Wire::Varint(v)) => {
                            put_varint(&mut out, u64::from(n) << 3);
                            put_varint(&mut out, v);
                        }
                        (n, Wire::Fixed32(v)) => {
                            put_varint(&mut out, (u64::from(n) << 3) | 5);
                            out.extend_from_slice(&v.to_le_bytes());
                        }
                        (_, Wire::Fixed) => bail!("unexpected fixed-width field in an attribute"),
                    }
                }
                Ok(Some(out))
            })?))
        })?)),
        _ => Ok(None),
    })
}

/// Returns a copy of the model whose graph also outputs `names` (intermediate tensors). The
/// outputs carry no type: ONNX Runtime infers it from the graph.
pub fn add_graph_outputs(model: &[u8], names: &[String]) -> Result<Vec<u8>> {
    rewrite_fields(model, &mut |num, graph| {
        if num != 7 {
            return Ok(None);
        }
        let mut out = graph.to_vec();
        for name in names {
            let mut vi = Vec::new();
            put_bytes(&mut vi, 1, name.as_bytes());
            put_bytes(&mut out, 12, &vi);
        }
        Ok(Some(out))
    })
}

type Rewriter<'f> = dyn FnMut(u32, &[u8]) -> Result<Option<Vec<u8>>> + 'f;

/// Copies a message, letting `f` replace the payload of length-delimited fields.
pub(super) fn rewrite_fields(msg: &[u8], f: &mut Rewriter<'_>) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(msg.len());
    let mut fields = Fields::new(msg);
    let mut start = 0;
    while fields.pos < msg.len() {
        let (num, wire) = fields.next_field()?;
        let replaced = match wire {
            Wire::Bytes(payload) => f(num, payload)?,
            _ => None,
        };
        match replaced {
            Some(payload) => put_bytes(&mut out, num, &payload),
            None => out.extend_from_slice(&msg[start..fields.pos]),
        }
        start = fields.pos;
    }
    Ok(out)
}

pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub fn put_bytes(out: &mut Vec<u8>, num: u32, payload: &[u8]) {
    put_varint(out, (u64::from(num) << 3) | 2);
    put_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

#[cfg(test)]
mod rewrite_tests {
    use super::*;
    use crate::onnx::proto::parse_model;

    #[test]
    fn renames_the_ep_cache_context_of_an_epcontext_node() {
        let mut attr = Vec::new();
        put_bytes(&mut attr, 1, b"ep_cache_context");
        put_bytes(&mut attr, 4, b"old_qnn.bin");
        let mut node = Vec::new();
        put_bytes(&mut node, 4, b"EPContext");
        put_bytes(&mut node, 5, &attr);
        let mut graph = Vec::new();
        put_bytes(&mut graph, 1, &node);
        let mut model = Vec::new();
        put_varint(&mut model, 1 << 3);
        put_varint(&mut model, 10);
        put_bytes(&mut model, 7, &graph);
        let out = set_node_string_attr(
            &model,
            "EPContext",
            "ep_cache_context",
            "a_much_longer_name.bin",
        )
        .unwrap();
        let summary = parse_model(&out).unwrap();
        assert_eq!(
            summary.nodes[0].attr_str("ep_cache_context"),
            Some("a_much_longer_name.bin")
        );
        assert_eq!(&out[..2], &model[..2], "ir_version copied as is");
    }
}
