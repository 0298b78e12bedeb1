//! Proving a bundle intact: the one check `fetch` runs too (`intact`: every file re-hashed
//! against `manifest.json`, bound to `bundle.json`, to each other and to their build records,
//! the card and the chain's report against the reports, the signature), then every binary
//! loading on the HTP backend (after the QNN build its record says compiled it is checked
//! against this runtime's).

use std::path::Path;

use anyhow::{Result, bail};

use super::info::{BundleInfo, read_info, reported_qnn};
use super::intact::{Scope, bundled_figures};
use super::manifest::{Role, read_manifest};
use super::reader;
use super::signature::{Signed, VerifyingKey};
use xtask_base::vocab::BackendKind;
use xtask_onnx::onnx::proto::OnnxSummary;
use xtask_runtime::runtime::{Backend, HtpTarget, Runtime};

/// What `verify` proved: how many context binaries loaded on the HTP, and the signature.
pub struct Verified {
    pub loaded: usize,
    pub signed: Signed,
}

/// Checks everything a bundle claims (with `key`, a valid signature by it over exactly the
/// bundle's files is required), then loads every context binary on the HTP.
pub fn verify_bundle(root: &Path, dir: &Path, key: Option<&VerifyingKey>) -> Result<Verified> {
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
    let checked = super::intact::check(dir, &Scope::all(), key)?;
    if !checked.problems.is_empty() {
        bail!(
            "bundle {} is NOT intact:\n  {}",
            dir.display(),
            checked.problems.join("\n  ")
        );
    }
    Ok(Verified {
        loaded: load_binaries(root, dir)?,
        signed: checked.signed,
    })
}

fn wrappers(dir: &Path) -> Result<Vec<String>> {
    Ok(read_manifest(dir)?
        .files
        .into_iter()
        .filter(|f| f.role == Role::EpcontextWrapper)
        .map(|f| f.path)
        .collect())
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

/// The bundle's one verdict, as its card states it: the chain's on the HTP with every
/// context's HTP parity (UNMEASURED when either never ran on these binaries).
pub fn bundle_verdict(dir: &Path) -> Result<xtask_base::vocab::Verdict> {
    let f = bundled_figures(dir)?;
    Ok(super::card::bundle_verdict(
        &f.info,
        f.htp.as_ref(),
        f.run.as_ref(),
    ))
}

/// What HTP parity never measured in the bundle: `bundle.json`'s list (a package made with
/// `--allow-unmeasured`), or every component when the bundle holds no HTP parity report.
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
