//! The built context binary of a component, checked before it is loaded: present, fresh
//! against its current inputs, byte-identical to what its build recorded, and built by a QNN
//! no newer than the runtime's. Shared by `parity --backend htp` and `run --backend htp`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::fingerprint::{ComponentRecord, Freshness};
use crate::plan::{StepKind, Versions, plan_component};
use xtask_base::hashing::HashMemo;
use xtask_recipe::recipe::{Component, Model};
use xtask_runtime::runtime::Runtime;

/// The ORT and QNN versions the libraries report (they enter every fingerprint).
pub fn runtime_versions(rt: &Runtime) -> Result<Versions> {
    if let Some(why) = rt.qnn_unavailable() {
        bail!("{why}");
    }
    let qnn = rt
        .qnn_build_version()
        .context("the QNN backend reported no build version (run `cargo xtask doctor`)")?;
    Ok(Versions {
        onnxruntime: rt.ort_version.clone(),
        qnn,
        toolchain: crate::facts::ToolchainUsed::embedded(),
        xtask: xtask_base::identity::xtask_id().into(),
        libraries: libraries_sha256(&rt.libs)?,
    })
}

/// The sha256 over the libraries the steps load: ONNX Runtime, the QNN EP plugin and every
/// `libQnn*.so` beside the backends, each by content (`name sha256` lines, sorted). A library
/// of the embedded runtime has just been checked against its pin (`trust_stamp`): its sha256
/// is taken from that check; others are hashed, once per process.
pub fn libraries_sha256(libs: &xtask_runtime::runtime::bootstrap::RuntimeLibs) -> Result<String> {
    static DONE: std::sync::Mutex<Option<(PathBuf, String)>> = std::sync::Mutex::new(None);
    let mut done = DONE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((for_lib, sha)) = done.as_ref()
        && *for_lib == libs.ort_dylib
    {
        return Ok(sha.clone());
    }
    let mut files = vec![libs.ort_dylib.clone()];
    if let Some(q) = &libs.qnn {
        files.push(q.plugin.clone());
        let mut backends: Vec<PathBuf> = std::fs::read_dir(&q.dir)
            .with_context(|| format!("cannot list {}", q.dir.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("libQnn") && n.contains(".so"))
                    && p.is_file()
            })
            .collect();
        backends.sort();
        files.extend(backends);
    }
    let mut lines = String::new();
    for f in &files {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        // Checked against its pin before this command loaded it: that check's sha256.
        let sha = match xtask_runtime::runtime::trust_stamp::verified_sha256(f) {
            Some(sha) => sha,
            None => xtask_base::hashing::sha256_file(f)
                .with_context(|| format!("cannot hash the runtime library {}", f.display()))?,
        };
        lines.push_str(&format!("{name} {sha}\n"));
    }
    let sha = xtask_base::hashing::sha256_bytes(lines.as_bytes());
    *done = Some((libs.ort_dylib.clone(), sha.clone()));
    Ok(sha)
}

/// The versions with the toolchain that built this component's artifacts, as its convert
/// step's facts name it (either toolchain's artifacts are valid; freshness is about their
/// inputs).
pub fn as_built(mut versions: Versions, record: &ComponentRecord) -> Versions {
    if let Some(s) = record.steps.get("convert") {
        versions.toolchain = s.facts.versions().toolchain.clone();
    }
    versions
}

/// For `parity --backend htp`: the component's wrapper, refused when the binary is missing,
/// stale against the current inputs, or not byte-identical to what the build recorded.
pub fn fresh_context_wrapper(
    root: &Path,
    rt: &Runtime,
    model: &Model,
    comp: &Component,
) -> Result<PathBuf> {
    let mut wrappers = fresh_context_wrappers(root, rt, model, &[comp])?;
    wrappers
        .remove(comp.name())
        .context("no wrapper for the component")
}

/// The wrappers of `comps`, or ONE error listing every component without a fresh binary and
/// the one `build-ctx --only a,b,c` command that builds them all.
pub fn fresh_context_wrappers(
    root: &Path,
    rt: &Runtime,
    model: &Model,
    comps: &[&Component],
) -> Result<BTreeMap<String, PathBuf>> {
    let soc = xtask_recipe::htp_target::target_soc(model, None)?;
    let versions = runtime_versions(rt)?;
    let name = &model.file.model.name;
    let (mut wrappers, mut problems, mut names) = (BTreeMap::new(), Vec::new(), Vec::new());
    for comp in comps {
        let rebuild = format!(
            "cargo xtask build-ctx --soc {} --model {name} --only {}",
            soc.id,
            comp.name()
        );
        match wrapper_of(root, model, comp, &soc, versions.clone(), &rebuild)? {
            Ok(path) => {
                wrappers.insert(comp.name().to_string(), path);
            }
            Err(problem) => {
                problems.push((comp.name(), problem));
                names.push(comp.name());
            }
        }
    }
    let only = match names.len() == model.components.len() {
        true => String::new(),
        false => format!(" --only {}", names.join(",")),
    };
    let rebuild = format!(
        "cargo xtask build-ctx --soc {} --model {name}{only}",
        soc.id
    );
    match problems.as_slice() {
        [] => Ok(wrappers),
        [(_, one)] => bail!("{one} (run `{rebuild}`)"),
        many => {
            let lines: Vec<String> = many.iter().map(|(c, p)| format!("  {c}: {p}")).collect();
            bail!(
                "{} component(s) of model `{name}` have no fresh context binary:\n{}\nbuild them with one command: `{rebuild}`",
                many.len(),
                lines.join("\n")
            )
        }
    }
}

