//! Releasing a verified bundle to the Hugging Face Hub with `hf upload`: the revision's
//! content is replaced by the bundle's (stale remote files are deleted in the same commit).
//! Nothing is claimed released unless the upload succeeded (`reports/<model>/release.json`
//! is written last).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::hf::{check_repo_id, require_hf, require_login, run_hf};
use super::manifest::{check_files, read_manifest};
use super::verify::check_card;

pub struct ReleaseRequest<'a> {
    pub root: &'a Path,
    pub repo: &'a str,
    pub revision: Option<&'a str>,
    pub model: &'a str,
    pub bundle: PathBuf,
    pub dry_run: bool,
}

pub fn release(req: &ReleaseRequest<'_>) -> Result<()> {
    check_repo_id(req.repo)?;
    let bundle = &req.bundle;
    if std::fs::symlink_metadata(bundle.join("manifest.json")).is_err() {
        bail!(
            "{} is not a bundle: run `cargo xtask package --model {} --soc 77 --out {}` first",
            bundle.display(),
            req.model,
            bundle.display()
        );
    }
    let mut problems = check_files(bundle)?;
    problems.extend(check_card(bundle));
    if !problems.is_empty() {
        bail!(
            "refusing to release {}: it is not intact:\n  {}",
            bundle.display(),
            problems.join("\n  ")
        );
    }
    let manifest = read_manifest(bundle)?;
    let manifest_sha = crate::hashing::sha256_file(&bundle.join("manifest.json"))?;
    let mut options: Vec<String> = vec!["--repo-type".into(), "model".into()];
    if let Some(r) = req.revision {
        options.extend(["--revision".into(), r.to_string()]);
    }
    options.extend([
        // Replace the revision's content: remote files absent from the bundle are deleted in
        // the same commit (`hf upload` never deletes without it; `.gitattributes` is kept).
        "--delete".into(),
        "*".into(),
        "--commit-message".into(),
        format!(
            "{} bundle, manifest sha256 {}",
            req.model,
            &manifest_sha[..16]
        ),
    ]);
    let positionals = [
        req.repo.to_string(),
        bundle.display().to_string(),
        ".".into(),
    ];
    let upload = super::hf::hf_argv("upload", &options, &positionals);
    let total: u64 = manifest.files.iter().map(|f| f.bytes).sum();
    crate::outln!(
        "release of {} to https://huggingface.co/{}{}: {} files, {:.1} MB",
        bundle.display(),
        req.repo,
        req.revision
            .map(|r| format!(" (revision {r})"))
            .unwrap_or_default(),
        manifest.files.len() + 2,
        total as f64 / 1e6
    );
    for f in &manifest.files {
        crate::outln!("  {:>12} B  {:<20} {}", f.bytes, f.role, f.path);
    }
    crate::outln!(
        "  {:>12}    {:<20} manifest.json, SHA256SUMS",
        "",
        "manifest"
    );
    crate::outln!(
        "commands:\n  hf auth whoami\n  hf {}",
        upload
            .iter()
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    );
    if req.dry_run {
        crate::outln!("dry run: nothing was uploaded");
        return Ok(());
    }
    require_hf()?;
    require_login()?;
    run_hf(&upload)
        .context("the upload failed: the release is NOT published (nothing was recorded)")?;
    let record = serde_json::json!({ "repo": req.repo, "revision": req.revision, "manifest_sha256": manifest_sha, "files": manifest.files.len(), "released_unix": crate::report::now_unix() });
    crate::atomic::write_atomic(
        &crate::project::reports_dir(req.root, req.model).join("release.json"),
        &serde_json::to_vec_pretty(&record)?,
    )?;
    crate::outln!("released {} to {}", bundle.display(), req.repo);
    Ok(())
}

fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./=:".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
