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
use serde::{Deserialize, Serialize};

use super::confirm::{Confirmation, confirm_on_htp};
use super::gates::ComponentGate;
use crate::chain::whatif::Attribution;
use xtask_base::vocab::Precision;

/// A precision per component, in the model's order.
pub type Assignment = BTreeMap<String, Precision>;

/// What one configuration measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measured {
    pub assignment: Assignment,
    /// Why it was measured: `baseline`, `alone: vision at w8a16`, `greedy: + llm_split0 w8a16`.
    pub why: String,
    /// Context binary bytes of every component at its precision (0 when it did not build).
    pub bytes: u64,
    /// Seconds building the components this configuration needed that were not built yet
    /// (quantize + convert + CPU parity + compile; 0 when every step was fresh).
    pub build_seconds: f64,
    /// Seconds of the chain run.
    pub run_seconds: f64,
    /// The final actions against the float golden: largest absolute error and cosine (NaN,
    /// written `null`, when the chain did not run).
    #[serde(deserialize_with = "xtask_recipe::recipe::gate::f64_or_nan")]
    pub actions_max_abs: f64,
    #[serde(deserialize_with = "xtask_recipe::recipe::gate::f64_or_nan")]
    pub actions_cosine: f64,
    /// Within the limit the search judged it by (a NaN error never is).
    pub within_budget: bool,
    /// Set when the configuration could not be built or run (then nothing else counts).
    pub error: Option<String>,
    /// Quantized components of this configuration that failed their own gate at the CPU stage
    /// (the QDQ simulation), with the cosine measured; with `--component-gates report` they
    /// were measured in the chain anyway.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub component_gates: Vec<ComponentGate>,
    /// Which component contributes most to this chain's error (`run --attribute`'s what-ifs):
    /// measured for the float chain when it misses the budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Attribution>,
}

impl Measured {
    /// A measurement that produced no figures (built or run failed).
    pub fn failed(assignment: &Assignment, why: &str, error: String) -> Self {
        Measured {
            assignment: assignment.clone(),
            why: why.to_string(),
            bytes: 0,
            build_seconds: 0.0,
            run_seconds: 0.0,
            actions_max_abs: f64::NAN,
            actions_cosine: f64::NAN,
            within_budget: false,
            error: Some(error),
            component_gates: Vec::new(),
            attribution: None,
        }
    }

    /// Measured figures to judge (not failed, a finite error).
    pub fn ok(&self) -> bool {
        self.error.is_none() && self.actions_max_abs.is_finite()
    }
}

/// Builds and runs one configuration. The search calls it; the CLI gives the real one, tests
/// a model of it.
pub trait Measure {
    /// The configuration's chain on the search's backend.
    fn measure(&mut self, assignment: &Assignment, why: &str) -> Result<Measured>;

    /// The float chain on the search's backend, with its attribution when its actions error is
    /// over `attribute_over` (where the backend has one).
    fn measure_float(
        &mut self,
        assignment: &Assignment,
        why: &str,
        _attribute_over: f64,
    ) -> Result<Measured> {
        self.measure(assignment, why)
    }

    /// The configuration's chain on the HTP (the confirmation of a `--backend qdq` proposal).
    fn measure_on_htp(&mut self, assignment: &Assignment, why: &str) -> Result<Measured>;
}

/// How the budget is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BudgetMode {
    /// The actions' error against the float golden must be ≤ the budget; the search stops
    /// when the float chain itself misses it.
    Absolute,
    /// `--budget-from-float`: the error *added* over the float chain on the same backend must
    /// be ≤ the budget (error ≤ float error + budget).
    FromFloat,
}

impl BudgetMode {
    pub fn describe(self) -> &'static str {
        match self {
            BudgetMode::Absolute => {
                "absolute: actions max |error| against the float golden ≤ budget"
            }
            BudgetMode::FromFloat => {
                "--budget-from-float: actions max |error| ≤ the float chain's own error on the same backend + budget"
            }
        }
    }

    /// The largest error a configuration may have, given the float chain's own on its backend.
    pub fn limit(self, budget: f64, float_error: f64) -> f64 {
        match self {
            BudgetMode::Absolute => budget,
            BudgetMode::FromFloat => float_error + budget,
        }
    }
}

/// What the search is asked.
#[derive(Debug, Clone)]
pub struct Plan {
    pub components: Vec<String>,
    pub precisions: Vec<Precision>,
    pub budget: f64,
    pub mode: BudgetMode,
    /// Confirm the proposal on the HTP (the search ran on another backend).
    pub confirm_on_htp: bool,
}

/// The float chain on the search's backend, measured first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FloatCheck {
    #[serde(deserialize_with = "xtask_recipe::recipe::gate::f64_or_nan")]
    pub actions_max_abs: f64,
    /// Within the budget itself (read as an absolute error).
    pub within_budget: bool,
    /// The limit every configuration was judged by: the budget, or float error + budget.
    #[serde(deserialize_with = "xtask_recipe::recipe::gate::f64_or_nan")]
    pub limit: f64,
    /// The search stopped here: the float chain misses the budget and the budget is absolute.
    pub stopped: bool,
}

/// What the search found: every configuration measured, in order, and the proposal.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub tried: Vec<Measured>,
    /// The float chain's check (None until it was measured).
    pub float: Option<FloatCheck>,
    /// The changes the greedy pass kept, in the order it kept them.
    pub kept: Vec<(String, Precision)>,
    /// What the search proposes: the smallest configuration within the limit on its backend
    /// and, on `--backend qdq`, confirmed on the HTP. None when nothing is.
    pub proposal: Option<Assignment>,
    /// The HTP confirmation of a `--backend qdq` proposal.
    pub confirmation: Option<Confirmation>,
}

/// Whether an error is within the limit (NaN never is).
pub fn within(error: f64, limit: f64) -> bool {
    error.is_finite() && error <= limit
}

/// Every component at fp16.
pub fn all_fp16(components: &[String]) -> Assignment {
    components
        .iter()
        .map(|c| (c.clone(), Precision::Fp16))
        .collect()
}

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

/// `a` with `c` at `p`.
pub fn with(a: &Assignment, c: &str, p: Precision) -> Assignment {
    let mut a = a.clone();
    a.insert(c.to_string(), p);
    a
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

/// The configurations no other beats on both bytes and error (the size/error frontier),
/// smallest first. Failed and NaN-error configurations are never on it.
pub fn frontier(tried: &[Measured]) -> Vec<&Measured> {
    let mut ok: Vec<&Measured> = tried.iter().filter(|m| m.ok()).collect();
    ok.sort_by(|a, b| {
        a.bytes
            .cmp(&b.bytes)
            .then(a.actions_max_abs.total_cmp(&b.actions_max_abs))
    });
    let mut out: Vec<&Measured> = Vec::new();
    for m in ok {
        if out
            .last()
            .is_none_or(|last| m.actions_max_abs < last.actions_max_abs)
            && !out.iter().any(|o| o.assignment == m.assignment)
        {
            out.push(m);
        }
    }
    out
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
