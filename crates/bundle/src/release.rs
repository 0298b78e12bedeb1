//! Releasing a verified bundle to the Hugging Face Hub, atomically. `hf upload` commits a large
//! folder in several batches (huggingface_hub's `_upload_pipeline.py`: ~250 files, 100 MB of
//! small files or 5 minutes per commit, deletions in the first), so uploading straight to the
//! target would leave it half-replaced when interrupted. Instead:
//!
//! 1. the new content is uploaded where the target does not see it yet: a pull request against
//!    `main` (`hf discussions create --pull-request`, then `hf upload --revision refs/pr/N`: the
//!    way huggingface_hub's own pipeline fills a pull request, batch by batch), or,
//!    for another branch or a tag, a staging branch `xtask-release-…` made from `main`;
//!    `--delete "*"` makes that revision's tree exactly the bundle (plus the Hub's `.gitattributes`);
//! 2. its `manifest.json` and `SHA256SUMS` are downloaded back from the uploaded commit and
//!    compared byte for byte with the local bundle;
//! 3. only then is it exposed in one server-side step: `hf discussions merge` (main; the pull
//!    request, a draft as the Hub makes every API-created one, is opened first with `hf
//!    discussions reopen`, since a draft cannot be merged), `hf repos
//!    branch create --revision <commit>` (a new branch; an existing one cannot be moved in one
//!    step and is refused), or `hf repos tag create --revision <commit>` (a real tag).
//!
//! An interruption anywhere before step 3 leaves the target revision as it was. Nothing is
//! claimed released unless step 3 succeeded (`reports/<model>/release.json` is written last,
//! with the commit, the pull request and the `huggingface_hub` version).

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::hf::{HF_HUB_PIN, hub_version, require_hf, require_login};
use super::intact::Scope;
use super::manifest::{Manifest, SIGNATURE, read_manifest};
use super::release_publish::{Scratch, Upload};
use super::release_target::{Target, already_there};
use super::signature::SigningKey;
use xtask_recipe::recipe::hub_names::validate_repo_id;

pub struct ReleaseRequest<'a> {
    pub root: &'a Path,
    pub repo: &'a str,
    /// A branch (default `main`).
    pub revision: Option<&'a str>,
    /// A tag to create instead of a branch.
    pub tag: Option<&'a str>,
    pub model: &'a str,
    pub bundle: PathBuf,
    pub dry_run: bool,
    /// `--sign-key KEY.pem`: sign the bundle (`model.sig`) before it is uploaded; the
    /// signature is verified with the key's public half, and a bundle whose signature does
    /// not verify is never uploaded.
    pub sign_key: Option<&'a SigningKey>,
}

pub fn release(req: &ReleaseRequest<'_>) -> Result<()> {
    validate_repo_id(req.repo)?;
    let manifest = intact_manifest(req)?;
    let upload = plan_upload(req)?;
    print_files(req, &upload, &manifest);
    print_commands(req, &upload);
    if req.dry_run {
        return dry_run_checks(&upload.target, req.repo);
    }
    let hub = ready_hf()?;
    let _lock = Scratch::lock(req.root)?;
    let scratch = Scratch::new(req.root)?;
    super::release_target::refuse_ambiguous(req.repo, &upload.target, scratch.path())?;
    if let Some(commit) = already_there(req.repo, &upload.target, &req.bundle, scratch.path())? {
        xtask_base::outln!(
            "{} already holds this bundle (commit {commit}): nothing uploaded",
            upload.target.label()
        );
        return record(req, &upload, &manifest, &commit, None, &hub);
    }
    let staged = upload.stage()?;
    let published = upload.publish(&staged, scratch.path());
    let commit = upload.settle(&staged, published)?;
    record(req, &upload, &manifest, &commit, staged.pr, &hub)
}

/// The bundle's manifest, once the bundle passed the check `verify` runs (every file,
/// `SHA256SUMS`, `bundle.json`, the card, the records) and its signature verifies: signed here
/// with `--sign-key` (not in a dry run), or a `model.sig` already there checked for form and
/// for covering exactly the bundle's files.
fn intact_manifest(req: &ReleaseRequest<'_>) -> Result<Manifest> {
    let bundle = &req.bundle;
    if std::fs::symlink_metadata(bundle.join("manifest.json")).is_err() {
        bail!(
            "{} is not a bundle: run `cargo xtask package --model {} --soc 77 --out {}` first",
            bundle.display(),
            req.model,
            bundle.display()
        );
    }
    let mut checked = super::intact::check(bundle, &Scope::all(), None)?;
    if checked.problems.is_empty()
        && let Some(key) = req.sign_key
    {
        let manifest = read_manifest(bundle)?;
        if req.dry_run {
            xtask_base::outln!(
                "--sign-key: a release signs the bundle into {}/{SIGNATURE} (key hint {}) before uploading it",
                bundle.display(),
                key.hint()
            );
        } else {
            super::signature::sign(bundle, bundle, &manifest, key)?;
            checked = super::intact::check(bundle, &Scope::all(), Some(&key.verifying()?))?;
        }
    }
    if !checked.problems.is_empty() {
        bail!(
            "refusing to release {}: it is not intact:\n  {}",
            bundle.display(),
            checked.problems.join("\n  ")
        );
    }
    xtask_base::outln!("{}", checked.signed.describe());
    read_manifest(bundle)
}

