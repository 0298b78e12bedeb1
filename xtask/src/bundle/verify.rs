//! Proving a bundle intact: every file re-hashed against `manifest.json` (a changed, missing
//! or extra file is named), `SHA256SUMS` consistent, every EPContext wrapper resolving to a
//! binary beside it, every binary loading on the HTP backend, and the card's tables equal to
//! what the bundled reports render.

use std::path::Path;

use anyhow::{Result, bail};

use super::card::{BundleInfo, htp_figures, latency_figures, render};
use super::manifest::{check_files, read_manifest};
use super::reader;
use crate::runtime::{Backend, HtpTarget, Runtime};
use crate::vocab::BackendKind;

/// Checks everything a bundle claims; returns how many context binaries loaded on the HTP.
pub fn verify_bundle(root: &Path, dir: &Path) -> Result<usize> {
    let mut problems = check_files(dir)?;
    // Only a bundle of plain, listed, intact files is read any further (wrappers, card, loads).
    if problems.is_empty() {
        problems.extend(check_wrappers(dir)?);
    }
    problems.extend(check_card(dir));
    problems.extend(super::records::check_bundle(dir));
    if !problems.is_empty() {
        bail!(
            "bundle {} is NOT intact:\n  {}",
            dir.display(),
            problems.join("\n  ")
        );
    }
    load_binaries(root, dir)
}

fn wrappers(dir: &Path) -> Result<Vec<String>> {
    Ok(read_manifest(dir)?
        .files
        .into_iter()
        .filter(|f| f.role == "epcontext-wrapper")
        .map(|f| f.path)
        .collect())
}

fn check_wrappers(dir: &Path) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    for rel in wrappers(dir)? {
        let parsed =
            reader::read_small(dir, &rel).and_then(|b| crate::onnx::proto::parse_model(&b));
        let Ok(summary) = parsed else {
            problems.push(format!("{rel}: not a readable ONNX wrapper"));
            continue;
        };
        let targets: Vec<String> = summary
            .nodes
            .iter()
            .filter(|n| n.op_type == "EPContext")
            .filter_map(|n| n.attr_str("ep_cache_context").map(str::to_string))
            .collect();
        if targets.is_empty() {
            problems.push(format!("{rel}: holds no EPContext node"));
        }
        for t in targets {
            let beside = match rel.rsplit_once('/') {
                Some((folder, _)) => format!("{folder}/{t}"),
                None => t.clone(),
            };
            if t.contains('/')
                || reader::unsafe_path(&beside).is_some()
                || reader::open(dir, &beside).is_err()
            {
                problems.push(format!(
                    "{rel}: its EPContext points at {t:?}, which is not a binary beside it"
                ));
            }
        }
    }
    Ok(problems)
}

/// Renders the card from the bundled reports and compares it with README.md.
pub fn check_card(dir: &Path) -> Vec<String> {
    let read = |rel: &str| {
        reader::read_small(dir, rel)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
    };
    let Some(info) =
        read("reports/bundle.json").and_then(|v| serde_json::from_value::<BundleInfo>(v).ok())
    else {
        return vec![
            "reports/bundle.json is missing or unreadable: the card cannot be checked".into(),
        ];
    };
    let htp = read("reports/parity-htp.json").map(|r| htp_figures(&r));
    let run = [BackendKind::Htp, BackendKind::Cpu, BackendKind::Ort]
        .iter()
        .find_map(|b| read(&format!("reports/run-{b}.json")))
        .map(|r| latency_figures(&r));
    let expected = render(&info, htp.as_ref(), run.as_ref());
    let actual = reader::read_small(dir, "README.md")
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    if actual == expected {
        return Vec::new();
    }
    let line = expected
        .lines()
        .zip(actual.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(expected.lines().count().min(actual.lines().count()));
    vec![format!(
        "README.md does not match the reports in the bundle (first difference at line {}: {:?})",
        line + 1,
        actual.lines().nth(line).unwrap_or("<end of file>")
    )]
}

fn load_binaries(root: &Path, dir: &Path) -> Result<usize> {
    let info: BundleInfo =
        serde_json::from_slice(&reader::read_small(dir, "reports/bundle.json")?)?;
    let rt = Runtime::load(crate::runtime::bootstrap::ensure_runtime_rehashed(root)?)?;
    let target = HtpTarget::for_built_contexts(info.soc_id, info.htp_arch);
    let mut problems = Vec::new();
    let all = wrappers(dir)?;
    let runtime_qnn = rt.qnn_build_version().unwrap_or_default();
    let task = crate::ui::progress::Task::new("verify: HTP loads", all.len());
    for rel in &all {
        task.working_on(rel);
        let summary = crate::onnx::proto::parse_model(&reader::read_small(dir, rel)?)?;
        let built_with = summary
            .nodes
            .iter()
            .find_map(|n| n.attr_str("ep_sdk_version"));
        match crate::runtime::version::check_context_version(
            rel,
            built_with,
            &runtime_qnn,
            "cargo xtask build-ctx",
        ) {
            Err(e) => {
                problems.push(format!("{e:#}"));
                continue;
            }
            Ok(Some(note)) => crate::ui::warnings::warn(note),
            Ok(None) => {}
        }
        if let Err(e) = rt.open(&dir.join(rel), &Backend::QnnHtp(target.clone())) {
            problems.push(format!("{rel}: does not load on the HTP backend: {e:#}"));
        }
        task.step_done(rel, true);
    }
    drop(task);
    if !problems.is_empty() {
        bail!(
            "bundle {} is NOT intact:\n  {}",
            dir.display(),
            problems.join("\n  ")
        );
    }
    Ok(all.len())
}

/// The command that comes after a verified bundle: a release dry run (it checks `hf` and the
/// login and lists what would change), for the bundle's own model.
pub fn next_step(dir: &Path) -> Result<String> {
    let model = super::manifest::read_manifest(dir)?.model;
    let model = if model == "tiny" {
        String::new()
    } else {
        format!(" --model {model}")
    };
    Ok(format!(
        "next: cargo xtask release --repo OWNER/NAME{model} --bundle {} --dry-run   (then without --dry-run to publish)",
        dir.display()
    ))
}
