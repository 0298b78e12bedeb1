//! Writes small ONNX graphs directly as protobuf (no protobuf dependency): enough for the
//! benchmark's hundred-megabyte-class MLP, whose weights go to an external-data file.

use anyhow::Result;

use crate::onnx::rewrite::{put_bytes, put_varint};

const FLOAT: u64 = 1;

fn put_str(out: &mut Vec<u8>, num: u32, s: &str) {
    put_bytes(out, num, s.as_bytes());
}

fn put_int(out: &mut Vec<u8>, num: u32, v: u64) {
    put_varint(out, u64::from(num) << 3);
    put_varint(out, v);
}

fn value_info(name: &str, shape: &[usize]) -> Vec<u8> {
    let mut shape_msg = Vec::new();
    for &d in shape {
        let mut dim = Vec::new();
        put_int(&mut dim, 1, d as u64);
        put_bytes(&mut shape_msg, 1, &dim);
    }
    let mut tensor_type = Vec::new();
    put_int(&mut tensor_type, 1, FLOAT);
    put_bytes(&mut tensor_type, 2, &shape_msg);
    let mut type_proto = Vec::new();
    put_bytes(&mut type_proto, 1, &tensor_type);
    let mut vi = Vec::new();
    put_str(&mut vi, 1, name);
    put_bytes(&mut vi, 2, &type_proto);
    vi
}

fn node(op: &str, name: &str, inputs: &[&str], outputs: &[&str]) -> Vec<u8> {
    let mut n = Vec::new();
    for i in inputs {
        put_str(&mut n, 1, i);
    }
    for o in outputs {
        put_str(&mut n, 2, o);
    }
    put_str(&mut n, 3, name);
    put_str(&mut n, 4, op);
    n
}

/// A float initializer stored in `location` at `offset` (external data).
fn external_initializer(
    name: &str,
    dims: &[usize],
    location: &str,
    offset: usize,
    length: usize,
) -> Vec<u8> {
    let mut t = Vec::new();
    for &d in dims {
        put_int(&mut t, 1, d as u64);
    }
    put_int(&mut t, 2, FLOAT);
    put_str(&mut t, 8, name);
    for (k, v) in [
        ("location", location.to_string()),
        ("offset", offset.to_string()),
        ("length", length.to_string()),
    ] {
        let mut entry = Vec::new();
        put_str(&mut entry, 1, k);
        put_str(&mut entry, 2, &v);
        put_bytes(&mut t, 13, &entry);
    }
    put_int(&mut t, 14, 1);
    t
}

/// `y = (silu(x @ w1)) @ w2` with x `[1, seq, width]`, hidden `hidden`; weights are seeded
/// pseudo-random values scaled by 1/sqrt(fan_in), written to `<onnx>.data`.
pub fn write_mlp(
    onnx_path: &std::path::Path,
    seq: usize,
    width: usize,
    hidden: usize,
    seed: u64,
) -> Result<()> {
    let data_name = format!(
        "{}.data",
        onnx_path.file_name().unwrap_or_default().to_string_lossy()
    );
    let w1 = seeded_weights(width * hidden, seed, 1.0 / (width as f32).sqrt());
    let w2 = seeded_weights(hidden * width, seed + 1, 1.0 / (hidden as f32).sqrt());
    let mut data: Vec<u8> = Vec::with_capacity((w1.len() + w2.len()) * 4);
    data.extend(w1.iter().flat_map(|v| v.to_le_bytes()));
    let w2_offset = data.len();
    data.extend(w2.iter().flat_map(|v| v.to_le_bytes()));

    let mut graph = Vec::new();
    for n in [
        node("MatMul", "up", &["x", "w1"], &["h"]),
        node("Sigmoid", "gate", &["h"], &["g"]),
        node("Mul", "silu", &["h", "g"], &["a"]),
        node("MatMul", "down", &["a", "w2"], &["y"]),
    ] {
        put_bytes(&mut graph, 1, &n);
    }
    put_str(&mut graph, 2, "mlp");
    put_bytes(
        &mut graph,
        5,
        &external_initializer("w1", &[width, hidden], &data_name, 0, w2_offset),
    );
    put_bytes(
        &mut graph,
        5,
        &external_initializer(
            "w2",
            &[hidden, width],
            &data_name,
            w2_offset,
            data.len() - w2_offset,
        ),
    );
    put_bytes(&mut graph, 11, &value_info("x", &[1, seq, width]));
    put_bytes(&mut graph, 12, &value_info("y", &[1, seq, width]));

    let mut opset = Vec::new();
    put_str(&mut opset, 1, "");
    put_int(&mut opset, 2, 20);
    let mut model = Vec::new();
    put_int(&mut model, 1, 10);
    put_str(&mut model, 2, "xtask-bench");
    put_bytes(&mut model, 7, &graph);
    put_bytes(&mut model, 8, &opset);
    xtask_base::atomic::write_atomic(&onnx_path.with_file_name(&data_name), &data)?;
    xtask_base::atomic::write_atomic(onnx_path, &model)
}

