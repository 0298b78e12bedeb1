//! Executing a plan: components on `--jobs` workers under the tree's build lock, each
//! component's steps in order; a dirty step is restored from the build cache when its key is
//! there, else run (`step_run`): its outputs staged, hashed and moved into place before its
//! record entry is written (last).

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::Mutex;

use anyhow::{Result, bail};

pub use crate::env::BuildEnv;
use crate::fingerprint::ComponentRecord;
use crate::plan::ComponentPlan;
use crate::report::ComponentBuild;
use crate::schedule;
use xtask_recipe::recipe::Component;

/// Weight-sharing groups (several graphs in one context) are not built: the QNN 2.47 plugin
/// generates such a context (`ep.share_ep_contexts`), but the x86_64 HTP emulator refuses to
/// load it (`QNN_COMMON_ERROR_NOT_SUPPORTED`), so its HTP parity could never be proven here.
/// A recipe asking for one gets this explanation instead of a silently unshared build.
pub fn refuse_weight_sharing_groups(comps: &[&Component]) -> Result<()> {
    let grouped: Vec<String> = comps
        .iter()
        .filter_map(|c| {
            c.file
                .context
                .weight_sharing_group
                .as_ref()
                .map(|g| format!("{} (group `{g}`, {})", c.name(), c.recipe_path.display()))
        })
        .collect();
    if grouped.is_empty() {
        return Ok(());
    }
    bail!(
        "weight-sharing groups are not supported by the embedded toolchain: {}\n\
         QNN 2.47 through onnxruntime-qnn 2.3.0 writes a shared multi-graph context \
         (ep.share_ep_contexts=1), but its emulated HTP refuses to load it (\"Failed to create \
         context from binary ... QNN_COMMON_ERROR_NOT_SUPPORTED\"), with or without \
         ep.share_ep_contexts / enable_htp_weight_sharing, so its parity cannot be checked. \
         Remove `weight_sharing_group` to build one context per component.",
        grouped.join(", ")
    )
}

/// Staging folders left by an interrupted build (the lock is held, so none is in use).
pub fn remove_stale_staging(dir: &Path) -> Result<()> {
    for left in xtask_base::atomic::remove_leftovers(dir, ".staging-")? {
        xtask_base::errln!("removed {left}, left behind by an interrupted build");
    }
    Ok(())
}

/// Takes the tree's build lock; a second build waits, saying why.
pub fn lock_build_dir(dir: &Path) -> Result<std::fs::File> {
    xtask_base::atomic::lock_file(&dir.join(".build.lock"), "build-ctx")
}

/// Runs the plans on `jobs` workers: one worker runs them in the plans' (pipeline) order,
/// several start the longest component first (where the order shortens the build); each
/// component's steps run in order, failures stop only that component. Results come back in
/// the plans' order.
pub fn execute_plans(
    env: &BuildEnv<'_>,
    comps: &[&Component],
    plans: &[ComponentPlan],
    force: bool,
    jobs: usize,
    verbose: bool,
) -> Vec<ComponentBuild> {
    let lengths: Vec<(Option<f64>, f64)> = plans
        .iter()
        .map(|p| {
            let record = ComponentRecord::load(&env.root.join(&p.artifacts.record));
            (
                schedule::last_seconds(&record, p),
                schedule::onnx_mb(env.root, p),
            )
        })
        .collect();
    let order = if jobs > 1 {
        schedule::longest_first(&lengths)
    } else {
        (0..plans.len()).collect()
    };
    let queue = Mutex::new(order.into_iter().collect::<VecDeque<_>>());
    let results = Mutex::new(BTreeMap::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(plans.len()).max(1) {
            scope.spawn(|| {
                loop {
                    // Its own statement: in a `while let` scrutinee the guard would live
                    // through the body and serialise the workers (it did: `--jobs 2` ran
                    // one component at a time until the full-width bench showed it).
                    let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
                    let Some(i) = next else { break };
                    let onnx_mb = lengths[i].1;
                    let built = super::component_run::build_component(
                        env, comps[i], &plans[i], onnx_mb, force, verbose,
                    );
                    results
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(i, built);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_values()
        .collect()
}
