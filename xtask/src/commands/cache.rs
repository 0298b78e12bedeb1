//! `cargo xtask cache ls|gc`: the build cache's entries (sizes, last use) and its size
//! control (least recently used first). The work is `crate::ctx_build::step_cache`.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::{Ctx, Outcome};
use crate::ctx_build::step_cache::gc::{human_bytes, ls_table, parse_size};
use crate::ctx_build::step_cache::{CACHE_ENV, StepCache};

#[derive(clap::Args)]
pub struct Cache {
    #[command(subcommand)]
    which: Which,
}

#[derive(clap::Args)]
struct Where {
    /// The cache folder (default: $XTASK_CACHE_DIR).
    #[arg(long, value_name = "DIR")]
    cache: Option<PathBuf>,
}

#[derive(clap::Subcommand)]
enum Which {
    /// List entries: key, size, last use, step and artifact; leftovers of interrupted writers.
    #[command(after_help = "Examples:\n  cargo xtask cache ls --cache ~/.cache/xtask-steps")]
    Ls(Where),
    /// Remove least recently used entries until the cache fits (and old leftovers).
    #[command(
        after_help = "Examples:\n  cargo xtask cache gc --cache ~/.cache/xtask-steps --max-size 50G"
    )]
    Gc {
        #[command(flatten)]
        at: Where,
        /// The size to keep the cache under (e.g. 50G, 500M).
        #[arg(long, value_parser = parse_size)]
        max_size: u64,
    },
}

fn open(at: &Where) -> Result<StepCache> {
    StepCache::from_flag_or_env(at.cache.as_deref())?
        .with_context(|| format!("no build cache: pass --cache DIR or set {CACHE_ENV}"))
}

impl Cache {
    pub fn run(self, _ctx: &Ctx) -> Result<Outcome> {
        match self.which {
            Which::Ls(at) => {
                let cache = open(&at)?;
                crate::outln!("{}", ls_table(&cache, &cache.list()?).trim_end());
            }
            Which::Gc { at, max_size } => {
                let cache = open(&at)?;
                let (removed, freed, kept) = cache.gc(max_size)?;
                crate::outln!(
                    "cache gc: removed {removed} entr{} ({}), {} kept (limit {})",
                    if removed == 1 { "y" } else { "ies" },
                    human_bytes(freed),
                    human_bytes(kept),
                    human_bytes(max_size)
                );
            }
        }
        Ok(Outcome::Success)
    }
}
