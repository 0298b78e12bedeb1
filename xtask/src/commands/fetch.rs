//! `cargo xtask fetch [--repo OWNER/NAME] [--model M] [--only C,..] [--inputs-only] [--unverified]`: downloads a
//! published bundle (or only some components' files) and lays it out for the model's recipes
//! (see `bundle::fetch`). The repository comes from `--repo` or the recipe's
//! `[model] source_repo`. `--cache-key` prints the content key of the selection (for a CI
//! cache) after downloading only the manifest.

use anyhow::{Result, bail};

use super::{Ctx, Outcome};
use xtask_bundle::fetch::{cache_key, fetch};
use xtask_bundle::fetch_request::FetchRequest;

#[derive(clap::Args)]
pub struct Fetch {
    /// The Hugging Face repository; default: the recipe's `[model] source_repo`.
    #[arg(long)]
    repo: Option<String>,
    #[command(flatten)]
    sel: super::ModelArgs,
    /// Branch, tag or commit; default: the recipe's `[model] source_revision`, else `main`.
    #[arg(long)]
    revision: Option<String>,
    /// Only the build inputs (ONNX + external data, golden tensors, trace), no `ctx/` files.
    #[arg(long)]
    inputs_only: bool,
    /// Print the content key of the selected files (needs `--only` or `--inputs-only`) and lay
    /// nothing out.
    #[arg(long)]
    cache_key: bool,
    /// Lay out a download that has no `manifest.json` (nothing can check it); every report
    /// and card made from those files then says they are unverified.
    #[arg(long, conflicts_with = "key")]
    unverified: bool,
    /// Require a valid signature (`model.sig`, OpenSSF model signing) by this ECDSA P-256
    /// public key (PEM) over exactly the bundle's files before anything is laid out.
    #[arg(long, value_name = "PUB.pem")]
    key: Option<std::path::PathBuf>,
}

impl Fetch {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let sel = self.sel.select(ctx)?;
        let model = &sel.model;
        let section = &model.file.model;
        let Some(repo) = self.repo.as_deref().or(section.source_repo.as_deref()) else {
            bail!(
                "no repository to fetch model `{}` from: pass `--repo OWNER/NAME` (in CI: the HF_REPO variable) or set `source_repo = \"OWNER/NAME\"` under [model] in recipes/{}/model.toml",
                sel.name(),
                sel.name()
            );
        };
        let revision = self
            .revision
            .as_deref()
            .or(section.source_revision.as_deref());
        xtask_recipe::recipe::hub_names::validate_repo_id(repo)?;
        if let Some(r) = revision {
            xtask_recipe::recipe::hub_names::validate_revision(r)?;
        }
        let key = self
            .key
            .as_deref()
            .map(xtask_bundle::signature::VerifyingKey::read)
            .transpose()?;
        let req = FetchRequest {
            root: &ctx.root,
            repo,
            revision,
            model,
            only: (!self.sel.only.is_empty()).then(|| sel.components()),
            inputs_only: self.inputs_only,
            unverified: self.unverified,
            key: key.as_ref(),
        };
        if self.cache_key {
            xtask_base::outln!("{}", cache_key(&req)?);
            return Ok(Outcome::Success);
        }
        fetch(&req)?;
        refuse_missing_inputs(ctx, &sel, repo)?;
        Ok(Outcome::Success)
    }
}

/// What the recipes need and the bundle did not hold: named, with how to provide it.
fn refuse_missing_inputs(ctx: &Ctx, sel: &super::Selection, repo: &str) -> Result<()> {
    let missing: Vec<String> = sel
        .components()
        .iter()
        .flat_map(|c| {
            xtask_recipe::recipe::missing_files(&ctx.root, c)
                .into_iter()
                .map(move |p| format!("  {} ({})", p.display(), c.name()))
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    bail!(
        "{repo} does not provide {} input file(s) of model `{}`:\n{}\nhow to provide them: {}",
        missing.len(),
        sel.name(),
        missing.join("\n"),
        sel.model
            .file
            .model
            .obtain
            .as_deref()
            .unwrap_or("publish a bundle that holds them, or see the model's recipes")
    );
}
