//! How `verify` reads the build records a bundle ships (`ctx/<component>.record.json`): each
//! must be a record of this tool's schema, and what `bundle.json` (hence the card) says was
//! compiled must be what the record says: options, toolchain, and the binary's sha256.

use std::path::Path;

use super::card::BundleInfo;
use super::manifest::Manifest;
use crate::ctx_build::facts::StepFacts;
use crate::ctx_build::fingerprint::ComponentRecord;

/// Problems found, each named (empty: the records back every component of `bundle.json`).
pub fn check_records(dir: &Path, manifest: &Manifest, info: &BundleInfo) -> Vec<String> {
    let mut problems = Vec::new();
    let step = format!("context@soc{}", info.soc_id);
    for c in &info.components {
        let rel = format!("ctx/{}.record.json", c.name);
        if !manifest.files.iter().any(|f| f.path == rel) {
            problems.push(format!(
                "{rel}: not in the bundle (its build facts cannot be checked)"
            ));
            continue;
        }
        let record = ComponentRecord::load(&dir.join(&rel));
        let facts = match record.step(&step).map(|r| &r.facts) {
            Ok(StepFacts::Context(f)) => f,
            Ok(_) => {
                problems.push(format!("{rel}: `{step}` holds no context facts"));
                continue;
            }
            Err(e) => {
                problems.push(format!("{rel}: {e:#}"));
                continue;
            }
        };
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
                StepFacts::Context(facts.clone()).summary()
            ));
        }
        let bin = format!("ctx/{}", c.bin_file);
        let shipped = manifest.files.iter().find(|f| f.path == bin);
        if shipped.map(|f| &f.sha256) != Some(&facts.binary.sha256) {
            problems.push(format!("{bin}: not the binary its build record names"));
        }
    }
    problems
}

/// `check_records` on a bundle folder (its manifest and `reports/bundle.json`); a bundle
/// whose `bundle.json` is unreadable is reported by the card check instead.
pub fn check_bundle(dir: &Path) -> Vec<String> {
    let manifest = super::manifest::read_manifest(dir);
    let info = std::fs::read(dir.join("reports/bundle.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<BundleInfo>(&b).ok());
    match (manifest, info) {
        (Ok(m), Some(i)) => check_records(dir, &m, &i),
        _ => Vec::new(),
    }
}
