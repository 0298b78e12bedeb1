//! How `verify` reads the build records a bundle ships (`ctx/<component>.record.json`): each
//! must be a record of this tool's schema, and what `bundle.json` (hence the card) says was
//! compiled must be what the record says: options, toolchain, the binary's sha256, and the
//! QAIRT / QNN build and tool identity the runtime reported when it compiled the binary.

use std::path::Path;

use super::info::{BuiltBy, BundleComponent, BundleInfo};
use super::manifest::Manifest;
use xtask_ctx_build::facts::{ContextFacts, StepFacts, ToolVersions};
use xtask_ctx_build::fingerprint::ComponentRecord;

/// Problems found, each named (empty: the records back every component of `bundle.json`
/// `selected` accepts; the bundle-wide versions are compared when all are selected).
pub fn check_records(
    dir: &Path,
    manifest: &Manifest,
    info: &BundleInfo,
    selected: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let mut problems = Vec::new();
    let step = format!("context@soc{}", info.soc_id);
    let mut recorded: Vec<(&str, ToolVersions)> = Vec::new();
    for c in info.components.iter().filter(|c| selected(&c.name)) {
        match context_facts(dir, manifest, &step, &c.name) {
            Ok(facts) => {
                problems.extend(compare(c, &facts, manifest));
                recorded.push((&c.name, facts.versions));
            }
            Err(problem) => problems.push(problem),
        }
    }
    if recorded.len() == info.components.len() {
        let by_records: Vec<(&str, &ToolVersions)> =
            recorded.iter().map(|(c, v)| (*c, v)).collect();
        problems.extend(compare_built_by(&info.built_by, &BuiltBy::of(&by_records)));
    }
    problems
}

/// The context step's facts of component `name`'s record in the bundle, or why there are none.
fn context_facts(
    dir: &Path,
    manifest: &Manifest,
    step: &str,
    name: &str,
) -> Result<ContextFacts, String> {
    let rel = format!("ctx/{name}.record.json");
    if !manifest.files.iter().any(|f| f.path == rel) {
        return Err(format!(
            "{rel}: not in the bundle (its build facts cannot be checked)"
        ));
    }
    let record = ComponentRecord::load(&dir.join(&rel));
    match record.step(step).map(|r| &r.facts) {
        Ok(StepFacts::Context(f)) => Ok((**f).clone()),
        Ok(_) => Err(format!("{rel}: `{step}` holds no context facts")),
        Err(e) => Err(format!("{rel}: {e:#}")),
    }
}

/// What `bundle.json` says of one component against its context record: the compile options,
/// the versions, and the shipped binary.
fn compare(c: &BundleComponent, facts: &ContextFacts, manifest: &Manifest) -> Vec<String> {
    let mut problems = Vec::new();
    let graph = facts.target.graph.as_ref();
    let stated = (c.optimization_level, c.fp16, c.vtcm_mb, &c.built_with);
    let built = graph.map(|g| (g.optimization_level, g.fp16, g.vtcm_mb, &facts.versions));
    if built != Some(stated) {
        problems.push(format!(
            "reports/bundle.json says `{}` was built with O{}, fp16 {}, VTCM {} by {}, its record says otherwise ({})",
            c.name,
            c.optimization_level,
            c.fp16,
            c.vtcm_mb,
            c.toolchain.label(),
            StepFacts::Context(Box::new(facts.clone())).summary()
        ));
    }
    let bin = format!("ctx/{}", c.bin_file);
    let shipped = manifest.files.iter().find(|f| f.path == bin);
    if shipped.map(|f| &f.sha256) != Some(&facts.binary.sha256) {
        problems.push(format!("{bin}: not the binary its build record names"));
    }
    // The wrapper is the context step's output too: one edited (to name another binary or
    // other I/O) and re-hashed into the manifest is not the one the record holds.
    let wrapper = format!("ctx/{}_ctx.onnx", c.bin_file.trim_end_matches(".bin"));
    let shipped = manifest.files.iter().find(|f| f.path == wrapper);
    if shipped.is_some_and(|f| f.sha256 != facts.wrapper.sha256) {
        problems.push(format!(
            "{wrapper}: not the wrapper its build record names (sha256 {}, recorded {})",
            shipped.map_or("", |f| &f.sha256),
            facts.wrapper.sha256
        ));
    }
    if facts.graph_name != c.graph_name {
        problems.push(format!(
            "reports/bundle.json says `{}` was compiled as graph {:?}, its record says {:?}",
            c.name, c.graph_name, facts.graph_name
        ));
    }
    problems
}

/// The bundle-wide versions `bundle.json` (and the card) states against those its records do.
fn compare_built_by(stated: &BuiltBy, records: &BuiltBy) -> Vec<String> {
    if stated == records {
        return Vec::new();
    }
    let line = |b: &BuiltBy| {
        format!(
            "QAIRT {}, QNN build {}, ONNX Runtime {}, xtask {}",
            b.qairt, b.qnn_build, b.onnxruntime, b.xtask
        )
    };
    vec![format!(
        "reports/bundle.json says the binaries were built by {}; their build records say {}",
        line(stated),
        line(records)
    )]
}

/// `check_records` on a bundle folder (its manifest and `reports/bundle.json`); a bundle
/// whose `bundle.json` is unreadable is reported by the card check instead.
pub fn check_bundle(dir: &Path) -> Vec<String> {
    let manifest = super::manifest::read_manifest(dir);
    let info = super::info::read_info(dir);
    match (manifest, info) {
        (Ok(m), Ok(i)) => check_records(dir, &m, &i, &|_| true),
        _ => Vec::new(),
    }
}
