//! `cargo xtask plan [--json]`: the build plan without running anything. `--json` prints it as
//! a CI matrix (`{"include": [...]}`, one entry per component and SoC) for runners that each
//! fetch one entry's inputs, build it (`cargo xtask build-ctx --soc … --only …`), run its
//! parity and upload its artifacts. Each entry carries its input bytes, ESTIMATES of its peak
//! memory, disk and duration (with their basis, see `sizing`), the runner label they need and
//! the job's timeout; an entry that fits no runner carries a `blocker` message instead.

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::{Ctx, Outcome};
use xtask_base::soc::parse_soc;
use xtask_bundle::fetch_patterns::{component_patterns, glob_match};
use xtask_ctx_build::plan::artifacts;
use xtask_recipe::recipe::{Component, Model};

#[path = "plan_sizing/mod.rs"]
mod sizing;

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
    /// A published bundle's `manifest.json`: the byte sizes of inputs not on disk here.
    #[arg(long)]
    manifest: Option<std::path::PathBuf>,
    /// The label of a larger runner for entries the standard runner cannot hold (CI:
    /// `vars.LARGE_RUNNER`; empty means none).
    #[arg(long, default_value = "")]
    large_runner: String,
    /// Memory of the larger runner, GB (default: GitHub's 16-core larger Linux runner).
    #[arg(long, default_value_t = 64.0)]
    large_runner_memory_gb: f64,
    /// Free disk of the larger runner, GB.
    #[arg(long, default_value_t = 600.0)]
    large_runner_disk_gb: f64,
    /// The chain job instead (the whole chain on the HTP, after every component's build):
    /// its runner, timeout and estimate, from `[chain_estimate]` in model.toml (measured by
    /// `bench real-size`) or the components' measured figures.
    #[arg(long)]
    chain: bool,
}

/// Bytes of a component's inputs and where the figure comes from.
struct InputBytes {
    /// ONNX graph + external data.
    weights: u64,
    /// Weights + golden tensors (+ the trace for the vision-owning component).
    total: u64,
    source: &'static str,
}

impl Plan {
    /// The matrix: every selected component on every SoC asked for, sized and given a runner
    /// (`entry`), printed as JSON for CI or as one build command per line.
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let sel = self.sel.select(ctx)?;
        check_estimates(&sel.model, sel.name())?;
        let manifest = match &self.manifest {
            Some(p) => Some(xtask_bundle::manifest::read_manifest(
                p.parent().context("--manifest needs a file path")?,
            )?),
            None => None,
        };
        let runners = self.runners();
        let comps = sel.components();
        let socs = if self.soc.is_empty() {
            vec![sel.model.file.target.soc.to_string()]
        } else {
            self.soc.clone()
        };
        if self.chain {
            return self.chain_plan(ctx, &sel.model, manifest.as_ref(), &runners);
        }
        let mut include = Vec::new();
        for soc in &socs {
            let soc = parse_soc(soc)?;
            for comp in &comps {
                let inputs = EntryInputs {
                    root: &ctx.root,
                    model: &sel.model,
                    manifest: manifest.as_ref(),
                    runners: &runners,
                };
                include.push(inputs.entry(comp, &soc)?);
            }
        }
        if self.json {
            let matrix = serde_json::json!({ "include": include });
            xtask_base::outln!("{matrix}");
        } else {
            print_commands(&include);
        }
        Ok(Outcome::Success)
    }

    /// `--chain`: the chain job's runner, timeout and estimate (JSON with `--json`).
    fn chain_plan(
        &self,
        ctx: &Ctx,
        model: &Model,
        manifest: Option<&xtask_bundle::manifest::Manifest>,
        runners: &sizing::Runners,
    ) -> Result<Outcome> {
        let host = model.file.host.as_ref();
        let steps = host.map_or(1, |h| h.timesteps.len() as u32);
        let mut parts = Vec::new();
        for comp in &model.components {
            let calls = match host {
                Some(h) if h.action_step == comp.name() => steps,
                _ => 1,
            };
            let bytes = input_bytes(&ctx.root, model, comp, manifest)?.map(|b| b.total);
            parts.push((
                model.file.estimate.get(comp.name()),
                comp.precision(),
                calls,
                bytes,
            ));
        }
        let est = sizing::chain_estimate(model.file.chain_estimate.as_ref(), &parts);
        let choice = runners.choose(&est);
        let plan = ChainPlan {
            model: model.file.model.name.clone(),
            run: format!(
                "cargo xtask run --backend htp --iters 1 --warmup 0 --model {}",
                model.file.model.name
            ),
            runner: choice.label,
            timeout_minutes: est.timeout_minutes(),
            estimate: est.shown(),
            blocker: choice.blocker.unwrap_or_default(),
        };
        if self.json {
            xtask_base::outln!("{}", serde_json::to_string(&plan)?);
        } else {
            xtask_base::outln!(
                "{}   # the chain job: runner {}, timeout {} min{}",
                plan.run,
                plan.runner,
                plan.timeout_minutes,
                match plan.blocker.as_str() {
                    "" => String::new(),
                    b => format!(" — BLOCKED: {b}"),
                }
            );
        }
        Ok(Outcome::Success)
    }

    /// The standard runner, and the larger one when `--large-runner` names it.
    fn runners(&self) -> sizing::Runners {
        sizing::Runners {
            large: (!self.large_runner.trim().is_empty()).then(|| sizing::Runner {
                label: self.large_runner.trim().to_string(),
                memory_gb: self.large_runner_memory_gb,
                disk_gb: self.large_runner_disk_gb,
            }),
        }
    }
}

