//! `cargo xtask cache ls|gc|verify|rm`: the build cache's entries (sizes, last use), its size
//! control (least recently used first), its check (every stored byte re-hashed) and removal
//! by key or model. They need only the cache (`--cache DIR` or `XTASK_CACHE_DIR`), never a
//! project checkout: a cache is shared by many. The work is `xtask_ctx_build::step_cache`.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use super::Outcome;
use xtask_ctx_build::step_cache::gc::{human_bytes, ls_table, parse_size};
use xtask_ctx_build::step_cache::{CACHE_ENV, StepCache, short};

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
    /// List entries: key, size, last use, step, the model that stored it and its first file.
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
    /// Re-hash every stored file; each bad entry is named by key and file (exit 1 if any).
    #[command(after_help = "Examples:\n  cargo xtask cache verify --cache ~/.cache/xtask-steps")]
    Verify(Where),
    /// Remove one entry by key (or a unique prefix of 8+ digits), or every entry a model stored.
    #[command(
        after_help = "Examples:\n  cargo xtask cache rm --cache ~/.cache/xtask-steps 1a2b3c4d5e6f\n  cargo xtask cache rm --cache ~/.cache/xtask-steps --model tiny"
    )]
    Rm {
        #[command(flatten)]
        at: Where,
        /// The entry's key, as `cache ls` shows it.
        #[arg(required_unless_present = "model", conflicts_with = "model")]
        key: Option<String>,
        /// Every entry a build of this model stored.
        #[arg(long)]
        model: Option<String>,
    },
}

fn open(at: &Where) -> Result<StepCache> {
    StepCache::from_flag_or_env(at.cache.as_deref())?
        .with_context(|| format!("no build cache: pass --cache DIR or set {CACHE_ENV}"))
}

impl Cache {
    /// Runs anywhere: nothing here reads a project.
    pub fn run(self) -> Result<Outcome> {
        match self.which {
            Which::Ls(at) => {
                let cache = open(&at)?;
                xtask_base::outln!("{}", ls_table(&cache, &cache.survey()?).trim_end());
            }
            Which::Gc { at, max_size } => {
                let cache = open(&at)?;
                let (removed, freed, kept) = cache.gc(max_size)?;
                xtask_base::outln!(
                    "cache gc: removed {removed} entr{} ({}), {} kept (limit {})",
                    if removed == 1 { "y" } else { "ies" },
                    human_bytes(freed),
                    human_bytes(kept),
                    human_bytes(max_size)
                );
            }
            Which::Verify(at) => {
                let cache = open(&at)?;
                let (checked, bad) = cache.verify()?;
                for b in &bad {
                    xtask_base::outln!("bad entry {b}");
                }
                let keys: std::collections::BTreeSet<&str> =
                    bad.iter().map(|b| b.key.as_str()).collect();
                xtask_base::outln!(
                    "cache verify: {checked} entr{} checked, {} bad",
                    if checked == 1 { "y" } else { "ies" },
                    keys.len()
                );
                if !bad.is_empty() {
                    return Ok(Outcome::GateFailed);
                }
            }
            Which::Rm { at, key, model } => {
                let cache = open(&at)?;
                let keys = match (key, model) {
                    (Some(k), _) => vec![cache.resolve(&k)?],
                    (None, Some(m)) => cache.keys_of_model(&m)?,
                    (None, None) => bail!("give a KEY or --model M"),
                };
                let freed = cache.remove(&keys)?;
                for k in &keys {
                    xtask_base::outln!("removed {}", short(k));
                }
                xtask_base::outln!(
                    "cache rm: {} entr{} removed, {} freed",
                    keys.len(),
                    if keys.len() == 1 { "y" } else { "ies" },
                    human_bytes(freed)
                );
            }
        }
        Ok(Outcome::Success)
    }
}
