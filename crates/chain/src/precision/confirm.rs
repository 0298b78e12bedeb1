//! A `--backend qdq` proposal confirmed on the HTP before it is proposed: the QDQ simulation
//! runs fp16 components in float and leaves the HTP's own fp16 error out, so a configuration
//! within the budget there can be over it on the HTP (tiny: five components at w8a16, 4.575e-2
//! on QDQ, 6.564e-2 on the HTP).
//!
//! One HTP chain of exactly the proposal. When it is over the limit, the search backs off
//! greedily *on the HTP*: it undoes one kept change at a time, the one that saves the fewest
//! bytes per unit of error it added alone (on the search's backend; a change that added no
//! error is undone last, ties go to the last one kept), and runs the HTP chain again, until a
//! configuration is within the limit or every change is undone (the float bundle). With
//! `--budget-from-float` the limit is the HTP float chain's own error + budget, so that chain
//! is measured first.

use std::collections::BTreeMap;

use anyhow::Result;

use super::outcome::{
    Assignment, BudgetMode, ConfirmRun, Confirmation, Measure, Measured, Outcome, Plan, all_fp16,
    with, within,
};
use xtask_base::vocab::Precision;

/// Confirms `proposal` on the HTP, backing off over `kept` (in the order kept) when it is over
/// the limit; records every run in `out.confirmation` as it lands.
/// Returns the configuration confirmed.
pub(crate) fn confirm_on_htp(
    plan: &Plan,
    m: &mut dyn Measure,
    proposal: &Assignment,
    kept: &[(String, Precision)],
    alone: &BTreeMap<(String, Precision), Measured>,
    out: &mut Outcome,
    on_measured: &mut dyn FnMut(&Outcome),
) -> Result<Option<Assignment>> {
    let baseline = all_fp16(&plan.components);
    let proposed_search_max_abs = search_figure(&out.tried, proposal).unwrap_or(f64::NAN);
    let base = out.tried.first().cloned();
    out.confirmation = Some(Confirmation {
        proposed: proposal.clone(),
        proposed_search_max_abs,
        htp_float: None,
        limit: plan.budget,
        runs: Vec::new(),
        confirmed: None,
    });
    let mut htp_float = None;
    if plan.mode == BudgetMode::FromFloat {
        let f = m.measure_on_htp(&baseline, "HTP float chain (the limit's base)")?;
        if let Some(c) = out.confirmation.as_mut() {
            c.limit = plan.mode.limit(plan.budget, f.actions_max_abs);
            c.htp_float = Some(f.clone());
        }
        htp_float = Some(f);
        on_measured(out);
    }
    let limit = out.confirmation.as_ref().map_or(plan.budget, |c| c.limit);
    let mut current = proposal.clone();
    let mut remaining: Vec<(String, Precision)> = kept.to_vec();
    let mut undone: Option<String> = None;
    loop {
        let mut got = match (&htp_float, current == baseline) {
            (Some(f), true) => f.clone(),
            _ => {
                let why = match &undone {
                    None => "HTP confirmation of the proposal".to_string(),
                    Some(u) => format!("HTP back-off: - {u}"),
                };
                m.measure_on_htp(&current, &why)?
            }
        };
        got.within_budget = got.ok() && within(got.actions_max_abs, limit);
        let pass = got.within_budget;
        let run = ConfirmRun {
            measured: got,
            undone: undone.take(),
            search_backend_max_abs: search_figure(&out.tried, &current),
        };
        record(out, run, &current, current == baseline);
        on_measured(out);
        if pass || current == baseline {
            break;
        }
        let Some(i) = to_undo(&remaining, alone, base.as_ref()) else {
            // Every kept change undone and still over: the float bundle is the last one left.
            current = baseline.clone();
            undone = Some("every change kept".into());
            continue;
        };
        let (c, p) = remaining.remove(i);
        current = with(&current, &c, Precision::Fp16);
        undone = Some(format!("{c} {p}"));
    }
    Ok(out.confirmation.as_ref().and_then(|c| c.confirmed.clone()))
}

/// The error of `a` on the search's backend, when it was measured there.
fn search_figure(tried: &[Measured], a: &Assignment) -> Option<f64> {
    tried
        .iter()
        .find(|t| &t.assignment == a && t.ok())
        .map(|t| t.actions_max_abs)
}

/// One HTP run into the confirmation (the float bundle's is the HTP float chain too).
fn record(out: &mut Outcome, run: ConfirmRun, current: &Assignment, is_float: bool) {
    let Some(c) = out.confirmation.as_mut() else {
        return;
    };
    if is_float && c.htp_float.is_none() {
        c.htp_float = Some(run.measured.clone());
    }
    if run.measured.within_budget {
        c.confirmed = Some(current.clone());
    }
    c.runs.push(run);
}

/// Which kept change to undo: the one that saves the fewest bytes per unit of the error it
/// added alone over the float chain (a change that added none is undone last); ties go to the
/// last one kept.
fn to_undo(
    remaining: &[(String, Precision)],
    alone: &BTreeMap<(String, Precision), Measured>,
    base: Option<&Measured>,
) -> Option<usize> {
    let ratio = |(c, p): &(String, Precision)| -> f64 {
        let (Some(a), Some(b)) = (alone.get(&(c.clone(), *p)), base) else {
            return f64::INFINITY;
        };
        let saved = b.bytes.saturating_sub(a.bytes) as f64;
        let added = a.actions_max_abs - b.actions_max_abs;
        if added > 0.0 && added.is_finite() {
            saved / added
        } else {
            f64::INFINITY
        }
    };
    let mut best: Option<(usize, f64)> = None;
    for (i, change) in remaining.iter().enumerate() {
        let r = ratio(change);
        // `<=`: a later change with the same ratio wins (the last one kept).
        if best.is_none_or(|(_, b)| r <= b) {
            best = Some((i, r));
        }
    }
    best.map(|(i, _)| i)
}
