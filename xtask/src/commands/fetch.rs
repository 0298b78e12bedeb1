//! `cargo xtask fetch --repo OWNER/NAME [--model M]`: downloads a published bundle and lays
//! it out for the model's recipes (see `bundle::fetch`).

use anyhow::Result;

use super::{Ctx, Outcome};
use crate::bundle::fetch::{FetchRequest, fetch};
use crate::recipe::load_model;

#[derive(clap::Args)]
pub struct Fetch {
    #[arg(long)]
    repo: String,
    #[arg(long, default_value = "tiny")]
    model: String,
    #[arg(long)]
    revision: Option<String>,
}

impl Fetch {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let model = load_model(&ctx.root, &self.model)?;
        fetch(&FetchRequest {
            root: &ctx.root,
            repo: &self.repo,
            revision: self.revision.as_deref(),
            model: &model,
        })?;
        Ok(Outcome::Success)
    }
}
