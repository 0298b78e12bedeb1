//! `cargo xtask release --repo OWNER/NAME [--revision BRANCH | --tag TAG] [--dry-run]`: uploads
//! a verified bundle atomically (see `bundle::release`).

use std::path::PathBuf;

use anyhow::Result;

use super::{Ctx, Outcome};
use crate::bundle::release::{ReleaseRequest, release};

#[derive(clap::Args)]
pub struct Release {
    #[arg(long)]
    repo: String,
    /// The branch to release to (default main; another branch must not exist yet).
    #[arg(long, conflicts_with = "tag")]
    revision: Option<String>,
    /// Release as a tag (created with `hf repos tag create`), never a branch.
    #[arg(long)]
    tag: Option<String>,
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
        release(&ReleaseRequest {
            root: &ctx.root,
            repo: &self.repo,
            revision: self.revision.as_deref(),
            tag: self.tag.as_deref(),
            model: &self.model,
            bundle: self
                .bundle
                .clone()
                .unwrap_or_else(|| ctx.root.join("dist").join(&self.model)),
            dry_run: self.dry_run,
        })?;
        Ok(Outcome::Success)
    }
}
