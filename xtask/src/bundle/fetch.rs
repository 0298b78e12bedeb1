//! Fetching a published bundle: `hf download`, the manifest check (the files the Hub manages,
//! `.gitattributes` and `.cache/huggingface/`, are tolerated; nothing else unlisted is), and the
//! layout of its files where the model's recipes expect them (`onnx/`, `golden/`, `ctx/`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::hf::{check_repo_id, run_hf};
use super::manifest::check_files;
use crate::recipe::Model;

pub struct FetchRequest<'a> {
    pub root: &'a Path,
    pub repo: &'a str,
    pub revision: Option<&'a str>,
    pub model: &'a Model,
}

/// Downloads, checks and lays out the bundle; returns how many files were laid out.
pub fn fetch(req: &FetchRequest<'_>) -> Result<usize> {
    check_repo_id(req.repo)?;
    let downloads = req.root.join("target/fetch");
    std::fs::create_dir_all(&downloads)?;
    let tmp = tempfile::Builder::new()
        .prefix(&format!("{}-", req.model.file.model.name))
        .tempdir_in(&downloads)?;
    let mut args: Vec<String> = vec![
        "download".into(),
        req.repo.to_string(),
        "--repo-type".into(),
        "model".into(),
        "--local-dir".into(),
        tmp.path().display().to_string(),
    ];
    if let Some(r) = req.revision {
        args.extend(["--revision".into(), r.to_string()]);
    }
    run_hf(&args)?;
    let dir = tmp.path();
    if dir.join("manifest.json").is_file() {
        let problems = check_files(dir)?;
        if !problems.is_empty() {
            bail!(
                "the downloaded bundle does not match its manifest (nothing was laid out):\n  {}",
                problems.join("\n  ")
            );
        }
    } else {
        crate::outln!(
            "note: {} has no manifest.json; files are laid out unchecked",
            req.repo
        );
    }
    let moves = layout(req.root, req.model, dir)?;
    if moves.is_empty() {
        bail!(
            "{} holds none of model `{}`'s files (expected onnx/<component>/, golden/, ctx/)",
            req.repo,
            req.model.file.model.name
        );
    }
    for (from, to) in &moves {
        std::fs::create_dir_all(to.parent().context("destination")?)?;
        let staged = to.with_extension("fetching");
        std::fs::copy(from, &staged).with_context(|| format!("cannot copy {}", from.display()))?;
        crate::atomic::move_into_place(&staged, to)?;
    }
    crate::outln!(
        "fetched {} file(s) of `{}` from {}; next: `cargo xtask parity --backend cpu --model {}` or `cargo xtask build-ctx --model {} --dry-run`",
        moves.len(),
        req.model.file.model.name,
        req.repo,
        req.model.file.model.name,
        req.model.file.model.name
    );
    Ok(moves.len())
}

/// Where each bundle file goes for this model: by the recipes' own paths.
fn layout(root: &Path, model: &Model, bundle: &Path) -> Result<Vec<(PathBuf, PathBuf)>> {
    let mut moves = Vec::new();
    let mut add = |from: PathBuf, to: PathBuf| {
        if from.is_file() {
            moves.push((from, to));
        }
    };
    for comp in &model.components {
        let name = comp.name();
        let onnx_dir = comp.file.component.onnx.parent().unwrap_or(Path::new(""));
        for entry in std::fs::read_dir(bundle.join("onnx").join(name))
            .into_iter()
            .flatten()
            .flatten()
        {
            add(entry.path(), root.join(onnx_dir).join(entry.file_name()));
        }
        let golden_name = comp
            .file
            .golden
            .file
            .file_name()
            .context("golden file name")?;
        add(
            bundle.join("golden").join(golden_name),
            root.join(&comp.file.golden.file),
        );
    }
    if let Some(host) = &model.file.host {
        let dir = host.trace.parent().unwrap_or(Path::new(""));
        for entry in std::fs::read_dir(bundle.join("golden"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let n = entry.file_name().to_string_lossy().into_owned();
            if n.starts_with("trace") {
                add(entry.path(), root.join(dir).join(&n));
            }
        }
    }
    let ctx_dir = crate::project::ctx_dir(root, &model.file.model.name);
    for entry in std::fs::read_dir(bundle.join("ctx"))
        .into_iter()
        .flatten()
        .flatten()
    {
        add(entry.path(), ctx_dir.join(entry.file_name()));
    }
    Ok(moves)
}