/// Every `[estimate.<component>]` of model.toml names a component of the model (a typo would
/// leave a component without its measured figures).
fn check_estimates(model: &Model, name: &str) -> Result<()> {
    for comp in model.file.estimate.keys() {
        if !model.components.iter().any(|c| c.name() == comp) {
            bail!("[estimate.{comp}] in model.toml: model `{name}` has no component `{comp}`");
        }
    }
    Ok(())
}

/// What sizing an entry needs besides the component and the SoC.
struct EntryInputs<'a> {
    root: &'a Path,
    model: &'a Model,
    manifest: Option<&'a xtask_bundle::manifest::Manifest>,
    runners: &'a sizing::Runners,
}

impl EntryInputs<'_> {
    /// One entry: the build command and its artifacts, the input bytes and their source, the
    /// estimates, and the runner that holds them (or the blocker).
    fn entry(&self, comp: &Component, soc: &xtask_base::soc::Soc) -> Result<PlanEntry> {
        let (model, name) = (self.model, comp.name());
        let model_name = &model.file.model.name;
        let art = artifacts(model_name, name, soc);
        let on_disk = xtask_recipe::recipe::missing_files(self.root, comp).is_empty();
        let bytes = input_bytes(self.root, model, comp, self.manifest)?;
        let est = sizing::estimate(
            bytes.as_ref().map(|b| (b.weights, b.total)),
            model.file.estimate.get(name),
            comp.file.context.optimization_level,
            comp.precision(),
        );
        let choice = self.runners.choose(&est);
        Ok(PlanEntry {
            model: model_name.to_string(),
            component: name.to_string(),
            soc: soc.id,
            build: format!(
                "cargo xtask build-ctx --soc {} --model {model_name} --only {name}",
                soc.id
            ),
            artifacts: [art.dlc, art.bin, art.wrapper, art.record],
            needs_fetch: !on_disk,
            input_paths: input_paths(model, comp).join("\n"),
            input_bytes: bytes.as_ref().map(|b| b.total),
            input_bytes_source: bytes
                .as_ref()
                .map_or("unknown (not on disk, no --manifest)", |b| b.source)
                .to_string(),
            estimate: est.shown(),
            runner: choice.label,
            timeout_minutes: est.timeout_minutes(),
            blocker: choice.blocker.unwrap_or_default(),
        })
    }
}

