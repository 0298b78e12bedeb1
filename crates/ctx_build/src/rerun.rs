//! The rerun rule of a build, one home for the three that apply it (the build, its dry run and
//! the up-front resource check): a dirty step runs; `--force` runs every step; once a step of a
//! component ran, every later step of it runs too.

use crate::fingerprint::{DirtyReason, DirtyReasons, Freshness};
use crate::plan::ComponentPlan;

/// The plan as the build will run it: a fresh step after one that runs re-runs too (the
/// build's `upstream_ran`), and `--force` runs every step. Without a cache (a step restored
/// from one does not make the next re-run), the dry run then names exactly the steps the build
/// runs, also after an interrupted build left a component half done.
pub fn as_the_build_runs(plans: &mut [ComponentPlan], force: bool) {
    for plan in plans {
        for (i, reasons) in steps_to_run(plan, force) {
            plan.steps[i].freshness = Freshness::Dirty(reasons);
        }
    }
}

/// The steps of `plan` a build runs (by index) and why, in order (`run_reasons` applied along
/// the component): what the dry run marks and what the up-front resource check counts.
pub fn steps_to_run(plan: &ComponentPlan, force: bool) -> Vec<(usize, DirtyReasons)> {
    let mut upstream_ran = false;
    let mut out = Vec::new();
    for (i, step) in plan.steps.iter().enumerate() {
        if let Some(reasons) = run_reasons(&step.freshness, force, upstream_ran) {
            upstream_ran = true;
            out.push((i, reasons));
        }
    }
    out
}

/// The rerun rule: why a step runs, or None when it is skipped as fresh. A dirty step runs;
/// `--force` runs everything; once a step of the component ran, every later step runs too.
pub fn run_reasons(freshness: &Freshness, force: bool, upstream_ran: bool) -> Option<DirtyReasons> {
    match freshness {
        Freshness::Dirty(reasons) => Some(reasons.clone()),
        Freshness::Fresh if upstream_ran => Some(vec![DirtyReason::EarlierStepRan].into()),
        Freshness::Fresh if force => Some(vec![DirtyReason::Forced].into()),
        Freshness::Fresh => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rerun_rule() {
        let fresh = Freshness::Fresh;
        let dirty = Freshness::dirty(DirtyReason::NeverBuilt);
        assert_eq!(run_reasons(&fresh, false, false), None);
        assert_eq!(
            run_reasons(&fresh, false, true),
            Some(vec![DirtyReason::EarlierStepRan].into())
        );
        assert_eq!(
            run_reasons(&fresh, true, false),
            Some(vec![DirtyReason::Forced].into())
        );
        assert_eq!(
            run_reasons(&fresh, true, true),
            Some(vec![DirtyReason::EarlierStepRan].into())
        );
        for (force, upstream) in [(false, false), (true, false), (false, true), (true, true)] {
            assert_eq!(
                run_reasons(&dirty, force, upstream),
                Some(vec![DirtyReason::NeverBuilt].into()),
                "a dirty step runs for its own reasons"
            );
        }
    }
}
