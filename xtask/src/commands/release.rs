//! `cargo xtask release --repo OWNER/NAME [--revision BRANCH | --tag TAG] [--dry-run]`: uploads
//! a verified bundle atomically (see `bundle::release`).

use std::path::PathBuf;

use anyhow::Result;

use super::{Ctx, Outcome};
use xtask_bundle::release::{ReleaseRequest, release};

#[derive(clap::Args)]
pub struct Release {
    /// The Hugging Face model repository to upload to (`owner/name`).
    #[arg(long)]
    repo: String,
    /// The branch to release to (default main; another branch must not exist yet).
    #[arg(long, conflicts_with = "tag")]
    revision: Option<String>,
    /// Release as a tag (created with `hf repos tag create`), never a branch.
    #[arg(long)]
    tag: Option<String>,
    /// The model: a folder under `recipes/`.
    #[arg(long, default_value = "tiny", value_parser = xtask_recipe::recipe::names::parse_model_name)]
    model: String,
    /// The bundle to upload (default: dist/<model> in the project root).
    #[arg(long)]
    bundle: Option<PathBuf>,
    /// Print what would be uploaded and the exact commands; upload nothing.
    #[arg(long)]
    dry_run: bool,
    /// Sign the bundle with this ECDSA P-256 private key (PEM) before uploading it
    /// (`model.sig`, OpenSSF model signing); the signature is verified with the key's public
    /// half, and a bundle whose signature does not verify is never uploaded.
    #[arg(long, value_name = "KEY.pem")]
    sign_key: Option<PathBuf>,
}

impl Release {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        xtask_recipe::recipe::hub_names::validate_repo_id(&self.repo)?;
        xtask_recipe::recipe::placeholder::refuse_placeholder_repo(&ctx.root, &self.model)?;
        if let Some(r) = &self.revision {
            xtask_recipe::recipe::hub_names::validate_revision(r)?;
        }
        if let Some(t) = &self.tag {
            xtask_recipe::recipe::hub_names::validate_revision(t)
                .map_err(|e| anyhow::anyhow!("{e:#}").context(format!("--tag {t:?}")))?;
        }
        let bundle = self
            .bundle
            .clone()
            .unwrap_or_else(|| ctx.root.join("dist").join(&self.model));
        // `hf upload` reads `*`, `?` and `[` in its local path as a glob (upload.py,
        // `_resolve_upload_paths`): it would upload other files than this bundle.
        if bundle.to_string_lossy().contains(['*', '?', '[']) {
            anyhow::bail!(
                "--bundle {} holds `*`, `?` or `[`, which `hf upload` reads as a pattern: rename the folder",
                bundle.display()
            );
        }
        let sign_key = self
            .sign_key
            .as_deref()
            .map(xtask_bundle::signature::SigningKey::read)
            .transpose()?;
        release(&ReleaseRequest {
            root: &ctx.root,
            repo: &self.repo,
            revision: self.revision.as_deref(),
            tag: self.tag.as_deref(),
            model: &self.model,
            bundle,
            dry_run: self.dry_run,
            sign_key: sign_key.as_ref(),
        })?;
        Ok(Outcome::Success)
    }
}
