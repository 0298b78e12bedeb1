//! `cargo xtask release --repo OWNER/NAME [--revision R] [--dry-run]`: uploads a verified
//! bundle with `hf upload`. `--dry-run` prints every file and the exact commands. Nothing is
//! claimed released unless the upload succeeded (`reports/<model>/release.json` is written last).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use super::verify::{check_card, check_files, read_manifest};
use super::{Ctx, Outcome};
use crate::bundle::hf::{check_repo_id, require_hf, run_hf};

#[derive(clap::Args)]
pub struct Release {
    #[arg(long)]
    repo: String,
    #[arg(long)]
    revision: Option<String>,
    #[arg(long, default_value = "tiny")]
    model: String,
    /// The bundle to upload (default: dist/<model> in the project root).
    #[arg(long)]
    bundle: Option<PathBuf>,
    /// Print what would be uploaded and the exact commands; upload nothing.
    #[arg(long)]
    dry_run: bool,
}

impl Release {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        check_repo_id(&self.repo)?;
        let bundle = self
            .bundle
            .clone()
            .unwrap_or_else(|| ctx.root.join("dist").join(&self.model));
        if !bundle.join("manifest.json").is_file() {
            bail!(
                "{} is not a bundle: run `cargo xtask package --model {} --soc 77 --out {}` first",
                bundle.display(),
                self.model,
                bundle.display()
            );
        }
        let mut problems = check_files(&bundle)?;
        problems.extend(check_card(&bundle));
        if !problems.is_empty() {
            bail!(
                "refusing to release {}: it is not intact:\n  {}",
                bundle.display(),
                problems.join("\n  ")
            );
        }
        let manifest = read_manifest(&bundle)?;
        let manifest_sha = crate::hashing::sha256_file(&bundle.join("manifest.json"))?;
        let mut upload: Vec<String> = vec![
            "upload".into(),
            self.repo.clone(),
            bundle.display().to_string(),
            ".".into(),
            "--repo-type".into(),
            "model".into(),
        ];
        if let Some(r) = &self.revision {
            upload.extend(["--revision".into(), r.clone()]);
        }
        upload.extend([
            "--commit-message".into(),
            format!(
                "{} bundle, manifest sha256 {}",
                self.model,
                &manifest_sha[..16]
            ),
        ]);
        let total: u64 = manifest.files.iter().map(|f| f.bytes).sum();
        crate::outln!(
            "release of {} to https://huggingface.co/{}{}: {} files, {:.1} MB",
            bundle.display(),
            self.repo,
            self.revision
                .as_deref()
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
        if self.dry_run {
            crate::outln!("dry run: nothing was uploaded");
            return Ok(Outcome::Success);
        }
        require_hf()?;
        run_hf(&["auth".into(), "whoami".into()])
            .context("not logged in to Hugging Face: set HF_TOKEN or run `hf auth login`")?;
        run_hf(&upload)
            .context("the upload failed: the release is NOT published (nothing was recorded)")?;
        let record = serde_json::json!({ "repo": self.repo, "revision": self.revision, "manifest_sha256": manifest_sha, "files": manifest.files.len(), "released_unix": crate::report::now_unix() });
        crate::atomic::write_atomic(
            &crate::project::reports_dir(&ctx.root, &self.model).join("release.json"),
            &serde_json::to_vec_pretty(&record)?,
        )?;
        crate::outln!("released {} to {}", bundle.display(), self.repo);
        Ok(Outcome::Success)
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
