//! Graph rewrites a recipe asks for with `[rewrite] apply = [...]`: an operator a QNN backend
//! computes differently from what the ONNX operator means is replaced, in a copy of the graph,
//! by elementary operators QNN computes as ONNX Runtime does. The committed ONNX is never
//! edited: every QNN step (convert, CPU parity, context compile, the chain on `cpu`) gets the
//! copy (`xtask_parity::rewritten::qnn_onnx`), while `parity --backend ort` keeps judging the original (what the
//! graph means). A rewrite's name and version enter the convert step's fingerprint.

mod gelu;
mod layernorm;
mod splice;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use crate::onnx::builder::Node;
use crate::onnx::proto::{OnnxNode, OnnxSummary, parse_model};

pub use splice::Namer;

/// One rewrite of the catalogue.
pub struct Rewrite {
    /// The name a recipe uses.
    pub name: &'static str,
    /// Bumped whenever the replacement changes: `name vN` is a key part of the convert step.
    pub version: u32,
    /// What it replaces, with what (errors, reports and the card say it).
    pub what: &'static str,
    /// The node's replacement, or None when the node is not one this rewrite handles.
    expand: fn(&OnnxNode, &mut Namer) -> Result<Option<Expansion>>,
}

/// The operators that replace one node, and the float32 constants they read.
#[derive(Debug, Default)]
pub struct Expansion {
    pub nodes: Vec<Node>,
    /// (name, dims, values); dims empty = a scalar.
    pub constants: Vec<(String, Vec<usize>, Vec<f32>)>,
    /// int64 constants (reduction axes), the same way.
    pub int_constants: Vec<(String, Vec<usize>, Vec<i64>)>,
}

/// Every rewrite a recipe may name.
pub const KNOWN: &[Rewrite] = &[gelu::GELU_TANH, layernorm::LAYERNORM];

pub fn find(name: &str) -> Option<&'static Rewrite> {
    KNOWN.iter().find(|r| r.name == name)
}

/// The catalogue as one line per rewrite, for the refusal of an unknown name.
pub fn known_list() -> String {
    KNOWN
        .iter()
        .map(|r| format!("{} v{}: {}", r.name, r.version, r.what))
        .collect::<Vec<_>>()
        .join("; ")
}

/// What one rewrite replaced in a graph (recorded by the convert step, stated in the build
/// report and the card).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Applied {
    pub name: String,
    pub version: u32,
    pub what: String,
    /// The names of the replaced nodes.
    pub nodes: Vec<String>,
}

impl Applied {
    /// `decompose_gelu_tanh v1 (2 nodes)`.
    pub fn label(&self) -> String {
        format!(
            "{} v{} ({} node{})",
            self.name,
            self.version,
            self.nodes.len(),
            if self.nodes.len() == 1 { "" } else { "s" }
        )
    }
}

/// The convert step's key part for `names` (`decompose_gelu_tanh v1`, in order), None when
/// the recipe asks for no rewrite (so recipes without one keep their keys).
pub fn key_part(names: &[String]) -> Option<String> {
    if names.is_empty() {
        return None;
    }
    let parts: Vec<String> = names
        .iter()
        .map(|n| match find(n) {
            Some(r) => format!("{} v{}", r.name, r.version),
            None => format!("{n} (unknown)"),
        })
        .collect();
    Some(parts.join(", "))
}

/// The graph nodes `rewrite` would replace (by name, or output when unnamed).
pub fn matching_nodes(summary: &OnnxSummary, rewrite: &Rewrite) -> Result<Vec<String>> {
    let mut namer = Namer::new(summary);
    let mut hits = Vec::new();
    for node in &summary.nodes {
        if (rewrite.expand)(node, &mut namer)?.is_some() {
            hits.push(splice::node_label(node));
        }
    }
    Ok(hits)
}

/// Applies the named rewrites in order to a serialized model. A rewrite that replaces nothing
/// is an error: a recipe asking for it is mistaken about its graph.
pub fn apply(model: &[u8], names: &[String]) -> Result<(Vec<u8>, Vec<Applied>)> {
    apply_parsed(model, None, names)
}

/// `apply`, given `model` already parsed when the caller has it (the first rewrite reads its
/// nodes from it; each later one parses what the previous one wrote).
pub fn apply_parsed(
    model: &[u8],
    parsed: Option<&OnnxSummary>,
    names: &[String],
) -> Result<(Vec<u8>, Vec<Applied>)> {
    let mut bytes = model.to_vec();
    let mut applied = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let Some(rewrite) = find(name) else {
            bail!("unknown rewrite `{name}`; known rewrites: {}", known_list());
        };
        let reparsed;
        let summary = match parsed {
            Some(s) if i == 0 => s,
            _ => {
                reparsed = parse_model(&bytes)?;
                &reparsed
            }
        };
        let (out, nodes) = splice::replace_nodes(&bytes, summary, rewrite)?;
        if nodes.is_empty() {
            bail!(
                "rewrite `{name}` matches no node of the graph ({})",
                rewrite.what
            );
        }
        bytes = out;
        applied.push(Applied {
            name: rewrite.name.into(),
            version: rewrite.version,
            what: rewrite.what.into(),
            nodes,
        });
    }
    Ok((bytes, applied))
}

#[cfg(test)]
mod tests;
