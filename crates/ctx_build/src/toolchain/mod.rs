//! Who runs a build step. One `Toolchain` trait with the three operations of a component's
//! build (convert, cpu parity, context) and `render`, which says what a step will run with
//! machine-specific paths replaced by stable placeholders: the fingerprint hashes it and the
//! dry run prints it. Two implementations: the embedded ORT QNN EP runtime (`embedded`) and the
//! QAIRT SDK's command-line tools (`sdk`). Nothing outside this module asks which one runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde::Serialize;

use crate::artifacts::{Artifacts, StepKind};
use crate::facts::ToolchainUsed;
use xtask_base::hashing::sha256_bytes;
use xtask_base::soc::Soc;
use xtask_parity::parity::component::{ComponentResult, GoldenIo};
use xtask_recipe::htp_target::HtpTarget;
use xtask_recipe::htp_target::sdk_config::SdkConfigFile;
use xtask_recipe::recipe::{Component, Model};

pub mod embedded;
pub mod sdk;

/// The staging folder of a step as rendered (its real name is `ctx/<model>/.staging-<id>`).
pub const STAGING: &str = "STAGING";

/// What a step will run, with stable placeholders for machine-specific paths.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Rendered {
    /// Named parts that enter the step's fingerprint (`rendered HTP EP options` → its text).
    pub parts: BTreeMap<String, String>,
    /// Command lines run, in order (SDK tools); empty for the embedded runtime.
    pub commands: Vec<String>,
    /// Config files the step writes: (rendered path, JSON).
    pub files: Vec<(String, SdkConfigFile)>,
}

impl Rendered {
    /// A key part holding an option list as `key=value` lines.
    pub fn options(mut self, name: &str, opts: &[(String, String)]) -> Self {
        let text: String = opts.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        self.parts.insert(name.into(), text);
        self
    }

    /// A command line; its text is a key part named after the tool.
    pub fn command(mut self, name: &str, line: String) -> Self {
        self.parts.insert(name.into(), line.clone());
        self.commands.push(line);
        self
    }

    /// A config file the step writes; the sha256 of its bytes is a key part.
    pub fn file(mut self, name: &str, path: String, config: SdkConfigFile) -> Self {
        self.parts
            .insert(name.into(), sha256_bytes(&config.to_bytes()));
        self.files.push((path, config));
        self
    }
}

/// One step of one component, as a toolchain runs it.
pub struct StepJob<'a> {
    pub root: &'a Path,
    pub model: &'a Model,
    pub comp: &'a Component,
    pub soc: &'a Soc,
    pub artifacts: &'a Artifacts,
    /// The HTP target as the plan rendered it (once per component per build).
    pub target: &'a HtpTarget,
    /// What the plan rendered for this step: recorded as what ran.
    pub rendered: &'a Rendered,
    /// The step's key (its parts name the input hashes).
    pub key: &'a crate::fingerprint::StepKey,
    /// The tool versions in the step's key.
    pub versions: &'a crate::artifacts::Versions,
    /// The ONNX the QNN steps get, resolved once per component per build.
    pub onnx: &'a QnnOnnx,
    /// A fresh staging folder inside `ctx/<model>/` (same filesystem as the artifacts).
    pub staging: &'a Path,
    /// The embedded runtime, whatever the toolchain: it checks a rewritten graph on ORT.
    pub rt: &'a xtask_runtime::runtime::Runtime,
}

/// The ONNX the QNN steps of a component get (the recipe's, or its rewritten copy), with its
/// hash and the rewrites applied: resolved once per component per build (`resolve`).
#[derive(Debug, Clone)]
pub struct QnnOnnx {
    pub path: PathBuf,
    /// Project-relative, as records show it.
    pub rel: String,
    pub sha256: String,
    pub applied: Vec<xtask_onnx::onnx::decompose::Applied>,
}

