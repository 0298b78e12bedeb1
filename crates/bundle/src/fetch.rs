//! Fetching a published bundle: `hf download` (all of it, or with `--only` just the files of
//! some components through the Hub's `--include` patterns, the manifest always with them), the
//! manifest check (of the downloaded selection; the files the Hub manages, `.gitattributes`
//! and `.cache/huggingface/`, are tolerated; nothing else unlisted is), and the layout of its
//! files where the model's recipes expect them (`onnx/`, `golden/`, `ctx/`).

use std::path::{Path, PathBuf};

use super::fetch_patterns::{ALWAYS, include_patterns, selected};
use super::fetch_request::FetchRequest;
use anyhow::{Context, Result, bail};

use super::hf::{hf_argv, run_hf};
use super::manifest::read_manifest;
use super::reader;
use xtask_base::hashing::sha256_bytes;
use xtask_recipe::recipe::Model;
use xtask_recipe::recipe::hub_names::{validate_repo_id, validate_revision};

fn download(req: &FetchRequest<'_>, dir: &Path, include: Option<&[String]>) -> Result<()> {
    validate_repo_id(req.repo)?;
    let mut options: Vec<String> = vec![
        "--repo-type".into(),
        "model".into(),
        "--local-dir".into(),
        dir.display().to_string(),
    ];
    if let Some(r) = req.revision {
        validate_revision(r)?;
        options.extend(["--revision".into(), r.to_string()]);
    }
    for p in include.unwrap_or_default() {
        options.extend(["--include".into(), p.clone()]);
    }
    let task = xtask_base::ui::progress::Task::new("fetch: hf download", 1);
    task.working_on(req.repo);
    run_hf(&hf_argv("download", &options, &[req.repo.to_string()]))?;
    task.step_done("hf download", true);
    drop(task);
    Ok(())
}

/// The content key of the selected files (for a CI cache): only `manifest.json` is downloaded;
/// the key hashes the manifest's `sha256  path` lines of the files the selection covers.
pub fn cache_key(req: &FetchRequest<'_>) -> Result<String> {
    let pats = include_patterns(req).context("--cache-key needs --only or --inputs-only")?;
    let (tmp, _lock) = super::fetch_scratch::scratch(req)?;
    download(req, tmp.path(), Some(&["manifest.json".to_string()]))?;
    let manifest = read_manifest(tmp.path())
        .with_context(|| format!("{} publishes no manifest.json", req.repo))?;
    let lines: String = manifest
        .files
        .iter()
        .filter(|f| selected(&pats[ALWAYS.len()..], &f.path))
        .map(|f| format!("{}  {}\n", f.sha256, f.path))
        .collect();
    if lines.is_empty() {
        bail!(
            "{}'s manifest lists none of the selected files ({})",
            req.repo,
            pats[ALWAYS.len()..].join(" ")
        );
    }
    let names: Vec<&str> = match &req.only {
        Some(c) => c.iter().map(|c| c.name()).collect(),
        None => vec!["all"],
    };
    Ok(format!(
        "{}-{}-{}",
        req.model.file.model.name,
        names.join("+"),
        &sha256_bytes(lines.as_bytes())[..32]
    ))
}

/// Downloads, checks and lays out the bundle; returns how many files were laid out.
pub fn fetch(req: &FetchRequest<'_>) -> Result<usize> {
    let (tmp, _lock) = super::fetch_scratch::scratch(req)?;
    let include = include_patterns(req);
    download(req, tmp.path(), include.as_deref())?;
    refuse_ambiguous_revision(req, tmp.path())?;
    let files = files_to_lay_out(req, tmp.path(), include.as_deref())?;
    let moves = destinations(req, files, include.is_some())?;
    let laid = lay_out(tmp.path(), &moves)?;
    record_provenance(req, &laid)?;
    let name = &req.model.file.model.name;
    xtask_base::outln!(
        "fetched {} file(s) of `{name}` from {}; next: `cargo xtask parity --backend cpu --model {name}` or `cargo xtask build-ctx --model {name} --dry-run`",
        laid.len(),
        req.repo,
    );
    Ok(laid.len())
}

