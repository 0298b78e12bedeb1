//! `cargo xtask package --model M --soc 77 --out DIR`: the Hugging Face bundle in the model
//! card's layout (`ctx/`, `golden/`, `onnx/<component>/`, `reports/`, `README.md`), plus
//! `manifest.json` (size, sha256, role of every file) and `SHA256SUMS`. Refuses stale artifacts
//! (fingerprints) unless `--allow-stale`, and any failed gate. Assembled in a staging folder
//! and renamed into place; large files are hard-linked or streamed, never loaded in memory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::{Ctx, Outcome, select_components};
use crate::build::fingerprint::{ComponentRecord, Freshness};
use crate::bundle::card::{BundleComponent, BundleInfo, htp_figures, latency_figures, render};
use crate::build::fresh::runtime_versions;
use crate::hashing::{HashMemo, sha256_bytes, sha256_file};
use crate::build::plan::plan_component;
use crate::recipe::{Component, Model, load_model};
use crate::runtime::Runtime;
use crate::runtime::bootstrap::{QNN_WHEEL, ensure_runtime};
use crate::target::soc::Soc;

#[derive(clap::Args)]
pub struct Package {
    #[arg(long, default_value = "tiny")]
    model: String,
    #[arg(long)]
    soc: Option<String>,
    /// The bundle folder to create (must not exist, or be empty).
    #[arg(long)]
    out: PathBuf,
    /// Only these components (comma-separated): a partial bundle.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Package artifacts that are stale against their recipe or inputs, and say so in the card.
    #[arg(long)]
    allow_stale: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ManifestEntry {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
    pub role: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub model: String,
    pub files: Vec<ManifestEntry>,
}

/// Files at least this large are hard-linked into the bundle instead of copied.
const HARD_LINK_FROM_BYTES: u64 = 256 << 20;

/// Files to place in the bundle: (source, path in the bundle, role).
type Placement = Vec<(PathBuf, String, &'static str)>;

impl Package {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let model = load_model(&ctx.root, &self.model)?;
        let soc = super::target_soc(&model, self.soc.as_deref())?;
        let comps = select_components(&model, &self.only)?;
        super::require_files(ctx, &model, &comps)?;
        let out = std::path::absolute(&self.out)?;
        if out.exists() && std::fs::read_dir(&out)?.next().is_some() {
            bail!(
                "{} exists and is not empty: remove it or choose another --out (a bundle is never written over)",
                self.out.display()
            );
        }
        let rt = Runtime::load(ensure_runtime(&ctx.root)?)?;
        let versions = runtime_versions(&rt)?;
        let mut memo = HashMemo::load(&ctx.root.join("target/xtask-hash-memo.json"));
        let mut stale = Vec::new();
        let mut files: Placement = Vec::new();
        let mut components = Vec::new();
        let mut newest_context = 0u64;
        for comp in &comps {
            let art = crate::build::plan::artifacts(&self.model, comp.name(), &soc);
            let built = crate::build::fresh::as_built(
                versions.clone(),
                &ComponentRecord::load(&ctx.root.join(&art.record)),
            );
            let plan = plan_component(&ctx.root, &model, comp, &soc, &built, &mut memo)?;
            let dirty: Vec<String> = plan
                .steps
                .iter()
                .filter_map(|s| match &s.freshness {
                    Freshness::Dirty(r) => Some(format!("{} ({})", s.kind.label(), r.join("; "))),
                    Freshness::Fresh => None,
                })
                .collect();
            if !dirty.is_empty() {
                if !self.allow_stale {
                    bail!(
                        "`{}` is stale: {}\nrun `cargo xtask build-ctx --soc {} --model {} --only {}` (or pass --allow-stale)",
                        comp.name(),
                        dirty.join(", "),
                        soc.id,
                        self.model,
                        comp.name()
                    );
                }
                stale.push(comp.name().to_string());
            }
            let record = ComponentRecord::load(&ctx.root.join(&plan.artifacts.record));
            let built = record
                .steps
                .get(&format!("context@soc{}", soc.id))
                .map_or(0, |r| r.finished_unix);
            newest_context = newest_context.max(built);
            components.push(bundle_component(
                ctx,
                &model,
                comp,
                &record,
                &soc,
                &plan.artifacts,
            )?);
            files.extend(component_files(ctx, &model, comp, &plan.artifacts)?);
        }
        let reports = ctx.root.join("reports").join(&self.model);
        let htp = usable_report(
            &reports.join("parity-htp.json"),
            &comps,
            newest_context,
            "HTP parity",
        )?;
        let run = ["htp", "cpu", "ort"]
            .iter()
            .map(|b| {
                usable_report(
                    &reports.join(format!("run-{b}.json")),
                    &[],
                    newest_context,
                    "the chain run",
                )
                .map(|r| r.map(|r| (b, r)))
            })
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .flatten()
            .next();
        let info = BundleInfo {
            model: self.model.clone(),
            description: model.file.model.description.clone(),
            soc_id: soc.id,
            soc_chips: soc.chips.iter().map(|s| s.to_string()).collect(),
            htp_arch: soc.htp_arch,
            qairt: model.file.target.qairt.clone(),
            qnn_build: versions.qnn.clone(),
            onnxruntime: versions.onnxruntime.clone(),
            toolchain: format!("embedded ({}, ONNX Runtime QNN EP)", QNN_WHEEL.requirement),
            commit: git_commit(&ctx.root),
            allow_stale: self.allow_stale,
            stale,
            components,
        };
        let parent = out.parent().context("--out has no parent")?;
        std::fs::create_dir_all(parent)?;
        let staging = tempfile::Builder::new()
            .prefix(".bundle-")
            .tempdir_in(parent)?;
        let mut reports_out: Vec<(String, Vec<u8>)> = vec![(
            "reports/bundle.json".into(),
            serde_json::to_vec_pretty(&info)?,
        )];
        if let Some(h) = &htp {
            reports_out.push((
                "reports/parity-htp.json".into(),
                serde_json::to_vec_pretty(h)?,
            ));
        }
        if let Some((b, r)) = &run {
            reports_out.push((
                format!("reports/run-{b}.json"),
                serde_json::to_vec_pretty(r)?,
            ));
        }
        let card = render(
            &info,
            htp.as_ref().map(htp_figures).as_ref(),
            run.as_ref().map(|(_, r)| latency_figures(r)).as_ref(),
        );
        reports_out.push(("README.md".into(), card.into_bytes()));
        let manifest = assemble(staging.path(), &files, &reports_out, &self.model)?;
        if out.exists() {
            std::fs::remove_dir(&out)?;
        }
        std::fs::rename(staging.keep(), &out)
            .with_context(|| format!("cannot move the bundle to {}", out.display()))?;
        let total: u64 = manifest.files.iter().map(|f| f.bytes).sum();
        crate::outln!(
            "bundle {}: {} files, {:.1} MB; verify it with `cargo xtask verify {}`",
            self.out.display(),
            manifest.files.len(),
            total as f64 / 1e6,
            self.out.display()
        );
        Ok(Outcome::Success)
    }
}

fn bundle_component(
    ctx: &Ctx,
    model: &Model,
    comp: &Component,
    record: &ComponentRecord,
    soc: &Soc,
    art: &crate::build::plan::Artifacts,
) -> Result<BundleComponent> {
    let cpu = record.steps.get("cpu_parity").with_context(|| {
        format!(
            "`{}` has no passed CPU-parity record: build it first",
            comp.name()
        )
    })?;
    let context = record
        .steps
        .get(&format!("context@soc{}", soc.id))
        .with_context(|| {
            format!(
                "`{}` has no context binary for soc {}: build it first",
                comp.name(),
                soc.id
            )
        })?;
    let outputs = cpu.detail["result"]["outputs"]
        .as_array()
        .context("the CPU-parity record holds no figures")?;
    let cpu_cosine: Vec<(String, f64)> = outputs
        .iter()
        .map(|o| {
            (
                o["name"].as_str().unwrap_or("?").to_string(),
                o["metrics"]["cosine"].as_f64().unwrap_or(f64::NAN),
            )
        })
        .collect();
    let waivers = comp
        .file
        .outputs
        .iter()
        .flat_map(|o| {
            ["ort", "cpu", "htp"].map(|b| {
                (
                    o.name.get_ref().clone(),
                    comp.gate(&model.file, o.name.get_ref(), b),
                )
            })
        })
        .filter_map(|(o, g)| g.waiver.map(|w| (o, g.min_cosine, w)))
        .fold(Vec::new(), |mut acc: Vec<(String, f64, String)>, w| {
            if !acc.contains(&w) {
                acc.push(w);
            }
            acc
        });
    let tensor = |s: &crate::recipe::TensorSpec| {
        (
            s.name.get_ref().clone(),
            s.shape.clone(),
            s.dtype.to_string(),
        )
    };
    Ok(BundleComponent {
        name: comp.name().into(),
        description: comp.file.component.description.clone(),
        inputs: comp.file.inputs.iter().map(tensor).collect(),
        outputs: comp.file.outputs.iter().map(tensor).collect(),
        cpu_cosine,
        graph_name: context.detail["graph_name"].as_str().unwrap_or("?").into(),
        ep_sdk_version: context.detail["ep_sdk_version"]
            .as_str()
            .map(str::to_string),
        bin_file: art
            .bin
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        bin_bytes: std::fs::metadata(ctx.root.join(&art.bin))
            .map(|m| m.len())
            .unwrap_or(0),
        optimization_level: comp.file.context.optimization_level,
        fp16: comp.file.context.fp16,
        recipe_sha256: sha256_bytes(comp.recipe_text.as_bytes()),
        onnx_sha256: sha256_file(&ctx.root.join(&comp.file.component.onnx))?,
        golden_sha256: sha256_file(&ctx.root.join(&comp.file.golden.file))?,
        waivers,
    })
}

/// The component's files and where they go in the bundle.
fn component_files(
    ctx: &Ctx,
    model: &Model,
    comp: &Component,
    art: &crate::build::plan::Artifacts,
) -> Result<Placement> {
    let name = comp.name();
    let file_name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let mut files: Placement = vec![
        (
            ctx.root.join(&art.bin),
            format!("ctx/{}", file_name(&art.bin)),
            "context-binary",
        ),
        (
            ctx.root.join(&art.record),
            format!("ctx/{}", file_name(&art.record)),
            "build-record",
        ),
        (
            ctx.root.join(&comp.file.component.onnx),
            format!("onnx/{name}/{}", file_name(&comp.file.component.onnx)),
            "onnx",
        ),
        (
            ctx.root.join(&comp.file.golden.file),
            format!("golden/{}", file_name(&comp.file.golden.file)),
            "golden",
        ),
    ];
    if model.file.package.wrappers {
        files.push((
            ctx.root.join(&art.wrapper),
            format!("ctx/{}", file_name(&art.wrapper)),
            "epcontext-wrapper",
        ));
    }
    if model.file.package.dlc {
        files.push((
            ctx.root.join(&art.dlc),
            format!("ctx/{}", file_name(&art.dlc)),
            "dlc",
        ));
    }
    for ext in crate::build::plan::external_data(&ctx.root, &comp.file.component.onnx)? {
        files.push((
            ctx.root.join(&ext),
            format!("onnx/{name}/{}", file_name(&ext)),
            "onnx-external-data",
        ));
    }
    if let Some(host) = model.file.host.as_ref().filter(|h| h.vision == name) {
        let trace = ctx.root.join(&host.trace);
        let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace)?)?;
        files.push((
            trace.clone(),
            format!("golden/{}", file_name(&trace)),
            "trace",
        ));
        if let Some(npz) = meta["npz"].as_str() {
            files.push((trace.with_file_name(npz), format!("golden/{npz}"), "trace"));
        }
    }
    Ok(files)
}

