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
//! 3. only then is it exposed in one server-side step: `hf discussions merge` (main), `hf repos
//!    branch create --revision <commit>` (a new branch; an existing one cannot be moved in one
//!    step and is refused), or `hf repos tag create --revision <commit>` (a real tag).
//!
//! An interruption anywhere before step 3 leaves the target revision as it was. Nothing is
//! claimed released unless step 3 succeeded (`reports/<model>/release.json` is written last,
//! with the commit, the pull request and the `huggingface_hub` version).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::hf::{
    HF_HUB_PIN, check_repo_id, hub_version, last_json, require_hf, require_login, run_hf,
};
use super::manifest::{check_files, read_manifest};
use super::release_target::{Target, already_there, compare_with_bundle};
use super::verify::check_card;

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
    let target = Target::of(req.revision, req.tag)?;
    let message = format!(
        "{} bundle, manifest sha256 {}",
        req.model,
        &manifest_sha[..16]
    );
    let total: u64 = manifest.files.iter().map(|f| f.bytes).sum();
    crate::outln!(
        "release of {} to https://huggingface.co/{} ({}): {} files, {:.1} MB",
        bundle.display(),
        req.repo,
        target.label(),
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
    let staging = match &target {
        Target::Main => "refs/pr/<N>".to_string(),
        _ => format!("xtask-release-{}-<nonce>", &manifest_sha[..12]),
    };
    let upload = |rev: &str| -> Vec<String> {
        let options = strings(&[
            "--repo-type",
            "model",
            "--revision",
            rev,
            // The staged revision's tree becomes the bundle's: remote files absent from it
            // are deleted (`hf upload` never deletes without it; `.gitattributes` is kept).
            "--delete",
            "*",
            "--commit-message",
            &message,
            "--format",
            "json",
        ]);
        // Positionals after `--`: nothing the user typed can be read as an option of `hf`.
        let positionals = strings(&[req.repo, &bundle.display().to_string(), "."]);
        super::hf::hf_argv("upload", &options, &positionals)
    };
    let mut plan = vec![
        "hf auth whoami".to_string(),
        "hf version --format json".into(),
        format!("hf repos create {} --repo-type model --exist-ok", req.repo),
    ];
    if target == Target::Main {
        plan.push(format!(
            "hf discussions create {} --title {} --pull-request --format json",
            req.repo,
            shell_quote(&message)
        ));
    }
    plan.push(format!("hf {}", quoted(&upload(&staging))));
    plan.push(format!(
        "hf download {} manifest.json SHA256SUMS --repo-type model --revision <uploaded commit> --local-dir <tmp>   (compared with the bundle)",
        req.repo
    ));
    plan.push(target.expose_line(req.repo));
    crate::outln!("commands:\n  {}", plan.join("\n  "));
    if req.dry_run {
        return dry_run_checks(&target, req.repo);
    }
    require_hf()?;
    require_login()?;
    let hub = hub_version()?;
    if hub != HF_HUB_PIN {
        crate::outln!(
            "note: huggingface_hub {hub} is installed; this tool's `hf` calls were checked against {HF_HUB_PIN}"
        );
    }
    let scratch = req
        .root
        .join("target")
        .join(format!("release-verify-{}", nonce()));
    let _cleanup = RemoveOnDrop(scratch.clone());
    if let Some(commit) = already_there(req.repo, &target, bundle, &scratch)? {
        crate::outln!(
            "{} already holds this bundle (commit {commit}): nothing uploaded",
            target.label()
        );
        return record(
            req,
            &target,
            &manifest_sha,
            &manifest.files,
            &commit,
            None,
            &hub,
        );
    }
    run_hf(&strings(&[
        "repos",
        "create",
        req.repo,
        "--repo-type",
        "model",
        "--exist-ok",
    ]))?;
    let (staged_rev, pr) = match &target {
        Target::Main => {
            let out = run_hf(&strings(&[
                "discussions",
                "create",
                req.repo,
                "--title",
                &message,
                "--pull-request",
                "--format",
                "json",
            ]))?;
            let v = last_json(&out)?;
            let num = v["num"]
                .as_u64()
                .or_else(|| v["num"].as_str().and_then(|n| n.parse().ok()))
                .with_context(|| format!("no pull request number in {v}"))?;
            (format!("refs/pr/{num}"), Some(num))
        }
        _ => (
            format!("xtask-release-{}-{}", &manifest_sha[..12], nonce()),
            None,
        ),
    };
    let not_published = |what: &str| {
        format!(
            "{what}: the release is NOT published ({} is untouched)",
            target.label()
        )
    };
    crate::outln!(
        "uploading to {staged_rev} (not visible at {} yet)",
        target.label()
    );
    // Upload, check and expose; whatever fails, the partial upload is cleared away or named.
    let published = (|| -> Result<String> {
        let out =
            run_hf(&upload(&staged_rev)).with_context(|| not_published("the upload failed"))?;
        let url = last_json(&out)?["url"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let commit = url
            .rsplit_once("/commit/")
            .map(|(_, c)| c.to_string())
            .filter(|c| !c.is_empty() && c.chars().all(|c| c.is_ascii_hexdigit()))
            .with_context(|| not_published(&format!("`hf upload` named no commit ({url:?})")))?;
        compare_with_bundle(req.repo, &commit, bundle, &scratch)
            .with_context(|| not_published("the uploaded revision does not match the bundle"))?;
        crate::outln!(
            "verified {staged_rev} at commit {commit}: manifest.json and SHA256SUMS match the bundle"
        );
        match &target {
            Target::Main => {
                let num = pr.unwrap_or_default().to_string();
                run_hf(&strings(&[
                    "discussions",
                    "merge",
                    req.repo,
                    &num,
                    "--yes",
                    "--comment",
                    "verified by cargo xtask release",
                ]))
                .with_context(|| not_published(&format!("merging pull request #{num} failed")))?;
            }
            Target::Branch(b) => {
                run_hf(&strings(&["repos", "branch", "create", req.repo, b, "--revision", &commit]))
                .with_context(|| not_published(&format!("creating branch {b} failed (an existing branch cannot be moved in one step: release to main, a new branch or a tag)")))?;
            }
            Target::Tag(t) => {
                run_hf(&strings(&[
                    "repos",
                    "tag",
                    "create",
                    req.repo,
                    t,
                    "--revision",
                    &commit,
                    "-m",
                    &message,
                ]))
                .with_context(|| not_published(&format!("creating tag {t} failed")))?;
            }
        }
        Ok(commit)
    })();
    let commit = match (published, pr) {
        (Ok(commit), _) => commit,
        (Err(e), Some(num)) => {
            crate::outln!(
                "the partial upload stays in pull request #{num} ({staged_rev}), not merged: close it on the Hub"
            );
            return Err(e);
        }
        (Err(e), None) => {
            match delete_staging(req.repo, &staged_rev) {
                Ok(()) => crate::outln!(
                    "the staging branch {staged_rev} (the partial upload) was deleted"
                ),
                Err(d) => crate::outln!(
                    "note: the staging branch {staged_rev} (the partial upload) could not be deleted ({d:#}): `hf repos branch delete {} {staged_rev}`",
                    req.repo
                ),
            }
            return Err(e);
        }
    };
    if pr.is_none() {
        // The staging branch has done its job (the branch or tag points at its commit).
        if let Err(e) = delete_staging(req.repo, &staged_rev) {
            crate::outln!("note: the staging branch {staged_rev} was not deleted: {e:#}");
        }
    }
    record(
        req,
        &target,
        &manifest_sha,
        &manifest.files,
        &commit,
        pr,
        &hub,
    )
}

fn delete_staging(repo: &str, rev: &str) -> Result<()> {
    run_hf(&strings(&["repos", "branch", "delete", repo, rev])).map(|_| ())
}

fn record(
    req: &ReleaseRequest<'_>,
    target: &Target,
    manifest_sha: &str,
    files: &[super::manifest::ManifestEntry],
    commit: &str,
    pr: Option<u64>,
    hub: &str,
) -> Result<()> {
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
        "manifest_sha256": manifest_sha,
        "files": files.len(),
        "released_unix": crate::report::now_unix(),
    });
    crate::atomic::write_atomic(
        &crate::project::reports_dir(req.root, req.model).join("release.json"),
        &serde_json::to_vec_pretty(&record)?,
    )?;
    crate::outln!(
        "released {} to {} ({})",
        req.bundle.display(),
        req.repo,
        target.label()
    );
    Ok(())
}

pub(super) fn strings(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

fn quoted(args: &[String]) -> String {
    args.iter()
        .map(|a| shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ")
}

fn nonce() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{}", std::process::id(), t % 1_000_000_000)
}

/// Removes the verification scratch folder however the release ends.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
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
    crate::outln!(
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
    crate::outln!(
        "dry run: nothing was uploaded; `hf` is ready: run the same command without --dry-run"
    );
    Ok(())
}