/// Deterministic values in [-scale, scale) (xorshift64*), independent of any RNG crate.
pub fn seeded_weights(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            let bits = state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40;
            (bits as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

/// One graph input or output of an EPContext wrapper: name, dims, ONNX element type.
pub struct WrapperTensor {
    pub name: String,
    pub dims: Vec<usize>,
    pub elem_type: u64,
}

fn attr_int(name: &str, v: u64) -> Vec<u8> {
    let mut a = Vec::new();
    put_str(&mut a, 1, name);
    put_int(&mut a, 3, v);
    put_int(&mut a, 20, 2);
    a
}

fn attr_str(name: &str, v: &str) -> Vec<u8> {
    let mut a = Vec::new();
    put_str(&mut a, 1, name);
    put_str(&mut a, 4, v);
    put_int(&mut a, 20, 3);
    a
}

pub(crate) fn value_info_typed(t: &WrapperTensor) -> Vec<u8> {
    let mut shape_msg = Vec::new();
    for &d in &t.dims {
        let mut dim = Vec::new();
        put_int(&mut dim, 1, d as u64);
        put_bytes(&mut shape_msg, 1, &dim);
    }
    let mut tensor_type = Vec::new();
    put_int(&mut tensor_type, 1, t.elem_type);
    put_bytes(&mut tensor_type, 2, &shape_msg);
    let mut type_proto = Vec::new();
    put_bytes(&mut type_proto, 1, &tensor_type);
    let mut vi = Vec::new();
    put_str(&mut vi, 1, &t.name);
    put_bytes(&mut vi, 2, &type_proto);
    vi
}

/// An EPContext wrapper for a context binary built by the SDK, as ORT's
/// `gen_qnn_ctx_onnx_model.py` makes one: one `com.microsoft` `EPContext` node named after the
/// QNN graph, `main_context=1`, `embed_mode=0`, `ep_cache_context` = the `.bin` beside it.
pub fn epcontext_wrapper(
    graph_name: &str,
    bin_file: &str,
    sdk_version: &str,
    inputs: &[WrapperTensor],
    outputs: &[WrapperTensor],
) -> Vec<u8> {
    let mut node = Vec::new();
    for t in inputs {
        put_str(&mut node, 1, &t.name);
    }
    for t in outputs {
        put_str(&mut node, 2, &t.name);
    }
    put_str(&mut node, 3, graph_name);
    put_str(&mut node, 4, "EPContext");
    for a in [
        attr_int("main_context", 1),
        attr_str("ep_cache_context", bin_file),
        attr_int("embed_mode", 0),
        attr_str("source", "Qnn"),
        attr_str("ep_sdk_version", sdk_version),
        attr_str("partition_name", graph_name),
    ] {
        put_bytes(&mut node, 5, &a);
    }
    put_str(&mut node, 7, "com.microsoft");
    let mut graph = Vec::new();
    put_bytes(&mut graph, 1, &node);
    put_str(&mut graph, 2, graph_name);
    for t in inputs {
        put_bytes(&mut graph, 11, &value_info_typed(t));
    }
    for t in outputs {
        put_bytes(&mut graph, 12, &value_info_typed(t));
    }
    let mut model = Vec::new();
    put_int(&mut model, 1, 10);
    put_str(&mut model, 2, "xtask (QAIRT SDK toolchain)");
    put_bytes(&mut model, 7, &graph);
    for (domain, version) in [("", 20), ("com.microsoft", 1)] {
        let mut opset = Vec::new();
        put_str(&mut opset, 1, domain);
        put_int(&mut opset, 2, version);
        put_bytes(&mut model, 8, &opset);
    }
    model
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_mlp_parses_and_points_at_its_external_data() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mlp.onnx");
        write_mlp(&path, 2, 4, 8, 1).unwrap();
        let summary = crate::onnx::proto::read_summary(&path).unwrap();
        let ops: Vec<&str> = summary.nodes.iter().map(|n| n.op_type.as_str()).collect();
        assert_eq!(ops, ["MatMul", "Sigmoid", "Mul", "MatMul"]);
        assert_eq!(summary.external_data, ["mlp.onnx.data"]);
        assert_eq!(
            std::fs::metadata(dir.path().join("mlp.onnx.data"))
                .unwrap()
                .len(),
            2 * 4 * 8 * 4
        );
    }

    #[test]
    fn seeded_weights_are_reproducible_and_bounded() {
        let a = seeded_weights(1000, 3, 0.5);
        assert_eq!(a, seeded_weights(1000, 3, 0.5));
        assert!(a.iter().all(|v| (-0.5..0.5).contains(v)));
        assert_ne!(a, seeded_weights(1000, 4, 0.5));
    }
}