impl QnnOnnx {
    /// What the QNN steps of `comp` get: the float ONNX (`float`), or for a quantized
    /// component the QDQ ONNX its quantize step made (the rewrites were applied before it).
    pub fn resolve(root: &Path, model: &str, comp: &Component) -> Result<QnnOnnx> {
        if !comp.precision().is_quantized() {
            return Self::float(root, model, comp);
        }
        let soc_free = crate::artifacts::qdq_path(model, comp.name());
        let path = root.join(&soc_free);
        Ok(QnnOnnx {
            rel: soc_free.display().to_string(),
            sha256: xtask_base::hashing::sha256_file(&path).with_context(|| {
                format!(
                    "{}: the quantize step's QDQ ONNX is missing (build the component)",
                    path.display()
                )
            })?,
            path,
            applied: Vec::new(),
        })
    }

    /// The float ONNX: the recipe's, or its rewritten copy (written when the recipe asks for
    /// rewrites), hashed. What the quantize step reads, and every step of a float component.
    pub fn float(root: &Path, model: &str, comp: &Component) -> Result<QnnOnnx> {
        let (path, applied) = xtask_parity::rewritten::qnn_onnx(root, model, comp)?;
        Ok(QnnOnnx {
            rel: xtask_base::project::rel(root, &path),
            sha256: xtask_base::hashing::sha256_file(&path)?,
            path,
            applied,
        })
    }
}

/// The ONNX the QNN steps of `comp` get, project-relative, as renderings name it: the
/// recipe's file, or its rewritten copy (`onnx::decompose`) when the recipe asks for rewrites.
/// The model's name is the folder of the artifacts (`ctx/<model>/`).
pub fn rendered_qnn_onnx(comp: &Component, art: &Artifacts) -> PathBuf {
    if comp.file.rewrite.apply.is_empty() {
        return comp.file.component.onnx.clone();
    }
    let model = art
        .dlc
        .parent()
        .and_then(|d| d.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    xtask_parity::rewritten::qnn_onnx_rel(&model, comp)
}

/// A staged output of a step and what the step reports about it.
pub struct Staged {
    pub files: Vec<PathBuf>,
    pub detail: crate::detail::StepDetail,
}

pub trait Toolchain: Sync {
    /// Which tools these are (its label enters every fingerprint).
    fn used(&self) -> ToolchainUsed;
    /// `embedded` or `qairt-sdk <version>`.
    fn label(&self) -> String {
        self.used().label()
    }
    /// Whose tools run the steps, for people (`QAIRT SDK 2.47.0 at /opt/qairt`).
    fn describe(&self) -> String;
    /// What `kind` will run for `comp`, rendered with placeholders (pure).
    fn render(
        &self,
        kind: StepKind,
        comp: &Component,
        target: &HtpTarget,
        art: &Artifacts,
    ) -> Rendered;
    /// ONNX → DLC; `files` = [the staged DLC].
    fn convert(&self, job: &StepJob<'_>) -> Result<Staged>;
    /// The component on the QNN CPU backend with the golden inputs, judged (not yet gated).
    fn cpu_parity(&self, job: &StepJob<'_>, golden: &GoldenIo) -> Result<ComponentResult>;
    /// The HTP context binary and its EPContext wrapper; `files` = [binary, wrapper], checked.
    fn context(&self, job: &StepJob<'_>) -> Result<Staged>;
    /// Why the binary's graph is named `inside` rather than the recipe's `asked`.
    fn graph_name_note(&self, inside: &str, asked: &str) -> String {
        format!("the toolchain's binary names its graph `{inside}`, not `{asked}`")
    }
    /// How far the convert step's DLC is checked (the record's `dlc_validation`).
    fn dlc_validation(&self) -> &'static str;
    /// What the context step compiles: the QNN ONNX (embedded), or the current DLC (SDK).
    fn context_source(&self, job: &StepJob<'_>) -> PathBuf {
        job.onnx.path.clone()
    }
}

/// The toolchain that renders for a plan (planning and freshness checks need no runtime and
/// no installed SDK: renderings use placeholders).
pub fn for_plan(used: &ToolchainUsed) -> Box<dyn Toolchain> {
    match (used.kind, &used.sdk_version) {
        (xtask_base::vocab::ToolchainKind::Sdk, version) => Box::new(sdk::Sdk::placeholder(
            version.as_deref().unwrap_or("unknown"),
        )),
        (xtask_base::vocab::ToolchainKind::Embedded, _) => Box::new(embedded::Embedded),
    }
}
