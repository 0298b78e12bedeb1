//! `cargo xtask build-ctx --soc 77`: per component, ONNX → DLC (QNN IR backend), QNN
//! CPU-backend parity gated on cosine, then the HTP context binary and its EPContext wrapper.
//! The flags; the work is `xtask_ctx_build::build` (plan, then execute only the dirty steps).

use anyhow::Result;

use super::{Ctx, Outcome, ToolchainKind};
use xtask_ctx_build::{BuildRequest, build};

#[derive(clap::Args)]
pub struct BuildCtx {
    /// Target SoC: an id (77) or a chip name (QCS9075); default: the model's target.
    #[arg(long)]
    soc: Option<String>,
    #[command(flatten)]
    sel: super::ModelArgs,
    /// Components built at once.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Memory the running steps may use together (e.g. 16G, 12000M); a step whose estimate
    /// does not fit waits. Default: MemAvailable of /proc/meminfo when the build starts.
    #[arg(long, value_parser = xtask_ctx_build::schedule::parse_memory_mb)]
    max_memory: Option<f64>,
    /// Run every step even when fresh.
    #[arg(long)]
    force: bool,
    /// Print the plan (steps, inputs, outputs, fresh or why dirty) and run nothing.
    #[arg(long)]
    dry_run: bool,
    /// Which tools run the steps: the embedded QNN 2.47 runtime, or the QAIRT SDK's tools.
    #[arg(long, value_enum, default_value = "embedded")]
    toolchain: ToolchainKind,
    /// Use an installed QAIRT SDK whose version differs from the recipe's `qairt`.
    #[arg(long)]
    allow_sdk_version: bool,
    /// Run nothing; exit 1 unless every step is fresh (CI: gathered artifacts must be accepted).
    #[arg(long, conflicts_with = "force")]
    require_fresh: bool,
    /// With --dry-run: print the plan as JSON (steps, fresh or structured dirty reasons, keys).
    #[arg(long, requires = "dry_run")]
    json: bool,
    /// A build cache folder shared by checkouts (opt-in; may be outside the project): steps
    /// whose key is in it are restored instead of run, and every step run is stored in it.
    /// Default: $XTASK_CACHE_DIR, else no cache.
    #[arg(long, value_name = "DIR")]
    cache: Option<std::path::PathBuf>,
    /// The size the cache is kept under after the build, least recently used entries removed
    /// first (e.g. 50G, 500M). Default: $XTASK_CACHE_MAX_SIZE, else 20G.
    #[arg(long, value_name = "SIZE", value_parser = xtask_ctx_build::step_cache::gc::parse_size)]
    cache_max_size: Option<u64>,
    /// Print each selected step's key (`<component> <step> <key>`) and run nothing (CI keys
    /// its cache on them).
    #[arg(long, conflicts_with_all = ["force", "dry_run", "require_fresh"])]
    print_keys: bool,
}

impl BuildCtx {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let sel = self.sel.select(ctx)?;
        let model = &sel.model;
        let soc = super::target_soc(model, self.soc.as_deref())?;
        let comps = sel.components();
        let req = BuildRequest {
            model,
            soc,
            comps,
            jobs: self.jobs,
            max_memory_mb: self.max_memory,
            force: self.force,
            dry_run: self.dry_run,
            json: self.json,
            require_fresh: self.require_fresh,
            toolchain: self.toolchain,
            allow_sdk_version: self.allow_sdk_version,
            verbose: ctx.verbose,
            cache: open_cache(self.cache.as_deref()),
            cache_max_bytes: xtask_ctx_build::step_cache::max_size(self.cache_max_size)?,
            print_keys: self.print_keys,
        };
        req.validate()?;
        if !self.dry_run && !self.require_fresh && !self.print_keys {
            super::require_files(ctx, model, &req.comps)?;
        }
        if !self.json && !self.print_keys {
            super::lint::warn_before_build(ctx, &self.sel.model, &req.comps);
        }
        build(&ctx.root, &req)
    }
}

/// The build's cache, or none with a warning when it cannot be used (a link where a folder
/// should be, a read-only disk): the cache is an optimisation, the build runs without it.
fn open_cache(flag: Option<&std::path::Path>) -> Option<xtask_ctx_build::step_cache::StepCache> {
    match xtask_ctx_build::step_cache::StepCache::from_flag_or_env(flag) {
        Ok(cache) => cache,
        Err(e) => {
            xtask_base::ui::warnings::warn(format!("building without the build cache: {e:#}"));
            None
        }
    }
}
