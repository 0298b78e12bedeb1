//! `cargo xtask package --model M --soc 77 --out DIR`: the Hugging Face bundle of a built
//! model (see `bundle::package`).

use std::path::PathBuf;

use anyhow::Result;

use super::{Ctx, Outcome, select_components};
use crate::bundle::package::{PackageRequest, package};
use crate::recipe::load_model;

#[derive(clap::Args)]
pub struct Package {
    #[arg(long, default_value = "tiny")]
    model: String,
    #[arg(long)]
    soc: Option<String>,
    /// The bundle folder to create (must not exist, or be empty).
    #[arg(long)]
    out: PathBuf,
    /// Only these components (comma-separated): a partial bundle.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Package artifacts that are stale against their recipe or inputs, and say so in the card.
    #[arg(long)]
    allow_stale: bool,
}

impl Package {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let model = load_model(&ctx.root, &self.model)?;
        let soc = super::target_soc(&model, self.soc.as_deref())?;
        let comps = select_components(&model, &self.only)?;
        super::require_files(ctx, &model, &comps)?;
        let manifest = package(&PackageRequest {
            root: &ctx.root,
            model: &model,
            comps: &comps,
            soc,
            out: std::path::absolute(&self.out)?,
            allow_stale: self.allow_stale,
        })?;
        let total: u64 = manifest.files.iter().map(|f| f.bytes).sum();
        crate::outln!(
            "bundle {}: {} files, {:.1} MB; verify it with `cargo xtask verify {}`",
            self.out.display(),
            manifest.files.len(),
            total as f64 / 1e6,
            self.out.display()
        );
        Ok(Outcome::Success)
    }
}