/// Without `--json`: each entry's build command with its runner, timeout and blocker.
fn print_commands(include: &[PlanEntry]) {
    for e in include {
        xtask_base::outln!(
            "{}   # runner {}, timeout {} min{}",
            e.build,
            e.runner,
            e.timeout_minutes,
            match e.blocker.as_str() {
                "" => String::new(),
                b => format!(" — BLOCKED: {b}"),
            }
        );
    }
}

/// One entry of the CI matrix (`plan --json`'s `include`): the regenerate workflow reads these
/// fields by name.
#[derive(Debug, Clone, serde::Serialize)]
struct PlanEntry {
    model: String,
    component: String,
    soc: u32,
    build: String,
    artifacts: [std::path::PathBuf; 4],
    needs_fetch: bool,
    input_paths: String,
    /// A whole number of bytes, or `unknown`.
    #[serde(serialize_with = "bytes_or_unknown")]
    input_bytes: Option<u64>,
    input_bytes_source: String,
    estimate: sizing::ShownEstimate,
    runner: String,
    timeout_minutes: u32,
    blocker: String,
}

/// The chain job (`plan --chain --json`): the workflow's `chain` job reads these fields.
#[derive(Debug, Clone, serde::Serialize)]
struct ChainPlan {
    model: String,
    run: String,
    estimate: sizing::ShownEstimate,
    runner: String,
    timeout_minutes: u32,
    blocker: String,
}

/// `input_bytes` as the workflow reads it: an integer (not `6051000000.0`), or the word
/// `unknown`.
fn bytes_or_unknown<S: serde::Serializer>(bytes: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    match bytes {
        Some(n) => s.serialize_u64(*n),
        None => s.serialize_str("unknown"),
    }
}

/// The input bytes: from the files on disk when all are there, else from the published
/// manifest's entries for the component, else unknown.
fn input_bytes(
    root: &Path,
    model: &Model,
    comp: &Component,
    manifest: Option<&xtask_bundle::manifest::Manifest>,
) -> Result<Option<InputBytes>> {
    let onnx = &comp.file.component.onnx;
    if xtask_recipe::recipe::missing_files(root, comp).is_empty() {
        let size = |p: &Path| std::fs::metadata(root.join(p)).map_or(0, |m| m.len());
        let mut weights = size(onnx);
        for data in xtask_ctx_build::plan::external_data(root, onnx)? {
            weights += size(&data);
        }
        let mut total = weights + size(&comp.file.golden.file);
        if let Some(host) = model.file.host.as_ref().filter(|h| h.vision == comp.name()) {
            total += size(&host.trace);
        }
        return Ok(Some(InputBytes {
            weights,
            total,
            source: "files on disk",
        }));
    }
    let Some(manifest) = manifest else {
        return Ok(None);
    };
    let pats = component_patterns(model, comp, true);
    let (mut weights, mut total, mut any) = (0, 0, false);
    for f in &manifest.files {
        if pats.iter().any(|p| glob_match(p, &f.path)) {
            any = true;
            total += f.bytes;
            if f.path.starts_with("onnx/") {
                weights += f.bytes;
            }
        }
    }
    Ok(any.then_some(InputBytes {
        weights,
        total,
        source: "published manifest.json",
    }))
}

/// Where the component's inputs lie once fetched (the CI cache's paths).
fn input_paths(model: &Model, comp: &Component) -> Vec<String> {
    let onnx = &comp.file.component.onnx;
    let dir = onnx.parent().unwrap_or(Path::new(""));
    let mut paths = vec![if dir.file_name().is_some_and(|d| d == comp.name()) {
        format!("{}/", dir.display())
    } else {
        format!("{}/{}*", dir.display(), comp.name())
    }];
    paths.push(comp.file.golden.file.display().to_string());
    if let Some(host) = model.file.host.as_ref().filter(|h| h.vision == comp.name()) {
        let tdir = host.trace.parent().unwrap_or(Path::new(""));
        paths.push(format!("{}/trace*", tdir.display()));
    }
    paths
}
