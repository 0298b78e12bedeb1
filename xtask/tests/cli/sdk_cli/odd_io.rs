//! The `odd_io` fixture's graph and golden, written at test time (the fixture folder
//! `xtask/tests/fixtures/odd_io` holds only its recipes): I/O names with separators and leading
//! digits, and int64, fp16 and bool tensors.

use crate::common::Scratch;

/// The `odd_io` fixture's graph and golden: x f32 [1,4], idx i64 [1,4], flag bool [1,4] →
/// `head/sum.0` = x + float(idx), `ns:sq` = x·x, `0_neg` = −x, `1.twice` = idx + idx (i64),
/// `half` = fp16(x), `nonzero` = bool(x), `not_flag` = ¬flag.
pub(super) fn write_odd_io_fixture(p: &Scratch) {
    write_odd_io_graph(p);
    write_odd_io_golden(p);
}

/// `onnx/odd_io/graph.onnx`, encoded field by field with the crate's protobuf writers.
fn write_odd_io_graph(p: &Scratch) {
    use xtask_onnx::onnx::rewrite::{put_bytes, put_varint};
    let int = |out: &mut Vec<u8>, num: u64, v: u64| {
        put_varint(out, num << 3);
        put_varint(out, v);
    };
    let value_info = |name: &str, elem: u64| {
        let mut shape = Vec::new();
        for d in [1u64, 4] {
            let mut dim = Vec::new();
            int(&mut dim, 1, d);
            put_bytes(&mut shape, 1, &dim);
        }
        let mut tt = Vec::new();
        int(&mut tt, 1, elem);
        put_bytes(&mut tt, 2, &shape);
        let mut ty = Vec::new();
        put_bytes(&mut ty, 1, &tt);
        let mut vi = Vec::new();
        put_bytes(&mut vi, 1, name.as_bytes());
        put_bytes(&mut vi, 2, &ty);
        vi
    };
    let node = |op: &str, ins: &[&str], out: &str, to: Option<u64>| {
        let mut n = Vec::new();
        for i in ins {
            put_bytes(&mut n, 1, i.as_bytes());
        }
        put_bytes(&mut n, 2, out.as_bytes());
        put_bytes(&mut n, 3, format!("n_{op}_{}", out.len()).as_bytes());
        put_bytes(&mut n, 4, op.as_bytes());
        if let Some(to) = to {
            let mut a = Vec::new();
            put_bytes(&mut a, 1, b"to");
            int(&mut a, 3, to);
            int(&mut a, 20, 2);
            put_bytes(&mut n, 5, &a);
        }
        n
    };
    let mut graph = Vec::new();
    for n in [
        node("Cast", &["idx"], "idx_f", Some(1)),
        node("Add", &["x", "idx_f"], "head/sum.0", None),
        node("Mul", &["x", "x"], "ns:sq", None),
        node("Neg", &["x"], "0_neg", None),
        node("Add", &["idx", "idx"], "1.twice", None),
        node("Cast", &["x"], "half", Some(10)),
        node("Cast", &["x"], "nonzero", Some(9)),
        node("Not", &["flag"], "not_flag", None),
    ] {
        put_bytes(&mut graph, 1, &n);
    }
    put_bytes(&mut graph, 2, b"odd_io");
    put_bytes(&mut graph, 11, &value_info("x", 1));
    put_bytes(&mut graph, 11, &value_info("idx", 7));
    put_bytes(&mut graph, 11, &value_info("flag", 9));
    for (name, elem) in [
        ("head/sum.0", 1),
        ("ns:sq", 1),
        ("0_neg", 1),
        ("1.twice", 7),
        ("half", 10),
        ("nonzero", 9),
        ("not_flag", 9),
    ] {
        put_bytes(&mut graph, 12, &value_info(name, elem));
    }
    let mut model = Vec::new();
    int(&mut model, 1, 10);
    put_bytes(&mut model, 7, &graph);
    let mut opset = Vec::new();
    put_bytes(&mut opset, 1, b"");
    int(&mut opset, 2, 20);
    put_bytes(&mut model, 8, &opset);
    std::fs::create_dir_all(p.path("onnx/odd_io")).unwrap();
    std::fs::write(p.path("onnx/odd_io/graph.onnx"), model).unwrap();
}

/// `golden/odd_io/graph_io.npz`, with `half` added as NumPy's float16.
fn write_odd_io_golden(p: &Scratch) {
    use xtask_onnx::tensor::Tensor;
    let x = [0.5f32, -1.25, 0.0, 3.5];
    let flag = [true, false, false, true];
    let idx = [3i64, -2, 1 << 20, 7];
    let f = |v: Vec<f32>| Tensor::F32(ndarray::ArrayD::from_shape_vec(vec![1, 4], v).unwrap());
    let i = |v: Vec<i64>| Tensor::I64(ndarray::ArrayD::from_shape_vec(vec![1, 4], v).unwrap());
    let b = |v: Vec<bool>| Tensor::Bool(ndarray::ArrayD::from_shape_vec(vec![1, 4], v).unwrap());
    let golden = std::collections::BTreeMap::from([
        ("x".to_string(), f(x.to_vec())),
        ("idx".to_string(), i(idx.to_vec())),
        (
            "sum".to_string(),
            f(x.iter().zip(idx).map(|(a, b)| a + b as f32).collect()),
        ),
        ("sq".to_string(), f(x.iter().map(|a| a * a).collect())),
        ("neg".to_string(), f(x.iter().map(|a| -a).collect())),
        ("twice".to_string(), i(idx.iter().map(|b| b * 2).collect())),
        ("flag".to_string(), b(flag.to_vec())),
        (
            "nonzero".to_string(),
            b(x.iter().map(|v| *v != 0.0).collect()),
        ),
        ("not_flag".to_string(), b(flag.iter().map(|v| !v).collect())),
    ]);
    std::fs::create_dir_all(p.path("golden/odd_io")).unwrap();
    let npz = p.path("golden/odd_io/graph_io.npz");
    xtask_onnx::tensor::write_npz(&npz, &golden).unwrap();
    // `half` as numpy's float16 (`<f2`), which the crate's npz writer does not write.
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    let mut header = "{'descr': '<f2', 'fortran_order': False, 'shape': (1, 4), }".to_string();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    npy.extend((header.len() as u16).to_le_bytes());
    npy.extend(header.as_bytes());
    for v in x {
        npy.extend(half::f16::from_f32(v).to_le_bytes());
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&npz)
        .unwrap();
    let mut zip = zip::ZipWriter::new_append(file).unwrap();
    zip.start_file("half.npy", zip::write::SimpleFileOptions::default())
        .unwrap();
    std::io::Write::write_all(&mut zip, &npy).unwrap();
    zip.finish().unwrap();
}
