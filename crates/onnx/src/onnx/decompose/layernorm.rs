//! `LayerNormalization` over the last axis in elementary operators.
//!
//! Why: a remedy for the vision graph's HTP compile time, not for a numeric deviation. The
//! QNN HTP compiler's "Parallelization Optimization" stage (O3) turns superlinear when a
//! LayerNorm is fed by an MLP block's residual add: the real-width MLP block alone compiles in
//! 122.9 s, followed by that LayerNorm in 940.2 s, and with the LayerNorm decomposed into
//! these operators in 399.3 s (`notes/vision-compile.md`, onnxruntime-qnn on soc 77, fp16).
//! A ViT has that pattern at every layer boundary. Whether the decomposition keeps HTP parity
//! is measured by `cargo xtask bench build --real-size` (README, "At the bundle's real size").
//!
//! `y = (x - mean) / sqrt(mean((x - mean)^2) + epsilon) * scale + bias`, the operator's
//! definition (ReduceMean, Sub, Mul, ReduceMean, Add, Sqrt, Div, Mul, Add), in the graph's
//! float32; `stash_type` (float32 by default) is what these operators compute in anyway.

use anyhow::{Result, bail};

use super::{Expansion, Namer, Rewrite};
use crate::onnx::builder::{Attr, Node};
use crate::onnx::proto::OnnxNode;

pub const LAYERNORM: Rewrite = Rewrite {
    name: "decompose_layernorm",
    version: 1,
    what: "LayerNormalization(axis=-1) -> ReduceMean, Sub, Mul, ReduceMean, Add epsilon, Sqrt, \
           Div, Mul scale, Add bias: the HTP compiler's O3 stage is superlinear on a LayerNorm \
           after an MLP residual (compile time, not accuracy)",
    expand,
};

fn expand(node: &OnnxNode, names: &mut Namer) -> Result<Option<Expansion>> {
    let default_domain = node.domain.is_empty() || node.domain == "ai.onnx";
    if node.op_type != "LayerNormalization" || !default_domain {
        return Ok(None);
    }
    let axis = node.attr_int("axis").unwrap_or(-1);
    if axis != -1 {
        bail!(
            "LayerNormalization node `{}` normalises over axis {axis}; decompose_layernorm handles axis -1 only",
            node.name
        );
    }
    let (x, scale, bias, y) = match (node.inputs.as_slice(), node.outputs.as_slice()) {
        ([x, s], [y]) => (x, s, None, y),
        ([x, s, b], [y]) => (x, s, Some(b).filter(|b| !b.is_empty()), y),
        _ => bail!(
            "LayerNormalization node `{}` has {} input(s) and {} output(s) (its Mean / \
             InvStdDev outputs in use?); decompose_layernorm expects X, Scale[, B] -> Y",
            node.name,
            node.inputs.len(),
            node.outputs.len()
        ),
    };
    let epsilon = node.attr_float("epsilon").unwrap_or(1e-5);
    let rw = LAYERNORM.name;
    let mut name = |part: &str| names.fresh(node, rw, part);
    let (axes, eps) = (name("axes")?, name("epsilon")?);
    let (mean, d, d2, var, ve, sd, n) = (
        name("mean")?,
        name("centered")?,
        name("centered_sq")?,
        name("variance")?,
        name("variance_eps")?,
        name("std")?,
        name("normalized")?,
    );
    let scaled = if bias.is_some() {
        name("scaled")?
    } else {
        y.clone()
    };
    let keep = || Attr::Int(1);
    let mut nodes = vec![
        Node::new("ReduceMean", &name("reduce_mean")?, &[x, &axes], &[&mean])
            .attr("keepdims", keep()),
        Node::new("Sub", &name("sub")?, &[x, &mean], &[&d]),
        Node::new("Mul", &name("square")?, &[&d, &d], &[&d2]),
        Node::new("ReduceMean", &name("reduce_var")?, &[&d2, &axes], &[&var])
            .attr("keepdims", keep()),
        Node::new("Add", &name("add_eps")?, &[&var, &eps], &[&ve]),
        Node::new("Sqrt", &name("sqrt")?, &[&ve], &[&sd]),
        Node::new("Div", &name("div")?, &[&d, &sd], &[&n]),
        Node::new("Mul", &name("mul_scale")?, &[&n, scale], &[&scaled]),
    ];
    if let Some(b) = bias {
        nodes.push(Node::new("Add", &name("add_bias")?, &[&scaled, b], &[y]));
    }
    Ok(Some(Expansion {
        nodes,
        constants: vec![(eps, Vec::new(), vec![epsilon])],
        int_constants: vec![(axes, vec![1], vec![-1])],
    }))
}
