//! `cargo xtask plan [--json]`: the build plan without running anything. `--json` prints it as
//! a CI matrix (`{"include": [...]}`, one entry per component and SoC) for runners that each
//! build one entry (`cargo xtask build-ctx --soc … --only …`) and upload its artifacts.

use anyhow::Result;

use super::{Ctx, Outcome};
use crate::build::plan::artifacts;
use crate::target::soc::parse_soc;

#[derive(clap::Args)]
pub struct Plan {
    #[command(flatten)]
    sel: super::ModelArgs,
    /// SoCs to build for (comma-separated ids or chip names); default: the model's target.
    #[arg(long, value_delimiter = ',')]
    soc: Vec<String>,
    /// Print the CI matrix as JSON.
    #[arg(long)]
    json: bool,
}

impl Plan {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let sel = self.sel.select(ctx)?;
        let model = &sel.model;
        let comps = sel.components();
        let socs = if self.soc.is_empty() {
            vec![model.file.target.soc.to_string()]
        } else {
            self.soc.clone()
        };
        let mut include = Vec::new();
        for soc in &socs {
            let soc = parse_soc(soc)?;
            for comp in &comps {
                let art = artifacts(&self.sel.model, comp.name(), &soc);
                include.push(serde_json::json!({
                    "model": self.sel.model,
                    "component": comp.name(),
                    "soc": soc.id,
                    "build": format!("cargo xtask build-ctx --soc {} --model {} --only {}", soc.id, self.sel.model, comp.name()),
                    "artifacts": [art.dlc, art.bin, art.wrapper, art.record],
                }));
            }
        }
        if self.json {
            crate::outln!("{}", serde_json::json!({ "include": include }));
        } else {
            for e in &include {
                crate::outln!("{}", e["build"].as_str().unwrap_or_default());
            }
        }
        Ok(Outcome::Success)
    }
}
