//! `cargo xtask package --model M --soc 77 --out DIR`: the Hugging Face bundle of a built
//! model (see `bundle::package`).

use std::path::PathBuf;

use anyhow::Result;

use super::{Ctx, Outcome};
use xtask_bundle::package::package;
use xtask_bundle::package_request::PackageRequest;

#[derive(clap::Args)]
pub struct Package {
    #[command(flatten)]
    sel: super::ModelArgs,
    /// The SoC whose context binaries go into the bundle (a name or id of the SoC table;
    /// default: the recipe's target).
    #[arg(long)]
    soc: Option<String>,
    /// The bundle folder to create (must not exist, or be empty).
    #[arg(long)]
    out: PathBuf,
    /// Package artifacts that are stale against their recipe or inputs, and say so in the card.
    #[arg(long)]
    allow_stale: bool,
    /// Package binaries whose HTP parity was never measured (or measured on other binaries):
    /// warned on stderr and said in the card. Without it such a package is refused.
    #[arg(long)]
    allow_unmeasured: bool,
    /// Sign the bundle with this ECDSA P-256 private key (PEM): `model.sig` at its root, in the
    /// OpenSSF model-signing format (`model_signing` 1.1.x, key method).
    #[arg(long, value_name = "KEY.pem")]
    sign_key: Option<PathBuf>,
}

impl Package {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let sel = self.sel.select(ctx)?;
        // A key that does not load is refused before minutes of hashing.
        let sign_key = self
            .sign_key
            .as_deref()
            .map(xtask_bundle::signature::SigningKey::read)
            .transpose()?;
        xtask_recipe::recipe::placeholder::refuse_placeholder_repo(&ctx.root, sel.name())?;
        let model = &sel.model;
        let soc = super::target_soc(model, self.soc.as_deref())?;
        let comps = sel.components();
        super::require_files(ctx, model, &comps)?;
        let manifest = package(&PackageRequest {
            root: &ctx.root,
            model,
            comps: &comps,
            soc,
            out: std::path::absolute(&self.out)?,
            allow_stale: self.allow_stale,
            allow_unmeasured: self.allow_unmeasured,
            sign_key,
        })?;
        let total: u64 = manifest.files.iter().map(|f| f.bytes).sum();
        let signed = match &self.sign_key {
            Some(key) => format!(
                ", signed (model.sig); verify it with `cargo xtask verify {} --key PUBLIC.pem` (the public half of {})",
                self.out.display(),
                key.display()
            ),
            None => format!(
                "; verify it with `cargo xtask verify {}`",
                self.out.display()
            ),
        };
        xtask_base::outln!(
            "bundle {}: {} files, {:.1} MB{signed}",
            self.out.display(),
            manifest.files.len(),
            total as f64 / 1e6,
        );
        Ok(Outcome::Success)
    }
}
