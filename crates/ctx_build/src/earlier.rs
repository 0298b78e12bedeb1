//! The components a `build-ctx --only` run leaves alone, as their records last saw them: the
//! run's report keeps a row for every built component of the model instead of replacing a
//! whole build's report with the few it touched.

use std::path::Path;

use crate::fingerprint::ComponentRecord;
use crate::plan::{artifacts, record_names};
use crate::report::{ComponentBuild, StepOutcome};
use xtask_base::soc::Soc;
use xtask_recipe::recipe::{Component, Model};

/// Every component of `model` outside `selected` that has a readable record with at least
/// one step for this soc, each step marked `Earlier` (not checked for freshness here).
pub fn earlier_builds(
    root: &Path,
    model: &Model,
    selected: &[&Component],
    soc: &Soc,
) -> Vec<ComponentBuild> {
    let name = &model.file.model.name;
    model
        .components
        .iter()
        .filter(|c| !selected.iter().any(|s| s.name() == c.name()))
        .filter_map(|c| {
            let record_path = artifacts(name, c.name(), soc).record;
            let record = ComponentRecord::load(&root.join(&record_path));
            let why = format!(
                "not in this run (--only): its last build, from {}; not checked for freshness",
                record_path.display()
            );
            let steps: Vec<StepOutcome> = record_names(c, soc)
                .iter()
                .filter_map(|(kind, key)| {
                    let step = record.steps.get(key)?;
                    Some(StepOutcome::earlier(kind.label(), step, root, why.clone()))
                })
                .collect();
            (!steps.is_empty()).then(|| ComponentBuild {
                component: c.name().to_string(),
                pass: true,
                steps,
                cache_refused: vec![],
            })
        })
        .collect()
}
