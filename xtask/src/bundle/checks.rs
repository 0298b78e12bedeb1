//! What packaging refuses and what it leaves out: broken artifacts (refused whatever the
//! freshness), and reports that failed or are about other binaries (left out of the card).

use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::ctx_build::fingerprint::ComponentRecord;
use crate::hashing::HashMemo;
use crate::recipe::Component;
use crate::soc::Soc;

/// What is wrong with a component's built binary and wrapper, whatever its freshness: the
/// binary must hash to what its context step recorded, and the wrapper's EPContext node must
/// name that binary, beside it (a path leaving the folder is refused).
pub fn broken_artifacts(
    root: &Path,
    comp: &Component,
    record: &ComponentRecord,
    soc: &Soc,
    art: &crate::ctx_build::plan::Artifacts,
    memo: &mut HashMemo,
) -> Vec<String> {
    let mut broken = Vec::new();
    let name = comp.name();
    let bin_rel = art.bin.display().to_string();
    let recorded = record
        .steps
        .get(&format!("context@soc{}", soc.id))
        .and_then(|r| r.outputs.get(&bin_rel));
    match (recorded, memo.sha256(&root.join(&art.bin))) {
        (_, Err(_)) => broken.push(format!("{name}: {bin_rel} is missing")),
        (None, _) => match &record.refused {
            Some(why) => broken.push(format!("{name}: {why}")),
            None => broken.push(format!("{name}: {bin_rel} has no build record")),
        },
        (Some(want), Ok(got)) if *want != got => broken.push(format!(
            "{name}: {bin_rel} is not the binary its build recorded (sha256 {got}, recorded {want}): truncated or replaced"
        )),
        _ => {}
    }
    let wrapper = root.join(&art.wrapper);
    let targets: Vec<String> = crate::onnx::proto::read_summary(&wrapper)
        .map(|s| {
            s.nodes
                .iter()
                .filter(|n| n.op_type == "EPContext")
                .filter_map(|n| n.attr_str("ep_cache_context").map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let bin_name = art.bin_name();
    if !wrapper.is_file() {
        broken.push(format!("{name}: {} is missing", art.wrapper.display()));
    } else if targets.is_empty() {
        broken.push(format!(
            "{name}: {} is not a readable EPContext wrapper",
            art.wrapper.display()
        ));
    }
    for t in targets.iter().filter(|t| **t != bin_name) {
        broken.push(format!(
            "{name}: {} points at {t:?}, not at {bin_name} beside it",
            art.wrapper.display()
        ));
    }
    broken
}

/// A report the card may use: it must pass (a failed gate refuses the package) and be newer
/// than every packaged context binary (else it is about other binaries and is left out).
pub fn usable_report(
    path: &Path,
    comps: &[&Component],
    newest_context: u64,
    what: &str,
) -> Result<Option<serde_json::Value>> {
    let Ok(bytes) = std::fs::read(path) else {
        return Ok(None);
    };
    let report: serde_json::Value = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not valid JSON", path.display()))?;
    let names: Vec<&str> = comps.iter().map(|c| c.name()).collect();
    let created = report["created_unix"].as_u64().unwrap_or(0);
    // A merged report holds results of several runs: each selected component's own time
    // counts (older than the binaries means it is about other binaries).
    let measured: Vec<(&str, u64)> = report["components"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let when = c["measured_unix"]
                .as_u64()
                .filter(|t| *t > 0)
                .unwrap_or(created);
            c["component"].as_str().map(|n| (n, when))
        })
        .collect();
    let oldest = names
        .iter()
        .map(|n| measured.iter().find(|(m, _)| m == n).map(|(_, t)| *t))
        .collect::<Option<Vec<u64>>>()
        .map(|ts| ts.into_iter().min().unwrap_or(created))
        .unwrap_or(created);
    if oldest < newest_context {
        return Ok(None); // about other binaries than these
    }
    if names.iter().any(|n| !measured.iter().any(|(m, _)| m == n)) {
        return Ok(None);
    }
    if report["pass"] == false {
        bail!(
            "{what} failed ({}): fix it before packaging",
            path.display()
        );
    }
    Ok(Some(report))
}
