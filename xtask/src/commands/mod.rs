//! One module per subcommand; each flag struct is the command's input and has `run`.

pub mod bench;
pub mod bisect;
pub mod build_ctx;
pub mod cache;
pub mod conformance;
pub mod doctor;
pub mod fetch;
pub mod lint;
pub mod lint_fp16;
pub mod merge_reports;
pub mod package;
pub mod parity;
pub mod plan;
pub mod precision;
pub mod release;
pub mod run;
pub mod verify;

use std::path::PathBuf;

use anyhow::{Result, bail};

pub use xtask_base::vocab::{BackendKind, Outcome, ToolchainKind};
pub use xtask_recipe::htp_target::target_soc;
use xtask_recipe::recipe::{Component, Model};
pub use xtask_runtime::runtime::{backend_for, backend_for_component};

pub struct Ctx {
    pub root: PathBuf,
    pub verbose: bool,
}

/// `--json` of `doctor`, `parity`, `run`, `bisect` and `verify` (read by `main` through
/// `ui::json`; the command hands its report over with `ui::json::offer`).
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct JsonFlag {
    /// Print ONE JSON document on stdout (`schema_version`, `command`, `exit_code`, `report`,
    /// `error`); the human lines go to stderr. See docs/output-and-progress.md.
    #[arg(long)]
    pub json: bool,
}

/// `--model` and `--only`, shared by every command that works on a model's components.
#[derive(clap::Args, Debug, Clone)]
pub struct ModelArgs {
    /// The model: a folder under `recipes/`.
    #[arg(long, default_value = "tiny", value_parser = xtask_recipe::recipe::names::parse_model_name)]
    pub model: String,
    /// Only these components (comma-separated); pipeline order is kept.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
}

/// The component `name` of `model` (a positional argument such as `bisect`'s), or an error
/// naming the model's components with a did-you-mean.
pub fn find_component<'m>(model: &'m Model, name: &str) -> Result<&'m Component> {
    let known: Vec<&str> = model.components.iter().map(|c| c.name()).collect();
    match model.components.iter().find(|c| c.name() == name) {
        Some(c) => Ok(c),
        None => Err(xtask_base::bad_input::BadInput(anyhow::anyhow!(
            "unknown component `{name}`{}; model `{}` has: {}",
            xtask_base::ui::suggest::did_you_mean(name, known.iter().copied()),
            model.file.model.name,
            known.join(", ")
        ))
        .into()),
    }
}

/// A model's recipes, loaded and checked, with the components `--only` selected (all when
/// empty), every name checked once here.
pub struct Selection {
    pub model: Model,
    only: Vec<String>,
}

impl ModelArgs {
    pub fn select(&self, ctx: &Ctx) -> Result<Selection> {
        let model = xtask_recipe::recipe::load_model(&ctx.root, &self.model)?;
        select_components(&model, &self.only)?;
        Ok(Selection {
            model,
            only: self.only.clone(),
        })
    }
}

impl Selection {
    pub fn name(&self) -> &str {
        &self.model.file.model.name
    }

    /// The selected components, in pipeline order.
    pub fn components(&self) -> Vec<&Component> {
        self.model
            .components
            .iter()
            .filter(|c| self.only.is_empty() || self.only.iter().any(|o| o == c.name()))
            .collect()
    }
}

/// The components named by `--only` (all when empty), in pipeline order.
pub fn select_components<'m>(model: &'m Model, only: &[String]) -> Result<Vec<&'m Component>> {
    let known: Vec<&str> = model.components.iter().map(|c| c.name()).collect();
    for name in only {
        if !known.contains(&name.as_str()) {
            bail!(
                "unknown component `{name}` in --only{}; model `{}` has: {}",
                xtask_base::ui::suggest::did_you_mean(name, known.iter().copied()),
                model.file.model.name,
                known.join(", ")
            );
        }
    }
    Ok(model
        .components
        .iter()
        .filter(|c| only.is_empty() || only.iter().any(|o| o == c.name()))
        .collect())
}

/// Refuses to start (exit 2) when input files are missing, listing all of them and how to get
/// them, or when a present file does not match its recipe (every component checked, every
/// problem listed), before anything is run or written.
pub fn require_files(ctx: &Ctx, model: &Model, comps: &[&Component]) -> Result<()> {
    require_present(ctx, model, comps)?;
    let problems: Vec<String> = comps
        .iter()
        .filter_map(|c| xtask_recipe::golden::check_component_files(&ctx.root, c).err())
        .map(|e| {
            format!(
                "  {}",
                xtask_base::project::scrub(&ctx.root, &format!("{e:#}"))
            )
        })
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    Err(anyhow::Error::new(xtask_base::bad_input::BadInput(
        anyhow::anyhow!(
            "{} component(s) of model `{}` have files that do not match their recipes (nothing was run):\n{}",
            problems.len(),
            model.file.model.name,
            problems.join("\n")
        ),
    )))
}

fn require_present(ctx: &Ctx, model: &Model, comps: &[&Component]) -> Result<()> {
    let missing: Vec<xtask_recipe::recipe::missing::Missing> = comps
        .iter()
        .flat_map(|c| xtask_recipe::recipe::missing::missing(&ctx.root, c))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = missing.iter().map(|m| format!("  {}", m.line)).collect();
    // Only files that are truly absent need obtaining; a likely typo is the recipe's to fix.
    let obtain = format!(
        "how to obtain them: {}",
        model
            .file
            .model
            .obtain
            .as_deref()
            .unwrap_or("see the model's recipes for where its files come from")
    );
    // A near name is only a guess: the files may simply not be fetched yet.
    let hint = match missing.iter().all(|m| m.typo) {
        true => format!("fix the recipe line(s) above if a name is mistyped; else {obtain}"),
        false => obtain,
    };
    Err(xtask_base::bad_input::BadInput(anyhow::anyhow!(
        "model `{}` is missing {} file(s):\n{}\n{hint}",
        model.file.model.name,
        missing.len(),
        lines.join("\n")
    ))
    .into())
}
