//! `Gelu(approximate="tanh")` (opset 20) in elementary operators.
//!
//! Why: the QNN 2.47 CPU backend (through the QNN EP) ignores `approximate` and computes the
//! exact erf Gelu: measured against ONNX Runtime's CPU EP on x uniform in [-4, 4], max abs
//! error 4.7e-4 (the size of the tanh approximation itself), cosine 0.9999999925, while its
//! Mul, Add and Sigmoid agree with ONNX Runtime to ~1e-7. A ViT MLP with PyTorch's
//! `gelu(approximate="tanh")` (SigLIP's `gelu_pytorch_tanh`) exports to this node.
//!
//! The replacement uses `0.5·(1 + tanh(z)) = sigmoid(2z)`:
//! `y = x · Sigmoid(x · (a + b·x²))` with `a = 2·√(2/π)`, `b = a · 0.044715`, the formula of
//! the ONNX operator; Sigmoid rather than Tanh because the HTP's fp16 Tanh is a coarser
//! approximation than its Sigmoid (see `gen_tiny_model.py`).

use anyhow::{Result, bail};

use super::{Expansion, Namer, Rewrite};
use crate::onnx::builder::Node;
use crate::onnx::proto::OnnxNode;

pub const GELU_TANH: Rewrite = Rewrite {
    name: "decompose_gelu_tanh",
    version: 1,
    what: "Gelu(approximate=\"tanh\") -> x * Sigmoid(x * (a + b*x^2)), a = 2*sqrt(2/pi), \
           b = 0.044715*a (Mul, Add, Sigmoid): QNN's CPU backend computes the erf Gelu instead",
    expand,
};

fn expand(node: &OnnxNode, names: &mut Namer) -> Result<Option<Expansion>> {
    let default_domain = node.domain.is_empty() || node.domain == "ai.onnx";
    if node.op_type != "Gelu" || !default_domain || node.attr_str("approximate") != Some("tanh") {
        return Ok(None);
    }
    let (x, y) = match (node.inputs.as_slice(), node.outputs.as_slice()) {
        ([x], [y]) if !x.is_empty() && !y.is_empty() => (x.as_str(), y.as_str()),
        _ => bail!(
            "Gelu node `{}` has {} input(s) and {} output(s), expected 1 and 1",
            node.name,
            node.inputs.len(),
            node.outputs.len()
        ),
    };
    let rw = GELU_TANH.name;
    let a = 2.0 * (2.0 / std::f64::consts::PI).sqrt();
    let b = a * 0.044715;
    let mut name = |part: &str| names.fresh(node, rw, part);
    let (ca, cb) = (name("a")?, name("b")?);
    let (x2, bx2, inner, z, s) = (
        name("x2")?,
        name("b_x2")?,
        name("a_plus_b_x2")?,
        name("z")?,
        name("sigmoid_z")?,
    );
    let nodes = vec![
        Node::new("Mul", &name("mul_x2")?, &[x, x], &[x2.as_str()]),
        Node::new(
            "Mul",
            &name("mul_b")?,
            &[x2.as_str(), cb.as_str()],
            &[bx2.as_str()],
        ),
        Node::new(
            "Add",
            &name("add_a")?,
            &[bx2.as_str(), ca.as_str()],
            &[inner.as_str()],
        ),
        Node::new("Mul", &name("mul_z")?, &[x, inner.as_str()], &[z.as_str()]),
        Node::new("Sigmoid", &name("sigmoid")?, &[z.as_str()], &[s.as_str()]),
        Node::new("Mul", &name("mul_y")?, &[x, s.as_str()], &[y]),
    ];
    Ok(Some(Expansion {
        nodes,
        constants: vec![
            (ca, Vec::new(), vec![a as f32]),
            (cb, Vec::new(), vec![b as f32]),
        ],
        int_constants: Vec::new(),
    }))
}
