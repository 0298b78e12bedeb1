//! From a component's graph to the operators to measure: the graph runs its golden inputs once
//! on ORT's CPU EP with every tensor the swept nodes read or write exposed (as in `bisect`),
//! which gives each node's real input values, dtypes and shapes. Nodes with the same operator,
//! attribute set and input signature form one group, measured once; the first node's values
//! are the group's `real` input set. Each group is written as a single-node model next to the
//! graph's external data.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::graph::{attr_set, constant_tensors, op_label, swept_nodes};
use crate::onnx::extract::{SingleNode, elem_name, elem_type_of, index_graph, single_node_model};
use crate::onnx::proto::{OnnxSummary, parse_model};
use crate::onnx::writer::WrapperTensor;
use crate::recipe::Component;
use crate::runtime::{Backend, Runtime};
use crate::tensor::{DType, Tensor};

/// One operator, attribute set and input signature, with the single-node model that runs it.
pub struct Group {
    pub op: String,
    pub attributes: String,
    pub shapes: String,
    /// `component/node` of every node with this key.
    pub nodes: Vec<String>,
    /// The component of the first node (its `[context]` compiles the HTP session).
    pub component: String,
    pub model_path: PathBuf,
    /// Float inputs computed from the graph's inputs: the ones the input sets change.
    pub data: Vec<(String, Tensor)>,
    /// Other inputs computed from the graph's inputs (indices, positions): always real.
    pub fixed: Vec<(String, Tensor)>,
}

impl Group {
    /// The key that makes two nodes one group.
    pub fn key(&self) -> String {
        format!("{} {{{}}} ({})", self.op, self.attributes, self.shapes)
    }
}

/// Adds the groups of one component's graph to `groups` (nodes whose key is already there
/// join that group). `ops` keeps only those operator types (all when empty). Returns the
/// graph as parsed, so the caller need not read the ONNX again (e.g. for its external data).
pub fn collect(
    root: &Path,
    work: &Path,
    rt: &Runtime,
    comp: &Component,
    ops: &[String],
    groups: &mut Vec<Group>,
) -> Result<OnnxSummary> {
    let onnx = root.join(&comp.file.component.onnx);
    let bytes = std::fs::read(&onnx).with_context(|| format!("cannot read {}", onnx.display()))?;
    let graph = parse_model(&bytes)?;
    let index = index_graph(&bytes)?;
    let consts = constant_tensors(&graph);
    let swept: Vec<usize> = swept_nodes(&graph, &consts)
        .into_iter()
        .filter(|&i| ops.is_empty() || ops.contains(&graph.nodes[i].op_type))
        .collect();
    if swept.is_empty() {
        return Ok(graph);
    }
    let golden = crate::parity::component::load_golden(root, comp)?;
    // What the HTP is fed: marked masks clamped (as lint-fp16 and the chain do).
    let feeds = crate::fp16::clamp_masks(comp, &golden.inputs);
    let wanted: BTreeSet<String> = swept
        .iter()
        .flat_map(|&i| graph.nodes[i].inputs.iter().chain(&graph.nodes[i].outputs))
        .filter(|n| {
            !n.is_empty() && !index.initializers.contains_key(*n) && !feeds.contains_key(*n)
        })
        .cloned()
        .collect();
    let extra: Vec<String> = wanted
        .iter()
        .filter(|n| !graph.graph_outputs.contains(n))
        .cloned()
        .collect();
    let copy = crate::diagnose::probe::write_exposed_copy(work, &onnx, &bytes, &graph, &extra)?;
    let mut values = rt
        .open(&copy, &Backend::OrtCpu)?
        .run(&feeds)
        .with_context(|| format!("{}: the graph with its tensors exposed on ORT", comp.name()))?;
    values.extend(feeds);
    let value = |name: &str| {
        values
            .get(name)
            .with_context(|| format!("{}: tensor `{name}` was not computed", comp.name()))
    };
    let io = |name: &str, t: &Tensor| WrapperTensor {
        name: name.into(),
        dims: t.shape(),
        elem_type: elem_type_of(t.dtype()),
    };
    // Each group's key → its index in `groups` (the order of `groups` is kept).
    let mut known: BTreeMap<String, usize> = groups
        .iter()
        .enumerate()
        .map(|(at, g)| (g.key(), at))
        .collect();
    for i in swept {
        let node = &graph.nodes[i];
        let mut one = SingleNode {
            node: i,
            initializers: Vec::new(),
            constants: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
        };
        let (mut data, mut fixed, mut sig) = (Vec::new(), Vec::new(), Vec::new());
        let mut seen = BTreeSet::new();
        for name in node.inputs.iter() {
            if name.is_empty() {
                sig.push("none".to_string());
                continue;
            }
            let first = seen.insert(name.clone());
            if let Some(init) = index
                .initializers
                .get(name)
                .filter(|_| consts.contains(name))
            {
                let dims: Vec<String> = init.dims.iter().map(|d| d.to_string()).collect();
                sig.push(format!(
                    "const {}[{}]",
                    elem_name(init.elem_type),
                    dims.join(",")
                ));
                if first {
                    one.initializers.push(name.as_str());
                }
                continue;
            }
            let t = value(name)?;
            let shape = format!("{}{:?}", t.dtype(), t.shape()).replace(' ', "");
            if consts.contains(name) {
                sig.push(format!("const {shape}"));
                if first {
                    one.constants.push((name.clone(), t));
                }
                continue;
            }
            sig.push(shape);
            if first {
                one.inputs.push(io(name, t));
                let float = matches!(t.dtype(), DType::F32 | DType::F16);
                let list = if float { &mut data } else { &mut fixed };
                list.push((name.clone(), t.clone()));
            }
        }
        for name in node.outputs.iter().filter(|o| !o.is_empty()) {
            one.outputs.push(io(name, value(name)?));
        }
        let site = format!("{}/{}", comp.name(), node.name);
        let group = Group {
            op: op_label(node),
            attributes: attr_set(node),
            shapes: sig.join(", "),
            nodes: vec![site.clone()],
            component: comp.name().to_string(),
            model_path: work.join(format!("{i:04}-{}.onnx", node.op_type)),
            data,
            fixed,
        };
        let key = group.key();
        if let Some(&at) = known.get(&key) {
            groups[at].nodes.push(site);
            continue;
        }
        crate::atomic::write_atomic(&group.model_path, &single_node_model(&bytes, &index, &one)?)?;
        known.insert(key, groups.len());
        groups.push(group);
    }
    Ok(graph)
}

/// The feeds of one input set: changed float data inputs, real fixed ones.
pub fn feeds(group: &Group, set: &str, seed: u64) -> BTreeMap<String, Tensor> {
    let key = group.key();
    let mut out: BTreeMap<String, Tensor> = group.fixed.iter().cloned().collect();
    for (i, (name, real)) in group.data.iter().enumerate() {
        let seed = super::inputs::seed_for(seed, &key, i, set);
        let t = super::inputs::make(set, real, seed).unwrap_or_else(|| real.clone());
        out.insert(name.clone(), t);
    }
    out
}
