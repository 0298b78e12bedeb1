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
use xtask_onnx::onnx::extract::{
    GraphIndex, SingleNode, elem_name, elem_type_of, index_graph, single_node_model,
};
use xtask_onnx::onnx::proto::{OnnxNode, OnnxSummary, parse_model};
use xtask_onnx::onnx::writer::WrapperTensor;
use xtask_onnx::tensor::{DType, Tensor};
use xtask_recipe::recipe::Component;
use xtask_runtime::runtime::{Backend, Runtime};

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
    let src = Source {
        comp,
        onnx: &onnx,
        bytes: &bytes,
        graph: &graph,
        index: &index,
        consts: &consts,
    };
    let values = node_values(&src, root, work, rt, &swept)?;
    // Each group's key → its index in `groups` (the order of `groups` is kept).
    let mut known: BTreeMap<String, usize> = groups
        .iter()
        .enumerate()
        .map(|(at, g)| (g.key(), at))
        .collect();
    for i in swept {
        let (group, one) = node_group(&src, work, &values, i)?;
        let key = group.key();
        if let Some(&at) = known.get(&key) {
            groups[at].nodes.extend(group.nodes);
            continue;
        }
        xtask_base::atomic::write_atomic(
            &group.model_path,
            &single_node_model(&bytes, &index, &one)?,
        )?;
        known.insert(key, groups.len());
        groups.push(group);
    }
    Ok(graph)
}

/// One component's graph as `collect` reads it: the file, its bytes parsed and indexed, and
/// the tensors that are constants (initializers and what is folded from them).
struct Source<'a> {
    comp: &'a Component,
    onnx: &'a Path,
    bytes: &'a [u8],
    graph: &'a OnnxSummary,
    index: &'a GraphIndex<'a>,
    consts: &'a BTreeSet<String>,
}

/// The value of every tensor the swept nodes read or write, and of the graph's inputs: the
/// graph run once on ORT's CPU EP with those tensors exposed, fed the golden inputs as the HTP
/// is fed them (marked masks clamped, as lint-fp16 and the chain do).
fn node_values(
    src: &Source<'_>,
    root: &Path,
    work: &Path,
    rt: &Runtime,
    swept: &[usize],
) -> Result<BTreeMap<String, Tensor>> {
    let (comp, graph) = (src.comp, src.graph);
    let golden = xtask_parity::parity::component::load_golden(root, comp)?;
    let feeds = xtask_recipe::fp16::clamp_masks(comp, &golden.inputs);
    let wanted: BTreeSet<String> = swept
        .iter()
        .flat_map(|&i| graph.nodes[i].inputs.iter().chain(&graph.nodes[i].outputs))
        .filter(|n| {
            !n.is_empty() && !src.index.initializers.contains_key(*n) && !feeds.contains_key(*n)
        })
        .cloned()
        .collect();
    let extra: Vec<String> = wanted
        .iter()
        .filter(|n| !graph.graph_outputs.contains(n))
        .cloned()
        .collect();
    let copy =
        crate::diagnose::probe::write_exposed_copy(work, src.onnx, src.bytes, graph, &extra)?;
    let mut values = rt
        .open(&copy, &Backend::OrtCpu)?
        .run(&feeds)
        .with_context(|| format!("{}: the graph with its tensors exposed on ORT", comp.name()))?;
    values.extend(feeds);
    Ok(values)
}

/// Node `i` as a group of its own (its key, its site, its input values) and the single-node
/// model that runs it.
fn node_group<'a>(
    src: &Source<'a>,
    work: &Path,
    values: &'a BTreeMap<String, Tensor>,
    i: usize,
) -> Result<(Group, SingleNode<'a>)> {
    let (comp, node) = (src.comp, &src.graph.nodes[i]);
    let value = |name: &str| {
        values
            .get(name)
            .with_context(|| format!("{}: tensor `{name}` was not computed", comp.name()))
    };
    let ins = node_inputs(src, node, &value)?;
    let mut outputs = Vec::new();
    for name in node.outputs.iter().filter(|o| !o.is_empty()) {
        outputs.push(io(name, value(name)?));
    }
    let group = Group {
        op: op_label(node),
        attributes: attr_set(node),
        shapes: ins.sig.join(", "),
        nodes: vec![format!("{}/{}", comp.name(), node.name)],
        component: comp.name().to_string(),
        model_path: work.join(format!("{i:04}-{}.onnx", node.op_type)),
        data: ins.data,
        fixed: ins.fixed,
    };
    let one = SingleNode {
        node: i,
        initializers: ins.initializers,
        constants: ins.constants,
        inputs: ins.inputs,
        outputs,
    };
    Ok((group, one))
}

/// A graph input or output of the single-node model, as the tensor computed for it.
fn io(name: &str, t: &Tensor) -> WrapperTensor {
    WrapperTensor {
        name: name.into(),
        dims: t.shape(),
        elem_type: elem_type_of(t.dtype()),
    }
}

/// What a node's inputs make of its group and its single-node model.
#[derive(Default)]
struct NodeInputs<'a> {
    /// The input signature: dtype and shape of each, `const` for constants, `none` for an
    /// omitted optional input.
    sig: Vec<String>,
    /// Float data inputs (the input sets change them) and the other computed ones (kept real).
    data: Vec<(String, Tensor)>,
    fixed: Vec<(String, Tensor)>,
    /// What the single-node model carries: initializers copied, constants by value, inputs.
    initializers: Vec<&'a str>,
    constants: Vec<(String, &'a Tensor)>,
    inputs: Vec<WrapperTensor>,
}

/// Each input of `node` sorted into the group's signature and the single-node model: an
/// initializer the graph holds as a constant is copied, a folded constant goes in by value,
/// anything else becomes an input of the model (a name read twice is one input).
fn node_inputs<'a>(
    src: &Source<'a>,
    node: &'a OnnxNode,
    value: &dyn Fn(&str) -> Result<&'a Tensor>,
) -> Result<NodeInputs<'a>> {
    let mut ins = NodeInputs::default();
    let mut seen = BTreeSet::new();
    for name in node.inputs.iter() {
        if name.is_empty() {
            ins.sig.push("none".to_string());
            continue;
        }
        let first = seen.insert(name.clone());
        if let Some(init) = src
            .index
            .initializers
            .get(name)
            .filter(|_| src.consts.contains(name))
        {
            let dims: Vec<String> = init.dims.iter().map(|d| d.to_string()).collect();
            ins.sig.push(format!(
                "const {}[{}]",
                elem_name(init.elem_type),
                dims.join(",")
            ));
            if first {
                ins.initializers.push(name.as_str());
            }
            continue;
        }
        let t = value(name)?;
        let shape = format!("{}{:?}", t.dtype(), t.shape()).replace(' ', "");
        if src.consts.contains(name) {
            ins.sig.push(format!("const {shape}"));
            if first {
                ins.constants.push((name.clone(), t));
            }
            continue;
        }
        ins.sig.push(shape);
        if first {
            ins.inputs.push(io(name, t));
            let float = matches!(t.dtype(), DType::F32 | DType::F16);
            let list = if float { &mut ins.data } else { &mut ins.fixed };
            list.push((name.clone(), t.clone()));
        }
    }
    Ok(ins)
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
