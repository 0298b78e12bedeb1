//! What the precision search measures and finds, shared by the search (`search`), the HTP
//! confirmation of a `--backend qdq` proposal (`confirm`), the measurer (`measure`) and the
//! report: a configuration (`Assignment`), what one chain of it gave (`Measured`), the float
//! chain's check, the budget's mode, the HTP confirmation and the outcome.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::{Deserialize, Serialize};

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

/// `a` with `c` at `p`.
pub fn with(a: &Assignment, c: &str, p: Precision) -> Assignment {
    let mut a = a.clone();
    a.insert(c.to_string(), p);
    a
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

/// One HTP chain of the confirmation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConfirmRun {
    /// The HTP measurement (`within_budget`: against the HTP limit).
    pub measured: Measured,
    /// The change undone before this run (`llm_split3 w8a16`); None for the proposal itself.
    pub undone: Option<String>,
    /// The same configuration's error on the search's backend, when it was measured there.
    #[serde(default)]
    pub search_backend_max_abs: Option<f64>,
}

/// The HTP confirmation of a `--backend qdq` proposal.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Confirmation {
    /// What the QDQ search proposed, and its error there.
    pub proposed: Assignment,
    #[serde(deserialize_with = "xtask_recipe::recipe::gate::f64_or_nan")]
    pub proposed_search_max_abs: f64,
    /// The HTP float chain (measured first with `--budget-from-float`, or when the back-off
    /// reached the float bundle).
    pub htp_float: Option<Measured>,
    /// The limit on the HTP: the budget, or the HTP float chain's error + budget.
    #[serde(deserialize_with = "xtask_recipe::recipe::gate::f64_or_nan")]
    pub limit: f64,
    /// Every HTP chain run, the proposal's first.
    pub runs: Vec<ConfirmRun>,
    /// The configuration the HTP confirmed within the limit (None: not even the float one).
    pub confirmed: Option<Assignment>,
}

impl Confirmation {
    /// The HTP run of the configuration finally proposed.
    pub fn confirmed_run(&self) -> Option<&ConfirmRun> {
        let c = self.confirmed.as_ref()?;
        self.runs.iter().rev().find(|r| &r.measured.assignment == c)
    }
}