/// Where the release goes and what its commit says (the manifest's hash names the bundle).
fn plan_upload<'a>(req: &'a ReleaseRequest<'a>) -> Result<Upload<'a>> {
    let manifest_sha = xtask_base::hashing::sha256_file(&req.bundle.join("manifest.json"))?;
    Ok(Upload {
        repo: req.repo,
        bundle: &req.bundle,
        target: Target::of(req.revision, req.tag)?,
        message: format!(
            "{} bundle, manifest sha256 {}",
            req.model,
            &manifest_sha[..16]
        ),
        manifest_sha,
    })
}

/// Every file the release uploads, with its size and role.
fn print_files(req: &ReleaseRequest<'_>, upload: &Upload<'_>, manifest: &Manifest) {
    let total: u64 = manifest.files.iter().map(|f| f.bytes).sum();
    xtask_base::outln!(
        "release of {} to https://huggingface.co/{} ({}): {} files, {:.1} MB",
        req.bundle.display(),
        req.repo,
        upload.target.label(),
        manifest.files.len()
            + 2
            + usize::from(req.sign_key.is_some() || req.bundle.join(SIGNATURE).is_file()),
        total as f64 / 1e6
    );
    for f in &manifest.files {
        xtask_base::outln!("  {:>12} B  {:<20} {}", f.bytes, f.role, f.path);
    }
    let own = match req.sign_key.is_some() || req.bundle.join(SIGNATURE).is_file() {
        true => "manifest.json, SHA256SUMS, model.sig",
        false => "manifest.json, SHA256SUMS",
    };
    xtask_base::outln!("  {:>12}    {:<20} {own}", "", "manifest");
}

/// The `hf` commands the release runs, in order (the dry run's answer).
fn print_commands(req: &ReleaseRequest<'_>, upload: &Upload<'_>) {
    let mut plan = vec![
        "hf auth whoami".to_string(),
        "hf version --format json".into(),
        format!("hf repos create {} --repo-type model --exist-ok", req.repo),
    ];
    if upload.target == Target::Main {
        plan.push(format!(
            "hf discussions create {} --title {} --pull-request --format json",
            req.repo,
            shell_quote(&upload.message)
        ));
    }
    plan.push(format!(
        "hf {}",
        quoted(&upload.argv(&upload.staging_label()))
    ));
    plan.push(format!(
        "hf download {} manifest.json SHA256SUMS --repo-type model --revision <uploaded commit> --local-dir <tmp>   (compared with the bundle)",
        req.repo
    ));
    plan.push(upload.target.expose_line(req.repo));
    xtask_base::outln!("commands:\n  {}", plan.join("\n  "));
}

/// `hf` on PATH and logged in; returns the installed `huggingface_hub` version.
fn ready_hf() -> Result<String> {
    require_hf()?;
    require_login()?;
    let hub = hub_version()?;
    if hub != HF_HUB_PIN {
        xtask_base::outln!(
            "note: huggingface_hub {hub} is installed; this tool's `hf` calls were checked against {HF_HUB_PIN}"
        );
    }
    Ok(hub)
}

/// Writes `reports/<model>/release.json`, the last step: only a published release has one.
fn record(
    req: &ReleaseRequest<'_>,
    upload: &Upload<'_>,
    manifest: &Manifest,
    commit: &str,
    pr: Option<u64>,
    hub: &str,
) -> Result<()> {
    let target = &upload.target;
    let (kind, name) = match target {
        Target::Tag(t) => ("tag", t.as_str()),
        _ => ("branch", target.revision()),
    };
    let record = serde_json::json!({
        "repo": req.repo,
        "revision": name,
        "revision_kind": kind,
        "commit": commit,
        "pull_request": pr,
        "huggingface_hub": hub,
        "manifest_sha256": upload.manifest_sha,
        "files": manifest.files.len(),
        "released_unix": xtask_runtime::report::now_unix(),
    });
    xtask_base::atomic::write_atomic(
        &xtask_base::project::reports_dir(req.root, req.model).join("release.json"),
        &serde_json::to_vec_pretty(&record)?,
    )?;
    xtask_base::outln!(
        "released {} to {} ({})",
        req.bundle.display(),
        req.repo,
        target.label()
    );
    Ok(())
}

fn quoted(args: &[String]) -> String {
    args.iter()
        .map(|a| shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ")
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

/// The end of a dry run: what `--delete "*"` removes, then the checks a real release would stop
/// at (`hf` installed and logged in), as an error (exit 2) when one fails.
fn dry_run_checks(target: &Target, repo: &str) -> Result<()> {
    xtask_base::outln!(
        "--delete \"*\": the uploaded revision's tree becomes the bundle's: every file of {repo} ({}) that is not in the bundle is deleted in the upload's first commit (`.gitattributes` is kept); the target changes only in the final step",
        target.label()
    );
    let problems = super::hf::preflight();
    if !problems.is_empty() {
        bail!(
            "dry run: nothing was uploaded, and a release would stop here:\n  {}",
            problems.join("\n  ")
        );
    }
    xtask_base::outln!(
        "dry run: nothing was uploaded; `hf` is ready: run the same command without --dry-run"
    );
    Ok(())
}
