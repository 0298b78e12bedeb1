//! `cargo xtask verify DIR`: proves a bundle intact (see `bundle::verify`).

use std::path::PathBuf;

use anyhow::Result;

use super::{Ctx, Outcome};

#[derive(clap::Args)]
pub struct Verify {
    /// The bundle folder (as written by `cargo xtask package`).
    dir: PathBuf,
    #[command(flatten)]
    pub json: super::JsonFlag,
}

impl Verify {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let loaded = crate::bundle::verify::verify_bundle(&ctx.root, &self.dir)?;
        crate::ui::json::offer(&serde_json::json!({
            "bundle": self.dir.display().to_string(),
            "verified": true,
            "context_binaries_loaded": loaded,
        }));
        crate::outln!(
            "bundle {} verified: every file matches manifest.json, {loaded} context binaries load on the HTP, the card matches the reports",
            self.dir.display()
        );
        crate::outln!("{}", crate::bundle::verify::next_step(&self.dir)?);
        Ok(Outcome::Success)
    }
}
