//! A bundle bound to itself: the references between its files, checked after every file
//! matched `manifest.json`. Hashes alone prove only that the files are the ones the manifest
//! lists; a bundle whose files were changed and whose manifest and sums were then recomputed
//! passes them. What such an edit cannot keep consistent is checked here:
//!
//! - each component of `reports/bundle.json` names its own binary (`<component>_socid<N>_…`),
//!   listed with the size `bundle.json` states;
//! - its wrapper's `EPContext` nodes name that binary (not another component's) and the graph
//!   `bundle.json` states, and the wrapper's inputs and outputs are the component's (names,
//!   dtypes, shapes);
//! - the bundled ONNX graph and golden file are the ones `bundle.json` hashed;
//! - every binary and wrapper in `ctx/` belongs to a component.
//!
//! The build records' side (each binary and wrapper's sha256 equal to what its context step
//! recorded, the build facts equal to `bundle.json`'s) is `records`.

use std::path::Path;

use anyhow::Result;

use super::info::{BundleComponent, BundleInfo};
use super::manifest::{Manifest, ManifestEntry, Role};
use super::reader;
use xtask_onnx::onnx::proto::{OnnxSummary, parse_model};
use xtask_recipe::recipe::Model;

/// What this project's recipes need of a download that passed the bundle's own check: each
/// component's I/O in `bundle.json` is the recipe's, and the files the recipes name (graph,
/// golden, the trace with the vision component, and unless `binaries` is false the binary and
/// build record) are in the bundle, each named when it is not. `only`: the components asked
/// for (None: all); of those, the ones the bundle holds are checked (a component the bundle
/// does not hold is not laid out; the caller names it).
pub fn recipe_problems(
    dir: &Path,
    model: &Model,
    only: Option<&[&str]>,
    binaries: bool,
) -> Result<Vec<String>> {
    let manifest = super::manifest::read_manifest(dir)?;
    let info = super::info::read_info(dir)?;
    let mut problems = Vec::new();
    let selected = model
        .components
        .iter()
        .filter(|c| only.is_none_or(|o| o.contains(&c.name())));
    for comp in selected {
        let Some(c) = info.components.iter().find(|c| c.name == comp.name()) else {
            continue;
        };
        let want = |specs: &[xtask_recipe::recipe::TensorSpec]| -> Vec<_> {
            specs.iter().map(super::component::tensor).collect()
        };
        for (kind, stated, recipe) in [
            ("inputs", &c.inputs, want(&comp.file.inputs)),
            ("outputs", &c.outputs, want(&comp.file.outputs)),
        ] {
            if *stated != recipe {
                problems.push(format!(
                    "reports/bundle.json: `{}`'s {kind} are {}, {} declares {}",
                    c.name,
                    shown(stated),
                    comp.recipe_path.display(),
                    shown(&recipe)
                ));
            }
        }
        problems.extend(recipe_files(&manifest, model, comp, c, binaries));
    }
    Ok(problems)
}

/// The files the recipes name for `comp` that the bundle does not list.
fn recipe_files(
    manifest: &Manifest,
    model: &Model,
    comp: &xtask_recipe::recipe::Component,
    c: &BundleComponent,
    binaries: bool,
) -> Vec<String> {
    let name_of = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let mut needed = vec![
        (
            format!("onnx/{}/{}", c.name, name_of(&comp.file.component.onnx)),
            comp.recipe_path.display().to_string(),
        ),
        (
            format!("golden/{}", name_of(&comp.file.golden.file)),
            comp.recipe_path.display().to_string(),
        ),
    ];
    if let Some(host) = model.file.host.as_ref().filter(|h| h.vision == c.name) {
        needed.push((
            format!("golden/{}", name_of(&host.trace)),
            model.recipe_path.display().to_string(),
        ));
    }
    if binaries {
        for rel in [
            format!("ctx/{}", c.bin_file),
            format!("ctx/{}.record.json", c.name),
        ] {
            needed.push((rel, "reports/bundle.json".into()));
        }
    }
    needed
        .into_iter()
        .filter(|(rel, _)| entry(manifest, rel).is_none())
        .map(|(rel, by)| {
            format!(
                "{rel}: needed by {by} for `{}`, but the bundle does not hold it",
                c.name
            )
        })
        .collect()
}

/// Every disagreement between the files of the components `selected` accepts, each naming the
/// file and the reference (empty: they agree).
pub fn check(
    dir: &Path,
    manifest: &Manifest,
    info: &BundleInfo,
    selected: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let mut problems = Vec::new();
    if manifest.model != info.model {
        problems.push(format!(
            "manifest.json is of model `{}`, reports/bundle.json of `{}`",
            manifest.model, info.model
        ));
    }
    let comps: Vec<&BundleComponent> = info
        .components
        .iter()
        .filter(|c| selected(&c.name))
        .collect();
    for c in &comps {
        problems.extend(component(dir, manifest, info, c));
    }
    problems.extend(orphans(manifest, info));
    problems
}

fn entry<'a>(manifest: &'a Manifest, rel: &str) -> Option<&'a ManifestEntry> {
    manifest.files.iter().find(|f| f.path == rel)
}

