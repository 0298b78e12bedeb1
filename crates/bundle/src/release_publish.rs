//! The Hub side of a release (see `bundle::release` for why it goes this way): the staging
//! revision is opened (a pull request against `main`, or a staging branch), the bundle is
//! uploaded into it, its `manifest.json` and `SHA256SUMS` are downloaded back and compared,
//! then one server-side step exposes it; whatever fails, the partial upload is deleted or
//! named.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::hf::{args, hf_argv, last_json, run_hf};
use super::release_target::{Target, compare_with_bundle};

/// One release's upload: where it goes and what its commits say.
pub(super) struct Upload<'a> {
    pub repo: &'a str,
    pub bundle: &'a Path,
    pub target: Target,
    /// The commit message (and the pull request's title): the model and the manifest's hash.
    pub message: String,
    /// sha256 of the bundle's `manifest.json`, which names the staging branch.
    pub manifest_sha: String,
}

/// The revision the upload went to before it is exposed.
pub(super) struct Staged {
    /// `refs/pr/<N>` or `xtask-release-<sha>-<nonce>`.
    pub rev: String,
    /// The pull request's number (releases to `main`).
    pub pr: Option<u64>,
}

impl Upload<'_> {
    /// The `hf upload` argv into revision `rev`.
    pub fn argv(&self, rev: &str) -> Vec<String> {
        let options = args(&[
            "--repo-type",
            "model",
            "--revision",
            rev,
            // The staged revision's tree becomes the bundle's: remote files absent from it
            // are deleted (`hf upload` never deletes without it; `.gitattributes` is kept).
            "--delete",
            "*",
            "--commit-message",
            &self.message,
            "--format",
            "json",
        ]);
        // Positionals after `--`: nothing the user typed can be read as an option of `hf`.
        let positionals = args(&[self.repo, &self.bundle.display().to_string(), "."]);
        hf_argv("upload", &options, &positionals)
    }

    /// The staging revision as the command listing shows it (its number or nonce is not
    /// known before the release runs).
    pub fn staging_label(&self) -> String {
        match &self.target {
            Target::Main => "refs/pr/<N>".to_string(),
            _ => format!("xtask-release-{}-<nonce>", &self.manifest_sha[..12]),
        }
    }

    /// Makes sure the repository exists, then opens the revision the upload goes to: a pull
    /// request against `main`, or a new staging branch name.
    pub fn stage(&self) -> Result<Staged> {
        run_hf(&args(&[
            "repos",
            "create",
            self.repo,
            "--repo-type",
            "model",
            "--exist-ok",
        ]))?;
        let staged = match &self.target {
            Target::Main => {
                let num = self.open_pull_request()?;
                Staged {
                    rev: format!("refs/pr/{num}"),
                    pr: Some(num),
                }
            }
            _ => Staged {
                rev: format!("xtask-release-{}-{}", &self.manifest_sha[..12], nonce()),
                pr: None,
            },
        };
        xtask_base::outln!(
            "uploading to {} (not visible at {} yet)",
            staged.rev,
            self.target.label()
        );
        Ok(staged)
    }

    fn open_pull_request(&self) -> Result<u64> {
        let out = run_hf(&args(&[
            "discussions",
            "create",
            self.repo,
            "--title",
            &self.message,
            "--pull-request",
            "--format",
            "json",
        ]))?;
        let v = last_json(&out)?;
        v["num"]
            .as_u64()
            .or_else(|| v["num"].as_str().and_then(|n| n.parse().ok()))
            .with_context(|| format!("no pull request number in {v}"))
    }

    /// Uploads, checks what came back and exposes it; returns the published commit.
    pub fn publish(&self, staged: &Staged, scratch: &Path) -> Result<String> {
        let out = run_hf(&self.argv(&staged.rev))
            .with_context(|| self.not_published("the upload failed"))?;
        let commit = self.uploaded_commit(&out)?;
        compare_with_bundle(self.repo, &commit, self.bundle, scratch).with_context(|| {
            self.not_published("the uploaded revision does not match the bundle")
        })?;
        xtask_base::outln!(
            "verified {} at commit {commit}: manifest.json and SHA256SUMS match the bundle",
            staged.rev
        );
        self.expose(staged, &commit)?;
        Ok(commit)
    }

    /// The commit `hf upload` names in its JSON result (`…/commit/<hex>`).
    fn uploaded_commit(&self, output: &str) -> Result<String> {
        let url = last_json(output)?["url"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        url.rsplit_once("/commit/")
            .map(|(_, c)| c.to_string())
            .filter(|c| !c.is_empty() && c.chars().all(|c| c.is_ascii_hexdigit()))
            .with_context(|| self.not_published(&format!("`hf upload` named no commit ({url:?})")))
    }

    /// The one server-side step that makes the verified commit the target.
    fn expose(&self, staged: &Staged, commit: &str) -> Result<()> {
        let repo = self.repo;
        let (argv, what) = match &self.target {
            Target::Main => {
                let num = staged.pr.unwrap_or_default().to_string();
                self.mark_ready(&num)?;
                let argv = args(&[
                    "discussions",
                    "merge",
                    repo,
                    &num,
                    "--yes",
                    "--comment",
                    "verified by cargo xtask release",
                ]);
                (argv, format!("merging pull request #{num} failed"))
            }
            // Positionals after `--`, as everywhere: a name is never read as an option.
            Target::Branch(b) => (
                args(&[
                    "repos",
                    "branch",
                    "create",
                    "--revision",
                    commit,
                    "--",
                    repo,
                    b,
                ]),
                format!(
                    "creating branch {b} failed (an existing branch cannot be moved in one step: release to main, a new branch or a tag)"
                ),
            ),
            Target::Tag(t) => (
                args(&[
                    "repos",
                    "tag",
                    "create",
                    "--revision",
                    commit,
                    "-m",
                    &self.message,
                    "--",
                    repo,
                    t,
                ]),
                format!("creating tag {t} failed"),
            ),
        };
        run_hf(&argv).with_context(|| self.not_published(&what))?;
        Ok(())
    }

    /// The Hub makes a pull request created through the API a draft ("Pull Requests created
    /// programmatically will be in "draft" status", `HfApi.create_pull_request`), and a draft
    /// cannot be merged: the verified one is opened first, as `hf discussions reopen` does
    /// (`change_discussion_status(new_status="open")`).
    fn mark_ready(&self, num: &str) -> Result<()> {
        run_hf(&args(&[
            "discussions",
            "reopen",
            self.repo,
            num,
            "--yes",
            "--comment",
            "uploaded and verified by cargo xtask release: ready to merge",
        ]))
        .with_context(|| {
            self.not_published(&format!(
                "opening pull request #{num} (out of draft) failed"
            ))
        })?;
        Ok(())
    }

    fn not_published(&self, what: &str) -> String {
        format!(
            "{what}: the release is NOT published ({} is untouched)",
            self.target.label()
        )
    }

    /// After `publish`: the staging branch is deleted (it did its job, or holds a partial
    /// upload); a pull request that was not merged is closed. Returns the
    /// published commit, or the publishing error.
    pub fn settle(&self, staged: &Staged, published: Result<String>) -> Result<String> {
        let rev = &staged.rev;
        match (published, staged.pr) {
            (Ok(commit), Some(_)) => Ok(commit),
            (Ok(commit), None) => {
                // The branch or tag points at its commit now.
                if let Err(e) = delete_branch(self.repo, rev) {
                    xtask_base::outln!("note: the staging branch {rev} was not deleted: {e:#}");
                }
                Ok(commit)
            }
            (Err(e), Some(num)) => {
                close_pull_request(self.repo, num);
                Err(e)
            }
            (Err(e), None) => {
                match delete_branch(self.repo, rev) {
                    Ok(()) => {
                        xtask_base::outln!(
                            "the staging branch {rev} (the partial upload) was deleted"
                        )
                    }
                    Err(d) => xtask_base::outln!(
                        "note: the staging branch {rev} (the partial upload) could not be deleted ({d:#}): `hf repos branch delete {} {rev}`",
                        self.repo
                    ),
                }
                Err(e)
            }
        }
    }
}