/// The component's wrapper, or what is wrong with its binary (outer error: the check itself
/// failed).
fn wrapper_of(
    root: &Path,
    model: &Model,
    comp: &Component,
    soc: &xtask_base::soc::Soc,
    versions: Versions,
    rebuild: &str,
) -> Result<std::result::Result<PathBuf, String>> {
    // Before an HTP load: the binary and its inputs are re-hashed in full, never taken on
    // (size, mtime) trust.
    let mut memo = HashMemo::full();
    let art = crate::plan::artifacts(&model.file.model.name, comp.name(), soc);
    let versions = as_built(versions, &ComponentRecord::load(&root.join(&art.record)));
    let plan = plan_component(root, model, comp, soc, &versions, &mut memo)?;
    let step = plan
        .steps
        .iter()
        .find(|s| s.kind == StepKind::Context)
        .context("no context step")?;
    let bin = root.join(&plan.artifacts.bin);
    let shown = plan.artifacts.bin.display();
    if !bin.is_file() {
        return Ok(Err(format!("no context binary {shown}")));
    }
    if let Freshness::Dirty(reasons) = &step.freshness {
        return Ok(Err(format!(
            "context binary {shown} is stale: {}",
            reasons.join("; ")
        )));
    }
    let record = ComponentRecord::load(&root.join(&plan.artifacts.record));
    let recorded = record
        .steps
        .get(&step.record_name)
        .and_then(|r| r.outputs.get(&plan.artifacts.bin.display().to_string()));
    // The same full memo: a binary the freshness check just hashed is not read a second time.
    if recorded != Some(&memo.sha256(&bin)?) {
        return Ok(Err(format!(
            "context binary {shown} does not match the sha256 its build recorded"
        )));
    }
    let built_with = match record.steps.get(&step.record_name).map(|r| &r.facts) {
        Some(crate::facts::StepFacts::Context(f)) => f.ep_sdk_version.as_deref(),
        _ => None,
    };
    let what = plan.artifacts.bin.display().to_string();
    if let Some(note) = xtask_runtime::runtime::version::check_context_version(
        &what,
        built_with,
        &versions.qnn,
        rebuild,
    )? {
        xtask_base::ui::warnings::warn(note);
    }
    Ok(Ok(root.join(&plan.artifacts.wrapper)))
}

/// A quantized component's QDQ ONNX, which its CPU stage runs on ORT's CPU EP (QNN's CPU
/// backend does not execute QDQ graphs): refused when missing, or stale against the current
/// ONNX, calibration set and `[quantize]` settings, with the build command.
pub fn fresh_qdq_model(
    root: &Path,
    rt: &Runtime,
    model: &Model,
    comp: &Component,
) -> Result<PathBuf> {
    let soc = xtask_recipe::htp_target::target_soc(model, None)?;
    let name = &model.file.model.name;
    let art = crate::plan::artifacts(name, comp.name(), &soc);
    let versions = as_built(
        runtime_versions(rt)?,
        &ComponentRecord::load(&root.join(&art.record)),
    );
    let mut memo = HashMemo::full();
    let plan = plan_component(root, model, comp, &soc, &versions, &mut memo)?;
    let rebuild = format!(
        "cargo xtask build-ctx --soc {} --model {name} --only {}",
        soc.id,
        comp.name()
    );
    let step = plan
        .steps
        .iter()
        .find(|s| s.kind == StepKind::Quantize)
        .with_context(|| format!("`{}` is not quantized", comp.name()))?;
    let qdq = &plan.artifacts.qdq;
    if !root.join(qdq).is_file() {
        bail!(
            "`{}` is {}: its QDQ model {} is missing (run `{rebuild}`)",
            comp.name(),
            comp.precision(),
            qdq.display()
        );
    }
    if let Freshness::Dirty(reasons) = &step.freshness {
        bail!(
            "`{}` is {}: its QDQ model {} is stale: {} (run `{rebuild}`)",
            comp.name(),
            comp.precision(),
            qdq.display(),
            reasons.join("; ")
        );
    }
    Ok(root.join(qdq))
}
