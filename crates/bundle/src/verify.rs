//! Proving a bundle intact: every file re-hashed against `manifest.json` (a changed, missing
//! or extra file is named), `SHA256SUMS` consistent, the files bound to each other
//! (`cross_refs`: every EPContext wrapper owned by its component and naming its binary), every binary loading on the HTP backend (after the QNN build its record
//! says compiled it is checked against this runtime's), the card's tables equal to what the
//! bundled reports render, and `bundle.json`'s build facts equal to the shipped build records.

use std::path::Path;

use anyhow::{Result, bail};

use super::card::{RUN_BACKENDS, htp_figures, latency_figures, render};
use super::info::{BundleInfo, read_info, reported_qnn};
use super::manifest::{check_files, read_manifest};
use super::reader;
use xtask_base::vocab::BackendKind;
use xtask_chain::chain::report::RunReport;
use xtask_onnx::onnx::proto::OnnxSummary;
use xtask_parity::parity::report::ParityReport;
use xtask_runtime::runtime::{Backend, HtpTarget, Runtime};

/// Checks everything a bundle claims; returns how many context binaries loaded on the HTP.
pub fn verify_bundle(root: &Path, dir: &Path) -> Result<usize> {
    // Said as what it is, not as a bundle without manifest.json.
    if !dir.exists() {
        return Err(xtask_base::bad_input::BadInput(anyhow::anyhow!(
            "bundle folder {} does not exist",
            dir.display()
        ))
        .into());
    }
    if !dir.is_dir() {
        bail!(
            "{} is not a folder (a bundle is the folder `cargo xtask package --out` wrote)",
            dir.display()
        );
    }
    let mut problems = check_files(dir)?;
    // Only a bundle of plain, listed, intact files is read any further (wrappers, card, loads).
    // Every wrapper is checked there: owned by a component, naming its binary beside it.
    if problems.is_empty()
        && let (Ok(manifest), Ok(info)) = (read_manifest(dir), read_info(dir))
    {
        problems.extend(super::cross_refs::check(dir, &manifest, &info, &|_| true));
    }
    problems.extend(check_card(dir));
    problems.extend(check_chain(dir));
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

/// Renders the card from the bundled reports and compares it with README.md.
pub fn check_card(dir: &Path) -> Vec<String> {
    let expected = match rendered_card(dir) {
        Ok(card) => card,
        Err(e) => return vec![format!("{e:#}: the card cannot be checked")],
    };
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

/// The card the bundle's own reports render, each read through its type (a report of another
/// schema is refused, naming it and the `package` command that writes the bundle again).
fn rendered_card(dir: &Path) -> Result<String> {
    let info = read_info(dir)?;
    let rebuild = repackage(dir, &info);
    let htp: Option<ParityReport> = reader::read_record(
        dir,
        &format!("reports/parity-{}.json", BackendKind::Htp),
        &rebuild,
    )?;
    let mut run: Option<RunReport> = None;
    for b in RUN_BACKENDS {
        run = reader::read_record(dir, &format!("reports/run-{b}.json"), &rebuild)?;
        if run.is_some() {
            break;
        }
    }
    Ok(render(
        &info,
        htp.as_ref().map(htp_figures).as_ref(),
        run.as_ref().map(latency_figures).as_ref(),
    ))
}

fn repackage(dir: &Path, info: &BundleInfo) -> String {
    format!(
        "cargo xtask package --model {} --soc {} --out {}",
        info.model,
        info.soc_id,
        dir.display()
    )
}

/// Loads every wrapped binary on the HTP backend, after checking the QNN build that compiled it
/// (as its build record states it) is no newer than this runtime's.
fn load_binaries(root: &Path, dir: &Path) -> Result<usize> {
    let info = read_info(dir)?;
    let rt = Runtime::load(xtask_runtime::runtime::bootstrap::ensure_runtime_rehashed(
        root,
    )?)?;
    let target = HtpTarget::for_built_contexts(info.soc_id, info.htp_arch);
    let runtime_qnn = rt.qnn_build_version().unwrap_or_default();
    let all = wrappers(dir)?;
    let mut problems = Vec::new();
    let task = xtask_base::ui::progress::Task::new("verify: HTP loads", all.len());
    for rel in &all {
        task.working_on(rel);
        let summary = xtask_onnx::onnx::proto::parse_model(&reader::read_small(dir, rel)?)?;
        match xtask_runtime::runtime::version::check_context_version(
            rel,
            compiled_by(&info, &summary),
            &runtime_qnn,
            "cargo xtask build-ctx",
        ) {
            Err(e) => {
                problems.push(format!("{e:#}"));
                continue;
            }
            Ok(Some(note)) => xtask_base::ui::warnings::warn(note),
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

/// The QNN build that compiled the binary a wrapper points at, as the component's build record
/// states it (`bundle.json`'s copy, proven equal to the record before anything loads).
fn compiled_by<'a>(info: &'a BundleInfo, wrapper: &OnnxSummary) -> Option<&'a str> {
    let bin = wrapper
        .nodes
        .iter()
        .filter(|n| n.op_type == "EPContext")
        .find_map(|n| n.attr_str("ep_cache_context"))?;
    info.components
        .iter()
        .find(|c| c.bin_file == bin)
        .map(|c| reported_qnn(&c.built_with))
}

/// What HTP parity never measured in the bundle: `bundle.json`'s list (a package made with
/// `--allow-unmeasured`), or every component when the bundle holds no HTP parity report.
/// The chain's report in the bundle against `bundle.json`: present and consistent with its own
/// figures when the bundle claims a measured chain; a report that passes figures failing the
/// gate it names (or says PASS over failing rows) is refused.
fn check_chain(dir: &Path) -> Vec<String> {
    let Ok(info) = read_info(dir) else {
        return Vec::new();
    };
    let rebuild = repackage(dir, &info);
    let path = format!("reports/run-{}.json", BackendKind::Htp);
    let report: Option<RunReport> = match reader::read_record(dir, &path, &rebuild) {
        Ok(r) => r,
        Err(e) => return vec![format!("{e:#}")],
    };
    match (report, &info.chain_unmeasured) {
        (None, None) => vec![format!(
            "{path} is missing: bundle.json says the chain was measured on the HTP, and the bundle's verdict is that run's"
        )],
        (Some(r), _) => {
            let mut problems: Vec<String> = r
                .contradictions()
                .into_iter()
                .map(|c| format!("{path}: {c}"))
                .collect();
            if !r.pass {
                problems.push(format!(
                    "{path}: the chain FAILED on the HTP ({}); a bundle's verdict is its chain's",
                    r.failures.join("; ")
                ));
            }
            problems
        }
        (None, Some(_)) => Vec::new(),
    }
}

/// The bundle's one verdict, as its card states it: the chain's on the HTP with every
/// context's HTP parity (UNMEASURED when either never ran on these binaries).
pub fn bundle_verdict(dir: &Path) -> Result<xtask_base::vocab::Verdict> {
    let info = read_info(dir)?;
    let rebuild = repackage(dir, &info);
    let htp: Option<ParityReport> = reader::read_record(
        dir,
        &format!("reports/parity-{}.json", BackendKind::Htp),
        &rebuild,
    )?;
    let run: Option<RunReport> = reader::read_record(
        dir,
        &format!("reports/run-{}.json", BackendKind::Htp),
        &rebuild,
    )?;
    Ok(super::card::bundle_verdict(
        &info,
        htp.as_ref().map(htp_figures).as_ref(),
        run.as_ref().map(latency_figures).as_ref(),
    ))
}

pub fn htp_unmeasured(dir: &Path) -> Result<Vec<String>> {
    let info = read_info(dir)?;
    if !info.htp_unmeasured.is_empty() {
        return Ok(info.htp_unmeasured);
    }
    let report = format!("reports/parity-{}.json", BackendKind::Htp);
    if reader::open(dir, &report).is_ok() {
        return Ok(Vec::new());
    }
    Ok(info
        .components
        .iter()
        .map(|c| format!("{}: no HTP parity report in the bundle", c.name))
        .collect())
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
