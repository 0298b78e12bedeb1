//! Fetching a published bundle: `hf download` (all of it, or with `--only` just the files of
//! some components through the Hub's `--include` patterns, the manifest always with them), the
//! manifest check (of the downloaded selection; the files the Hub manages, `.gitattributes`
//! and `.cache/huggingface/`, are tolerated; nothing else unlisted is), and the layout of its
//! files where the model's recipes expect them (`onnx/`, `golden/`, `ctx/`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::hf::{check_repo_id, run_hf};
use super::manifest::{check_files_matching, read_manifest};
use crate::hashing::sha256_bytes;
use crate::recipe::{Component, Model};

pub struct FetchRequest<'a> {
    pub root: &'a Path,
    pub repo: &'a str,
    pub revision: Option<&'a str>,
    pub model: &'a Model,
    /// `Some`: only these components' files (`--only`); `None`: the whole bundle.
    pub only: Option<Vec<&'a Component>>,
    /// Only the build inputs (ONNX + external data, golden, trace), no context binaries.
    pub inputs_only: bool,
}

/// The Hub's `--include` patterns (fnmatch: `*` also matches `/`) of the selected files.
pub fn include_patterns(req: &FetchRequest<'_>) -> Option<Vec<String>> {
    let all: Vec<&Component> = req.model.components.iter().collect();
    let comps = match (&req.only, req.inputs_only) {
        (Some(c), _) => c,
        (None, true) => &all,
        (None, false) => return None,
    };
    let mut pats = vec!["manifest.json".to_string(), "SHA256SUMS".to_string()];
    for comp in comps {
        pats.extend(component_patterns(req.model, comp, req.inputs_only));
    }
    Some(pats)
}

/// One component's files in a bundle: `onnx/<c>/*`, its golden file (and the trace for the
/// component that owns the vision input), and unless `inputs_only` its `ctx/` artifacts.
pub fn component_patterns(model: &Model, comp: &Component, inputs_only: bool) -> Vec<String> {
    let name = comp.name();
    let mut pats = vec![format!("onnx/{name}/*")];
    if let Some(g) = comp.file.golden.file.file_name() {
        pats.push(format!("golden/{}", g.to_string_lossy()));
    }
    if model.file.host.as_ref().is_some_and(|h| h.vision == name) {
        pats.push("golden/trace*".into());
    }
    if !inputs_only {
        pats.push(format!("ctx/{name}.*"));
        pats.push(format!("ctx/{name}_socid*"));
    }
    pats
}

/// fnmatch as the Hub applies `--include`: `*` any run of characters (`/` too), `?` one.
pub fn glob_match(pat: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pat.chars().collect(), text.chars().collect());
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

fn selected(pats: &[String], path: &str) -> bool {
    pats.iter().any(|p| glob_match(p, path))
}

fn download(req: &FetchRequest<'_>, dir: &Path, include: Option<&[String]>) -> Result<()> {
    check_repo_id(req.repo)?;
    let mut args: Vec<String> = vec![
        "download".into(),
        req.repo.to_string(),
        "--repo-type".into(),
        "model".into(),
        "--local-dir".into(),
        dir.display().to_string(),
    ];
    if let Some(r) = req.revision {
        args.extend(["--revision".into(), r.to_string()]);
    }
    for p in include.unwrap_or_default() {
        args.extend(["--include".into(), p.clone()]);
    }
    run_hf(&args)?;
    Ok(())
}

fn scratch(req: &FetchRequest<'_>) -> Result<tempfile::TempDir> {
    let downloads = req.root.join("target/fetch");
    std::fs::create_dir_all(&downloads)?;
    Ok(tempfile::Builder::new()
        .prefix(&format!("{}-", req.model.file.model.name))
        .tempdir_in(&downloads)?)
}

/// The content key of the selected files (for a CI cache): only `manifest.json` is downloaded;
/// the key hashes the manifest's `sha256  path` lines of the files the selection covers.
pub fn cache_key(req: &FetchRequest<'_>) -> Result<String> {
    let pats = include_patterns(req).context("--cache-key needs --only or --inputs-only")?;
    let tmp = scratch(req)?;
    download(req, tmp.path(), Some(&["manifest.json".to_string()]))?;
    let manifest = read_manifest(tmp.path())
        .with_context(|| format!("{} publishes no manifest.json", req.repo))?;
    let lines: String = manifest
        .files
        .iter()
        .filter(|f| selected(&pats[2..], &f.path))
        .map(|f| format!("{}  {}\n", f.sha256, f.path))
        .collect();
    if lines.is_empty() {
        bail!(
            "{}'s manifest lists none of the selected files ({})",
            req.repo,
            pats[2..].join(" ")
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
    let tmp = scratch(req)?;
    let include = include_patterns(req);
    download(req, tmp.path(), include.as_deref())?;
    let dir = tmp.path();
    if dir.join("manifest.json").is_file() {
        let pats = include.clone();
        let problems = check_files_matching(dir, &|p| {
            pats.as_ref().is_none_or(|pats| selected(&pats[2..], p))
        })?;
        if !problems.is_empty() {
            bail!(
                "the downloaded bundle does not match its manifest (nothing was laid out):\n  {}",
                problems.join("\n  ")
            );
        }
    } else if include.is_some() {
        bail!(
            "{} has no manifest.json: a partial download (--only) cannot be checked, so nothing was laid out",
            req.repo
        );
    } else {
        crate::outln!(
            "note: {} has no manifest.json; files are laid out unchecked",
            req.repo
        );
    }
    let moves = layout(req.root, req.model, dir)?;
    // A partial download that found nothing falls through: the caller names what is missing.
    if moves.is_empty() && include.is_none() {
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
        // The trace's files as its JSON names them (the same rule as the chain and package).
        let dir = host.trace.parent().unwrap_or(Path::new(""));
        let json = host.trace.file_name().context("trace file name")?;
        let downloaded = bundle.join("golden").join(json);
        if downloaded.is_file() {
            let files = crate::golden::trace_files(
                &bundle.join("golden"),
                &crate::recipe::HostSection {
                    trace: PathBuf::from(json),
                    ..host.clone()
                },
            )?;
            for file in [files.json, files.npz] {
                let name = file.file_name().context("trace file name")?.to_owned();
                add(file, root.join(dir).join(name));
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

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs_match_as_the_hubs_include_does() {
        assert!(glob_match("onnx/vision/*", "onnx/vision/vision.onnx"));
        assert!(glob_match("onnx/vision/*", "onnx/vision/sub/w.bin"));
        assert!(!glob_match("onnx/vision/*", "onnx/vision_x/a"));
        assert!(glob_match("golden/trace*", "golden/trace.json"));
        assert!(glob_match(
            "ctx/action_step.*",
            "ctx/action_step.record.json"
        ));
        assert!(!glob_match(
            "ctx/action_step.*",
            "ctx/action_step_socid77_archv73.bin"
        ));
        assert!(glob_match("ctx/a?c", "ctx/abc"));
        assert!(glob_match("manifest.json", "manifest.json"));
        assert!(!glob_match("manifest.json", "x/manifest.json"));
    }
}
