//! The search itself, pure: which configurations to measure, in what order, and which to
//! propose. A configuration gives every component a precision; measuring one builds what it
//! needs and runs the whole chain (`Measure`), so the error that decides is the chain's own
//! action error against the float golden, never a per-component proxy.
//!
//! The order, for `k` components and `p` precisions (at most `1 + k·p + k` chain runs, not
//! `p^k`):
//! 1. the float chain (every component fp16) on the search's backend. When its own error is
//!    over the budget, the search says so and, by default, stops there (`BudgetMode::Absolute`:
//!    no configuration can be "within" a budget the float chain misses). With
//!    `--budget-from-float` (`BudgetMode::FromFloat`) the budget is the error *added* over the
//!    float chain: a configuration passes when its error ≤ float error + budget;
//! 2. each component alone at each precision (the rest fp16): its bytes saved and the action
//!    error it causes on its own;
//! 3. greedy: components by bytes saved, largest first; each takes the smallest precision
//!    whose error alone was within the limit, and is kept when the chain with it *and every
//!    change kept so far* stays within the limit (errors do not add up linearly), else its
//!    next larger precision is tried;
//! 4. on `--backend qdq`, the proposal is confirmed on the HTP (`confirm`) before it is one.

use std::collections::BTreeMap;

use anyhow::Result;

use super::confirm::confirm_on_htp;
use super::outcome::{
    Assignment, BudgetMode, FloatCheck, Measure, Measured, Outcome, Plan, all_fp16, with, within,
};
use xtask_base::vocab::Precision;

/// Runs the search; `on_measured` sees every measurement as it lands (the CLI writes the
/// report then, so an interrupted search keeps what it measured).
pub fn search(
    plan: &Plan,
    m: &mut dyn Measure,
    on_measured: &mut dyn FnMut(&Outcome),
) -> Result<Outcome> {
    let mut out = Outcome {
        tried: Vec::new(),
        float: None,
        kept: Vec::new(),
        proposal: None,
        confirmation: None,
    };
    let baseline = all_fp16(&plan.components);
    let mut base = m.measure_float(&baseline, "baseline: every component fp16", plan.budget)?;
    let float_ok = base.ok() && within(base.actions_max_abs, plan.budget);
    let limit = plan.mode.limit(plan.budget, base.actions_max_abs);
    base.within_budget = base.ok() && within(base.actions_max_abs, limit);
    let stopped = !base.ok() || (!float_ok && plan.mode == BudgetMode::Absolute);
    out.float = Some(FloatCheck {
        actions_max_abs: base.actions_max_abs,
        within_budget: float_ok,
        limit,
        stopped,
    });
    out.tried.push(base.clone());
    on_measured(&out);
    if stopped {
        return Ok(out);
    }
    let mut record = |out: &mut Outcome, a: &Assignment, why: &str| {
        let mut got = m.measure(a, why)?;
        // The limit is the search's, whatever the measurer thought.
        got.within_budget = got.ok() && within(got.actions_max_abs, limit);
        out.tried.push(got.clone());
        on_measured(out);
        anyhow::Ok(got)
    };
    let mut alone: BTreeMap<(String, Precision), Measured> = BTreeMap::new();
    for c in &plan.components {
        for &p in plan.precisions.iter().filter(|p| p.is_quantized()) {
            let got = record(
                &mut out,
                &with(&baseline, c, p),
                &format!("alone: {c} at {p}"),
            )?;
            alone.insert((c.clone(), p), got);
        }
    }
    let mut current = baseline.clone();
    for (c, options) in greedy_order(&plan.components, &alone, &base, limit) {
        for p in options {
            let trial = with(&current, &c, p);
            let got = if trial == with(&baseline, &c, p) {
                alone[&(c.clone(), p)].clone()
            } else {
                record(&mut out, &trial, &format!("greedy: + {c} at {p}"))?
            };
            if got.within_budget {
                current = trial;
                out.kept.push((c.clone(), p));
                break;
            }
        }
    }
    let proposal = base.within_budget.then_some(current);
    out.proposal = match (proposal, plan.confirm_on_htp) {
        (Some(p), true) => {
            let kept = out.kept.clone();
            confirm_on_htp(plan, m, &p, &kept, &alone, &mut out, on_measured)?
        }
        (p, _) => p,
    };
    on_measured(&out);
    Ok(out)
}

/// Components by the bytes their smallest acceptable precision saves (largest first), each
/// with its acceptable precisions, smallest binary first.
fn greedy_order(
    components: &[String],
    alone: &BTreeMap<(String, Precision), Measured>,
    base: &Measured,
    limit: f64,
) -> Vec<(String, Vec<Precision>)> {
    let mut order: Vec<(u64, String, Vec<Precision>)> = components
        .iter()
        .filter_map(|c| {
            let mut ok: Vec<(u64, Precision)> = alone
                .iter()
                .filter(|((name, _), m)| name == c && m.ok() && within(m.actions_max_abs, limit))
                .map(|((_, p), m)| (m.bytes, *p))
                .filter(|(bytes, _)| *bytes < base.bytes)
                .collect();
            ok.sort();
            let saved = base.bytes.saturating_sub(ok.first()?.0);
            Some((saved, c.clone(), ok.into_iter().map(|(_, p)| p).collect()))
        })
        .collect();
    order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    order.into_iter().map(|(_, c, p)| (c, p)).collect()
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