/// A `--revision` that is a tag and also resolved to another commit (a branch of the same
/// name) is refused with both meanings: the `hf` CLI lists tags with their commits (`hf repos
/// tag list`) but no branches, and the download records the commit the Hub resolved. When the
/// two agree, both names hold the same files.
fn refuse_ambiguous_revision(req: &FetchRequest<'_>, dir: &Path) -> Result<()> {
    let Some(rev) = req.revision else {
        return Ok(());
    };
    let Some((_, tagged)) = super::hf::tags(req.repo)?
        .into_iter()
        .find(|(t, _)| t == rev)
    else {
        return Ok(());
    };
    let resolved = super::hf::downloaded_commit(dir).unwrap_or_default();
    if !resolved.is_empty() && resolved != tagged {
        return Err(xtask_base::bad_input::BadInput(anyhow::anyhow!(
            "--revision {rev:?} is ambiguous on {}: the tag {rev} is commit {tagged}, but the Hub resolved {rev} to commit {resolved} (a branch of the same name); nothing was laid out: pass the commit you mean as --revision",
            req.repo
        ))
        .into());
    }
    Ok(())
}

/// A file of the download to lay out: its path in the bundle and, when a manifest lists it,
/// the sha256 the copy must match.
type Listed = (String, Option<String>);

/// The files to lay out: listed, selected and checked, or with `--unverified` every plain file
/// of a download without a manifest.
fn files_to_lay_out(
    req: &FetchRequest<'_>,
    dir: &Path,
    include: Option<&[String]>,
) -> Result<Vec<Listed>> {
    if std::fs::symlink_metadata(dir.join("manifest.json")).is_ok() {
        return checked_files(req, dir, include);
    }
    if let Some(key) = req.key {
        bail!(
            "{} has no manifest.json: nothing can be checked against --key {} (nothing was laid out)",
            req.repo,
            key.path().display()
        );
    }
    if include.is_some() {
        bail!(
            "{} has no manifest.json: a partial download (--only) cannot be checked, so nothing was laid out",
            req.repo
        );
    }
    if !req.unverified {
        bail!(
            "{} has no manifest.json: its files cannot be checked, so nothing was laid out; pass --unverified to lay them out anyway (every report and card made from them will say so)",
            req.repo
        );
    }
    let scan = reader::scan(dir)?;
    if !scan.refused.is_empty() {
        bail!(
            "the download holds entries that are not plain files (nothing was laid out):\n  {}",
            scan.refusals().join("\n  ")
        );
    }
    Ok(scan.files.into_keys().map(|rel| (rel, None)).collect())
}

/// The selected files of the manifest, once the download passed the check `verify` runs
/// (`intact`, within the selection) and holds what this project's recipes need of it.
fn checked_files(
    req: &FetchRequest<'_>,
    dir: &Path,
    include: Option<&[String]>,
) -> Result<Vec<Listed>> {
    let chosen = |p: &str| include.is_none_or(|pats| selected(pats, p));
    let only: Option<Vec<&str>> = req
        .only
        .as_ref()
        .map(|c| c.iter().map(|c| c.name()).collect());
    let components = |c: &str| only.as_ref().is_none_or(|o| o.contains(&c));
    let scope = super::intact::Scope {
        files: &chosen,
        components: &components,
        binaries: !req.inputs_only,
    };
    let checked = super::intact::check(dir, &scope, req.key)
        .context("the downloaded bundle cannot be checked (nothing was laid out)")?;
    let mut problems = checked.problems;
    if problems.is_empty() {
        problems.extend(super::cross_refs::recipe_problems(
            dir,
            req.model,
            only.as_deref(),
            !req.inputs_only,
        )?);
    }
    if !problems.is_empty() {
        return Err(xtask_base::bad_input::BadInput(anyhow::anyhow!(
            "the downloaded bundle is NOT intact (nothing was laid out):\n  {}",
            problems.join("\n  ")
        ))
        .into());
    }
    xtask_base::errln!("{}", checked.signed.describe());
    Ok(read_manifest(dir)?
        .files
        .into_iter()
        .filter(|f| chosen(&f.path))
        .map(|f| (f.path, Some(f.sha256)))
        .collect())
}

