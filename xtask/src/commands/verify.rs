//! `cargo xtask verify DIR`: proves a bundle intact (see `bundle::verify`).

use std::path::PathBuf;

use anyhow::Result;

use super::{Ctx, Outcome};

#[derive(clap::Args)]
pub struct Verify {
    /// The bundle folder (as written by `cargo xtask package`).
    dir: PathBuf,
    /// Require a valid signature (`model.sig`, OpenSSF model signing) by this ECDSA P-256
    /// public key (PEM) over exactly the bundle's files. Without it, a signature present is
    /// checked for form and reported "signed, not verified".
    #[arg(long, value_name = "PUB.pem")]
    key: Option<PathBuf>,
    #[command(flatten)]
    pub json: super::JsonFlag,
}

impl Verify {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let key = self
            .key
            .as_deref()
            .map(xtask_bundle::signature::VerifyingKey::read)
            .transpose()?;
        let verified = xtask_bundle::verify::verify_bundle(&ctx.root, &self.dir, key.as_ref())?;
        let loaded = verified.loaded;
        let unmeasured = xtask_bundle::verify::htp_unmeasured(&self.dir)?;
        let verdict = xtask_bundle::verify::bundle_verdict(&self.dir)?;
        xtask_base::ui::json::offer(&serde_json::json!({
            "bundle": self.dir.display().to_string(),
            "verified": true,
            "verdict": verdict,
            "context_binaries_loaded": loaded,
            "signature": verified.signed,
            "htp_parity_unmeasured": unmeasured,
        }));
        if !unmeasured.is_empty() {
            xtask_base::ui::warning(&format!(
                "HTP parity was never measured on {} of the bundle's binaries (intact, but unproven on the HTP):\n  {}",
                unmeasured.len(),
                unmeasured.join("\n  ")
            ));
        }
        xtask_base::outln!(
            "bundle {} verified: every file matches manifest.json, {loaded} context binaries load on the HTP, the card matches the reports; verdict {}",
            self.dir.display(),
            xtask_base::ui::verdict(verdict.word(), verdict.passed())
        );
        xtask_base::outln!("{}", verified.signed.describe());
        if !verdict.passed() {
            xtask_base::ui::warning(&format!(
                "the bundle is intact but its verdict is {}: it was packaged with --allow-unmeasured, and its card says so at its top (measure it and package again for a PASS)",
                verdict.word()
            ));
        }
        xtask_base::outln!("{}", xtask_bundle::verify::next_step(&self.dir)?);
        Ok(Outcome::Success)
    }
}