/// The files of one component against `bundle.json`'s description of it.
fn component(
    dir: &Path,
    manifest: &Manifest,
    info: &BundleInfo,
    c: &BundleComponent,
) -> Vec<String> {
    let mut problems = Vec::new();
    let name = &c.name;
    let stem = format!("{name}_socid{}_archv{}", info.soc_id, info.htp_arch);
    if c.bin_file != format!("{stem}.bin") {
        problems.push(format!(
            "reports/bundle.json: component `{name}` names binary {:?}, not its own ({stem}.bin)",
            c.bin_file
        ));
        return problems;
    }
    let bin = format!("ctx/{stem}.bin");
    match entry(manifest, &bin) {
        None => problems.push(format!(
            "{bin}: component `{name}`'s binary is not in the bundle"
        )),
        Some(e) if e.bytes != c.bin_bytes => problems.push(format!(
            "{bin}: {} bytes, reports/bundle.json says {}",
            e.bytes, c.bin_bytes
        )),
        Some(_) => {}
    }
    let wrapper = format!("ctx/{stem}_ctx.onnx");
    match entry(manifest, &wrapper) {
        None => problems.push(format!(
            "{wrapper}: component `{name}`'s wrapper is not in the bundle"
        )),
        Some(_) => match reader::read_small(dir, &wrapper).and_then(|b| parse_model(&b)) {
            Err(e) => problems.push(format!("{wrapper}: not a readable ONNX wrapper ({e:#})")),
            Ok(summary) => problems.extend(wrapper_refs(&wrapper, &summary, c)),
        },
    }
    problems.extend(hashed_inputs(manifest, c));
    problems
}

/// The wrapper's EPContext nodes name the component's binary and graph; its I/O is the
/// component's.
fn wrapper_refs(rel: &str, summary: &OnnxSummary, c: &BundleComponent) -> Vec<String> {
    let mut problems = Vec::new();
    let nodes: Vec<_> = summary
        .nodes
        .iter()
        .filter(|n| n.op_type == "EPContext")
        .collect();
    if nodes.is_empty() {
        problems.push(format!("{rel}: holds no EPContext node"));
    }
    for n in &nodes {
        let target = n.attr_str("ep_cache_context").unwrap_or_default();
        if target != c.bin_file {
            problems.push(format!(
                "{rel}: its EPContext names binary {target:?}, not {} (component `{}`'s)",
                c.bin_file, c.name
            ));
        }
        let graph = n.attr_str("partition_name").unwrap_or(&n.name);
        if graph != c.graph_name {
            problems.push(format!(
                "{rel}: its EPContext names graph {graph:?}, reports/bundle.json says `{}` was compiled as {:?}",
                c.name, c.graph_name
            ));
        }
    }
    let (inputs, outputs) = summary.io_contract();
    for (kind, declared, stated) in [
        ("inputs", inputs, &c.inputs),
        ("outputs", outputs, &c.outputs),
    ] {
        let declared: Vec<(String, Vec<usize>, String)> = declared
            .into_iter()
            .map(|(n, dtype, dims)| {
                let dims = dims
                    .iter()
                    .map(|&d| usize::try_from(d).unwrap_or(0))
                    .collect();
                (
                    n,
                    dims,
                    dtype.map_or("unsupported".into(), |d| d.to_string()),
                )
            })
            .collect();
        if &declared != stated {
            problems.push(format!(
                "{rel}: its {kind} are {}, component `{}`'s are {}",
                shown(&declared),
                c.name,
                shown(stated)
            ));
        }
    }
    problems
}

fn shown(io: &[(String, Vec<usize>, String)]) -> String {
    let items: Vec<String> = io
        .iter()
        .map(|(n, dims, dtype)| format!("{n} {dtype} {dims:?}"))
        .collect();
    format!("[{}]", items.join(", "))
}

/// The bundled ONNX graph and golden file of the component are the ones `bundle.json` hashed
/// (a bundle may ship a component's binaries without its graph: then there is nothing to tie).
pub fn hashed_inputs(manifest: &Manifest, c: &BundleComponent) -> Vec<String> {
    let mut problems = Vec::new();
    let graphs: Vec<&ManifestEntry> = manifest
        .files
        .iter()
        .filter(|f| f.role == Role::Onnx && f.path.starts_with(&format!("onnx/{}/", c.name)))
        .collect();
    if !graphs.is_empty() && !graphs.iter().any(|f| f.sha256 == c.onnx_sha256) {
        problems.push(format!(
            "{}: not the graph reports/bundle.json says `{}` was built from (sha256 {})",
            graphs[0].path, c.name, c.onnx_sha256
        ));
    }
    let goldens = manifest
        .files
        .iter()
        .filter(|f| f.role == Role::Golden)
        .collect::<Vec<_>>();
    if !graphs.is_empty() && !goldens.iter().any(|f| f.sha256 == c.golden_sha256) {
        problems.push(format!(
            "golden/: no golden file is the one reports/bundle.json says `{}` was checked against (sha256 {})",
            c.name, c.golden_sha256
        ));
    }
    problems
}

/// Binaries and wrappers (in `ctx/`, or listed as wrappers anywhere) no component of
/// `bundle.json` owns: nothing the loader would open escapes the component checks.
fn orphans(manifest: &Manifest, info: &BundleInfo) -> Vec<String> {
    manifest
        .files
        .iter()
        .filter(|f| {
            f.role == Role::EpcontextWrapper
                || (f.path.starts_with("ctx/")
                    && (f.path.ends_with(".bin") || f.path.ends_with("_ctx.onnx")))
        })
        .filter(|f| {
            !info.components.iter().any(|c| {
                let stem = c.bin_file.trim_end_matches(".bin");
                f.path == format!("ctx/{}", c.bin_file) || f.path == format!("ctx/{stem}_ctx.onnx")
            })
        })
        .map(|f| {
            format!(
                "{}: no component of reports/bundle.json owns this file",
                f.path
            )
        })
        .collect()
}