/// A report the card may use: it must pass (a failed gate refuses the package) and be newer
/// than every packaged context binary (else it is about other binaries and is left out).
fn usable_report(
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
    if report["created_unix"].as_u64().unwrap_or(0) < newest_context {
        return Ok(None); // about other binaries than these
    }
    let names: Vec<&str> = comps.iter().map(|c| c.name()).collect();
    let covered: Vec<&str> = report["components"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["component"].as_str())
        .collect();
    if names.iter().any(|n| !covered.contains(n)) {
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

fn git_commit(root: &Path) -> String {
    crate::proc::Proc::new("git")
        .args(["rev-parse", "HEAD"])
        .dir(root)
        .timeout(std::time::Duration::from_secs(30))
        .run()
        .map(|done| done.output.trim().to_string())
        .unwrap_or_else(|_| "unknown (not a git checkout)".into())
}

/// Links or streams every file into `dir`, writes the generated files, the manifest and
/// SHA256SUMS.
fn assemble(
    dir: &Path,
    files: &Placement,
    generated: &[(String, Vec<u8>)],
    model: &str,
) -> Result<Manifest> {
    let mut entries = BTreeMap::new();
    for (src, rel, role) in files {
        let dest = dir.join(rel);
        std::fs::create_dir_all(dest.parent().context("bundle path")?)?;
        // Large files are hard-linked (no copy, no memory); small ones are copied, so editing
        // a bundle file in place can never reach back into ctx/ or onnx/.
        let large = std::fs::metadata(src)
            .map(|m| m.len() >= HARD_LINK_FROM_BYTES)
            .unwrap_or(false);
        if !large || std::fs::hard_link(src, &dest).is_err() {
            std::fs::copy(src, &dest)
                .with_context(|| format!("cannot copy {} into the bundle", src.display()))?;
        }
        entries.insert(
            rel.clone(),
            ManifestEntry {
                path: rel.clone(),
                bytes: std::fs::metadata(&dest)?.len(),
                sha256: sha256_file(&dest)?,
                role: role.to_string(),
            },
        );
    }
    for (rel, bytes) in generated {
        let dest = dir.join(rel);
        std::fs::create_dir_all(dest.parent().context("bundle path")?)?;
        std::fs::write(&dest, bytes)?;
        let role = if rel == "README.md" {
            "model-card"
        } else {
            "report"
        };
        entries.insert(
            rel.clone(),
            ManifestEntry {
                path: rel.clone(),
                bytes: bytes.len() as u64,
                sha256: sha256_bytes(bytes),
                role: role.into(),
            },
        );
    }
    let manifest = Manifest {
        format: "xtask-bundle.v1".into(),
        model: model.into(),
        files: entries.into_values().collect(),
    };
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_vec_pretty(&manifest)?,
    )?;
    let sums: String = manifest
        .files
        .iter()
        .map(|f| format!("{}  {}\n", f.sha256, f.path))
        .collect();
    std::fs::write(dir.join("SHA256SUMS"), sums)?;
    Ok(manifest)
}
