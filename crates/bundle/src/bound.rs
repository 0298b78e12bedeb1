//! Every file of a bundle bound to `reports/bundle.json`. The manifest's hashes prove only that
//! the files are the ones it lists, and whoever can write the files can write the manifest.
//! `bundle.json` lists every other file of the bundle with its size, sha256 and role (all but
//! itself and the card, which `verify` renders again from the reports, and the manifest, its
//! sums and the signature), and the components it describes name their binaries, graphs and
//! goldens by hash: a file changed, added or deleted and then re-hashed into the manifest no
//! longer agrees with it, whatever the file (external data, the trace, a report).
//!
//! What the files themselves require is checked too, so that a file missing from both the
//! manifest and `bundle.json` is still named: each graph's external data (its own
//! `location`s), the tensors a trace JSON names (`npz`), and each component's binary, build
//! record, graph and golden.

use std::collections::BTreeMap;
use std::path::Path;

use super::assemble::{CARD, INFO};
use super::info::BundleInfo;
use super::manifest::{Manifest, ManifestEntry, Role};
use super::reader;

/// Graphs larger than this are not parsed for their external data (a graph with its weights
/// inline names none; `bundle.json` still binds every file).
const PARSED_GRAPH_LIMIT: u64 = 256 << 20;

/// Every disagreement between the manifest, `bundle.json` and what the files present require,
/// each naming the file (empty: bound). `present`: whether a listed file is in the folder (a
/// partial download holds only some).
pub fn check(
    dir: &Path,
    manifest: &Manifest,
    info: &BundleInfo,
    present: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let mut problems = listed_as_bound(manifest, info);
    for own in [INFO, CARD] {
        if !manifest.files.iter().any(|f| f.path == own) {
            problems.push(format!("{own}: not in the bundle (every bundle has one)"));
        }
    }
    problems.extend(components_held(manifest, info));
    for f in manifest.files.iter().filter(|f| present(&f.path)) {
        match f.role {
            Role::Onnx => problems.extend(external_data(dir, manifest, f)),
            Role::Trace if f.path.ends_with(".json") => {
                problems.extend(trace_tensors(dir, manifest, f))
            }
            _ => {}
        }
    }
    problems
}

/// The manifest's entries against `bundle.json`'s `files`: the same paths with the same size,
/// sha256 and role.
fn listed_as_bound(manifest: &Manifest, info: &BundleInfo) -> Vec<String> {
    let mut problems = Vec::new();
    let bound: BTreeMap<&str, &ManifestEntry> =
        info.files.iter().map(|f| (f.path.as_str(), f)).collect();
    for f in &manifest.files {
        if f.path == INFO || f.path == CARD {
            continue;
        }
        match bound.get(f.path.as_str()) {
            None => problems.push(format!(
                "{}: listed in manifest.json, but {INFO} does not bind it (a file added to the bundle after it was packaged)",
                f.path
            )),
            Some(b) if b.sha256 != f.sha256 || b.bytes != f.bytes => problems.push(format!(
                "{}: manifest.json says sha256 {} ({} bytes), {INFO} binds sha256 {} ({} bytes): changed after the bundle was packaged",
                f.path, f.sha256, f.bytes, b.sha256, b.bytes
            )),
            Some(b) if b.role != f.role => problems.push(format!(
                "{}: manifest.json says role {}, {INFO} says {}",
                f.path, f.role, b.role
            )),
            Some(_) => {}
        }
    }
    let listed: Vec<&str> = manifest.files.iter().map(|f| f.path.as_str()).collect();
    for f in &info.files {
        if f.path == INFO || f.path == CARD {
            problems.push(format!("{INFO}: binds {}, which it cannot", f.path));
        } else if !listed.contains(&f.path.as_str()) {
            problems.push(format!(
                "{}: {INFO} binds it ({} role, sha256 {}), but the bundle does not hold it (not in manifest.json)",
                f.path, f.role, f.sha256
            ));
        }
    }
    problems
}