/// A failed release's pull request is closed (its partial upload stays in its history on the
/// Hub, never in `main`); when even that fails, the command to close it is printed.
fn close_pull_request(repo: &str, num: u64) {
    let n = num.to_string();
    let argv = args(&[
        "discussions",
        "close",
        repo,
        &n,
        "--yes",
        "--comment",
        "cargo xtask release failed: not merged",
    ]);
    match run_hf(&argv) {
        Ok(_) => {
            xtask_base::outln!("pull request #{num} (the partial upload) was closed, not merged")
        }
        Err(e) => xtask_base::outln!(
            "note: pull request #{num} (the partial upload, not merged) could not be closed ({e:#}): `hf discussions close {repo} {num} --yes`"
        ),
    }
}

fn delete_branch(repo: &str, rev: &str) -> Result<()> {
    run_hf(&args(&["repos", "branch", "delete", repo, rev])).map(|_| ())
}

/// A name part no other release of this host picks at the same time (process id and clock).
fn nonce() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{}", std::process::id(), t % 1_000_000_000)
}

/// The folder the downloaded-back files are compared in, removed however the release ends.
pub(super) struct Scratch(PathBuf);

/// The prefix of a release's scratch folder in `target/` (the download-back check's files).
const SCRATCH_PREFIX: &str = "release-verify-";

impl Scratch {
    /// A new scratch folder, once those of killed releases are removed (under the release
    /// lock, held by the caller for the whole release).
    pub fn new(root: &Path) -> Result<Self> {
        let target = root.join("target");
        for left in xtask_base::atomic::remove_leftovers(&target, SCRATCH_PREFIX)? {
            xtask_base::errln!("removed target/{left}, left behind by an interrupted release");
        }
        Ok(Scratch(target.join(format!("{SCRATCH_PREFIX}{}", nonce()))))
    }

    /// One release at a time per project (its scratch folders are cleaned under it).
    pub fn lock(root: &Path) -> Result<std::fs::File> {
        xtask_base::atomic::lock_file(&root.join("target/.release.lock"), "release")
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
