//! Where a release goes (`main`, a new branch, a tag), and the checks of what the Hub holds:
//! `manifest.json` and `SHA256SUMS` downloaded back and compared with the local bundle.

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::hf::run_hf;
use super::manifest::SIGNATURE;

/// Where a release goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Main,
    Branch(String),
    Tag(String),
}

impl Target {
    pub(super) fn of(revision: Option<&str>, tag: Option<&str>) -> Result<Target> {
        Ok(match (revision, tag) {
            (Some(_), Some(_)) => bail!("--revision and --tag exclude each other"),
            (_, Some(t)) => Target::Tag(t.to_string()),
            (None | Some("main"), None) => Target::Main,
            (Some(b), None) if b.starts_with("refs/") => {
                bail!("--revision names a branch (got {b:?}); use --tag NAME for a tag")
            }
            (Some(b), None) => Target::Branch(b.to_string()),
        })
    }

    pub(super) fn label(&self) -> String {
        match self {
            Target::Main => "branch main".into(),
            Target::Branch(b) => format!("new branch {b}"),
            Target::Tag(t) => format!("tag {t}"),
        }
    }

    pub(super) fn revision(&self) -> &str {
        match self {
            Target::Main => "main",
            Target::Branch(b) | Target::Tag(b) => b,
        }
    }

    pub(super) fn expose_line(&self, repo: &str) -> String {
        match self {
            Target::Main => {
                format!(
                    "hf discussions reopen {repo} <N> --yes --comment …   (the Hub's API-made pull requests are drafts)\n  hf discussions merge {repo} <N> --yes   (one server-side step; on failure: hf discussions close {repo} <N> --yes)"
                )
            }
            Target::Branch(b) => format!(
                "hf repos branch create {repo} {b} --revision <verified commit>; hf repos branch delete {repo} <staging>"
            ),
            Target::Tag(t) => format!(
                "hf repos tag create {repo} {t} --revision <verified commit>; hf repos branch delete {repo} <staging>"
            ),
        }
    }
}

/// The commit of the target revision when it already holds exactly this bundle's
/// `manifest.json` and `SHA256SUMS` (a re-release of the same bundle changes nothing); `None`
/// when it does not exist yet (or is `main` with other content, replaced through a pull
/// request). A branch other than main or a tag that exists with other content is refused
/// before anything is uploaded: the Hub cannot move it in one step.
pub(super) fn already_there(
    repo: &str,
    target: &Target,
    bundle: &Path,
    scratch: &Path,
) -> Result<Option<String>> {
    let dir = scratch.join("current");
    if download_pair(repo, target.revision(), &dir).is_err() {
        return Ok(None);
    }
    // A signed bundle is the same only with the same signature (absent there: not the same).
    if bundle.join(SIGNATURE).is_file() {
        let _ = download_files(repo, target.revision(), &dir, &[SIGNATURE]);
    }
    let same = ["manifest.json", "SHA256SUMS", SIGNATURE]
        .iter()
        .all(|f| std::fs::read(dir.join(f)).ok() == std::fs::read(bundle.join(f)).ok());
    if same {
        return Ok(super::hf::downloaded_commit(&dir));
    }
    match target {
        Target::Main => Ok(None),
        _ => bail!(
            "{} already exists on {repo} with another bundle: the Hub cannot move it in one step, \
             so nothing was uploaded; release to main (a merged pull request), a new branch or a new tag",
            target.label().replace("new branch", "branch")
        ),
    }
}

/// Refuses a target whose name would mean two revisions on the Hub: a new branch named like an
/// existing tag, or a tag named like an existing branch (the Hub resolves a bare name to
/// either; which one a later `fetch --revision` gets is not this release's to decide). Tags
/// come from `hf repos tag list --format json` (`cli/repos.py` `tag_list`); the CLI lists no
/// branches, so a name that resolves (a download of it succeeds) without being a tag is one.
pub(super) fn refuse_ambiguous(repo: &str, target: &Target, scratch: &Path) -> Result<()> {
    let (name, is_tag) = match target {
        Target::Main => return Ok(()),
        Target::Branch(b) => (b.as_str(), false),
        Target::Tag(t) => (t.as_str(), true),
    };
    let tags = super::hf::tags(repo)?;
    let tagged = tags.iter().any(|(t, _)| t == name);
    let ambiguous = match is_tag {
        false => tagged.then(|| format!("{repo} has a tag {name} (refs/tags/{name})")),
        true if tagged => None,
        true => download_pair(repo, name, &scratch.join("probe"))
            .is_ok()
            .then(|| format!("{repo} has a branch (or a commit) named {name}")),
    };
    if let Some(other) = ambiguous {
        return Err(xtask_base::bad_input::BadInput(anyhow::anyhow!(
            "{} {name:?} is ambiguous: {other}, and a {} of the same name would make `{name}` mean two revisions; nothing was uploaded: choose another name",
            if is_tag { "--tag" } else { "--revision" },
            if is_tag { "tag" } else { "branch" },
        ))
        .into());
    }
    Ok(())
}

fn download_pair(repo: &str, rev: &str, dir: &Path) -> Result<()> {
    download_files(repo, rev, dir, &["manifest.json", "SHA256SUMS"])
}

fn download_files(repo: &str, rev: &str, dir: &Path, files: &[&str]) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let options = super::hf::args(&[
        "--repo-type",
        "model",
        "--revision",
        rev,
        "--local-dir",
        &dir.display().to_string(),
    ]);
    let mut positionals = super::hf::args(&[repo]);
    positionals.extend(super::hf::args(files));
    run_hf(&super::hf::hf_argv("download", &options, &positionals))?;
    Ok(())
}

/// `manifest.json` and `SHA256SUMS` of `commit` (and `model.sig` of a signed bundle), byte
/// for byte those of the bundle.
pub(super) fn compare_with_bundle(
    repo: &str,
    commit: &str,
    bundle: &Path,
    scratch: &Path,
) -> Result<()> {
    let dir = scratch.join("uploaded");
    download_pair(repo, commit, &dir)?;
    let mut compared = vec!["manifest.json", "SHA256SUMS"];
    if bundle.join(SIGNATURE).is_file() {
        download_files(repo, commit, &dir, &[SIGNATURE])?;
        compared.push(SIGNATURE);
    }
    for f in compared {
        let remote = std::fs::read(dir.join(f)).with_context(|| format!("no {f} came back"))?;
        if remote != std::fs::read(bundle.join(f))? {
            bail!("{f} of commit {commit} differs from the bundle's");
        }
    }
    Ok(())
}