/// Each component of `bundle.json` has its binary, build record, graph and golden in the
/// bundle (the graph and golden of the hashes `bundle.json` states).
fn components_held(manifest: &Manifest, info: &BundleInfo) -> Vec<String> {
    let mut problems = Vec::new();
    for c in &info.components {
        let has = |role: Role, path: &str| {
            manifest
                .files
                .iter()
                .any(|f| f.role == role && f.path == path)
        };
        let record = format!("ctx/{}.record.json", c.name);
        for (role, path) in [
            (Role::ContextBinary, format!("ctx/{}", c.bin_file)),
            (Role::BuildRecord, record),
        ] {
            if !has(role, &path) {
                problems.push(format!(
                    "{path}: component `{}`'s {role} is not in the bundle",
                    c.name
                ));
            }
        }
        let graph = manifest.files.iter().any(|f| {
            f.role == Role::Onnx
                && f.path.starts_with(&format!("onnx/{}/", c.name))
                && f.sha256 == c.onnx_sha256
        });
        if !graph {
            problems.push(format!(
                "onnx/{}/: component `{}`'s graph (sha256 {}, as {INFO} states) is not in the bundle",
                c.name, c.name, c.onnx_sha256
            ));
        }
        let golden = manifest
            .files
            .iter()
            .any(|f| f.role == Role::Golden && f.sha256 == c.golden_sha256);
        if !golden {
            problems.push(format!(
                "golden/: component `{}`'s golden (sha256 {}, as {INFO} states) is not in the bundle",
                c.name, c.golden_sha256
            ));
        }
    }
    problems
}

/// The external-data files a bundled graph names are in the bundle beside it, as its
/// external data.
fn external_data(dir: &Path, manifest: &Manifest, graph: &ManifestEntry) -> Vec<String> {
    if graph.bytes > PARSED_GRAPH_LIMIT {
        return Vec::new();
    }
    let summary = match reader::read_small(dir, &graph.path)
        .and_then(|b| xtask_onnx::onnx::proto::parse_model(&b))
    {
        Ok(s) => s,
        Err(e) => return vec![format!("{}: not a readable ONNX graph ({e:#})", graph.path)],
    };
    let folder = graph.path.rsplit_once('/').map_or("", |(d, _)| d);
    let mut problems = Vec::new();
    for loc in &summary.external_data {
        let rel = format!("{folder}/{loc}");
        let held = manifest
            .files
            .iter()
            .any(|f| f.path == rel && f.role == Role::OnnxExternalData);
        if reader::unsafe_path(&rel).is_some() || !held {
            problems.push(format!(
                "{rel}: {} names it as its external data ({loc:?}), but the bundle does not hold it as external data beside the graph",
                graph.path
            ));
        }
    }
    problems
}

/// The tensors a trace JSON names (`npz`, beside it) are in the bundle as trace.
fn trace_tensors(dir: &Path, manifest: &Manifest, json: &ManifestEntry) -> Vec<String> {
    let meta: serde_json::Value = match reader::read_small(dir, &json.path)
        .and_then(|b| serde_json::from_slice(&b).map_err(Into::into))
    {
        Ok(m) => m,
        Err(e) => return vec![format!("{}: not a readable trace ({e:#})", json.path)],
    };
    let Some(npz) = meta["npz"].as_str() else {
        return vec![format!(
            "{}: no `npz` key naming the trace's tensors",
            json.path
        )];
    };
    let folder = json.path.rsplit_once('/').map_or("", |(d, _)| d);
    let rel = format!("{folder}/{npz}");
    let held = manifest
        .files
        .iter()
        .any(|f| f.path == rel && f.role == Role::Trace);
    if reader::unsafe_path(&rel).is_some() || npz.contains('/') || !held {
        return vec![format!(
            "{rel}: {} names it (`npz` = {npz:?}), but the bundle does not hold it as trace",
            json.path
        )];
    }
    Vec::new()
}