/// Where each file goes for the model's recipes (files of no recipe path are left out). A
/// partial download that found nothing falls through: the caller names what is missing.
fn destinations(
    req: &FetchRequest<'_>,
    files: Vec<Listed>,
    partial: bool,
) -> Result<Vec<(String, Option<String>, PathBuf)>> {
    let moves: Vec<_> = files
        .into_iter()
        .filter_map(|(rel, sha)| destination(req.root, req.model, &rel).map(|to| (rel, sha, to)))
        .collect();
    if moves.is_empty() && !partial {
        bail!(
            "{} holds none of model `{}`'s files (expected onnx/<component>/, golden/, ctx/)",
            req.repo,
            req.model.file.model.name
        );
    }
    Ok(moves)
}

/// Records the laid-out files as unverified (`--unverified`), or clears them from an earlier
/// unverified fetch.
fn record_provenance(req: &FetchRequest<'_>, laid: &[(PathBuf, String)]) -> Result<()> {
    let name = &req.model.file.model.name;
    let rel_of = |to: &Path| xtask_base::project::rel(req.root, to);
    if !req.unverified {
        let paths: Vec<String> = laid.iter().map(|(to, _)| rel_of(to)).collect();
        return super::provenance::clear(req.root, name, &paths);
    }
    let source = format!("{}@{}", req.repo, req.revision.unwrap_or("main"));
    let files: Vec<(String, String)> = laid
        .iter()
        .map(|(to, sha)| (rel_of(to), sha.clone()))
        .collect();
    super::provenance::record(req.root, name, &source, &files)?;
    xtask_base::errln!(
        "warning: {} file(s) laid out UNVERIFIED (no manifest); recorded in reports/{name}/unverified-inputs.json",
        files.len()
    );
    Ok(())
}

/// Copies every file (never through a link, each checked against its sha256 while copied) to
/// a staging name beside its destination, then moves all into place; on any failure the
/// staged copies are removed and nothing is replaced. Returns (destination, sha256).
fn lay_out(
    dir: &Path,
    moves: &[(String, Option<String>, PathBuf)],
) -> Result<Vec<(PathBuf, String)>> {
    let mut staged: Vec<(PathBuf, PathBuf, String)> = Vec::new();
    let result = (|| -> Result<()> {
        for (rel, sha, to) in moves {
            let parent = to.parent().context("destination")?;
            std::fs::create_dir_all(parent)?;
            let file_name = to.file_name().context("destination")?.to_string_lossy();
            let stage = parent.join(format!(".{file_name}.fetching"));
            let _ = std::fs::remove_file(&stage);
            let got = reader::copy_out(dir, rel, &stage, sha.as_deref())?;
            staged.push((stage, to.clone(), got));
        }
        Ok(())
    })();
    if let Err(e) = result {
        for (stage, _, _) in &staged {
            let _ = std::fs::remove_file(stage);
        }
        return Err(e.context("nothing was laid out"));
    }
    let mut laid = Vec::new();
    for (stage, to, sha) in staged {
        xtask_base::atomic::move_into_place(&stage, &to)?;
        laid.push((to, sha));
    }
    Ok(laid)
}

/// Where bundle file `rel` goes for this model, by the recipes' own paths: `onnx/<c>/<file>`
/// beside component c's ONNX, `golden/<file>` to the component whose golden it is (or beside
/// the host trace for `golden/trace*`), `ctx/<file>` into `ctx/<model>/`. Anything else (the
/// card, reports, deeper folders) is not laid out.
fn destination(root: &Path, model: &Model, rel: &str) -> Option<PathBuf> {
    let parts: Vec<&str> = rel.split('/').collect();
    match parts.as_slice() {
        ["onnx", comp, file] => {
            let comp = model.components.iter().find(|c| c.name() == *comp)?;
            let onnx_dir = comp.file.component.onnx.parent().unwrap_or(Path::new(""));
            Some(root.join(onnx_dir).join(file))
        }
        ["golden", file] => {
            let golden = model
                .components
                .iter()
                .find(|c| c.file.golden.file.file_name().is_some_and(|n| n == *file));
            if let Some(comp) = golden {
                return Some(root.join(&comp.file.golden.file));
            }
            let host = model
                .file
                .host
                .as_ref()
                .filter(|_| file.starts_with("trace"))?;
            Some(
                root.join(host.trace.parent().unwrap_or(Path::new("")))
                    .join(file),
            )
        }
        ["ctx", file] => {
            Some(xtask_base::project::ctx_dir(root, &model.file.model.name).join(file))
        }
        _ => None,
    }
}
