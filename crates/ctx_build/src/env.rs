//! What every worker of a build shares while it executes a plan (the runtime, the toolchain,
//! the memory budget, the hash memo, the cache). Its own module, below `execute` (which runs
//! components) and `step_run` (which runs one step), so neither imports the other for it.

use std::path::Path;
use std::sync::Mutex;

use crate::plan::Versions;
use crate::schedule::MemoryBudget;
use crate::step_cache::StepCache;
use crate::toolchain::Toolchain;
use xtask_base::hashing::HashMemo;
use xtask_base::soc::Soc;
use xtask_base::ui::progress::build::Progress;
use xtask_recipe::recipe::Model;

/// What every worker shares while executing a plan.
pub struct BuildEnv<'a> {
    pub root: &'a Path,
    pub model: &'a Model,
    pub soc: Soc,
    pub toolchain: &'a dyn Toolchain,
    /// The embedded runtime (loaded for every build: ORT checks rewritten graphs).
    pub rt: &'a xtask_runtime::runtime::Runtime,
    pub memo: &'a Mutex<HashMemo>,
    pub progress: &'a Progress,
    /// `--max-memory`: no step starts beyond it (see `schedule`).
    pub budget: &'a MemoryBudget,
    /// The tool versions in every key (and every step's facts).
    pub versions: &'a Versions,
    /// `--cache` / `XTASK_CACHE_DIR`: steps are restored from it and stored in it.
    pub cache: Option<&'a StepCache>,
    /// `--force`: every step runs, and its cache entry is replaced.
    pub force: bool,
}
