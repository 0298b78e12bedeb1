//! `cargo xtask release --repo OWNER/NAME [--revision R] [--dry-run]`: uploads a verified
//! bundle with `hf upload` (see `bundle::release`).

use std::path::PathBuf;

use anyhow::Result;

use super::{Ctx, Outcome};
use crate::bundle::release::{ReleaseRequest, release};

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
        release(&ReleaseRequest {
            root: &ctx.root,
            repo: &self.repo,
            revision: self.revision.as_deref(),
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
