//! The search itself, pure: which configurations to measure, in what order, and which to
//! propose. A configuration gives every component a precision; measuring one builds what it
//! needs and runs the whole chain (`Measure`), so the error that decides is the chain's own
//! action error against the float golden, never a per-component proxy.
//!
//! The order, for `k` components and `p` precisions (at most `1 + k·p + k` chain runs, not
//! `p^k`):
//! 1. the float baseline (every component fp16);
//! 2. each component alone at each precision (the rest fp16): its bytes saved and the action
//!    error it causes on its own;
//! 3. greedy: components by bytes saved, largest first; each takes the smallest precision
//!    whose error alone was within the budget, and is kept when the chain with it *and every
//!    change kept so far* stays within the budget (errors do not add up linearly), else its
//!    next larger precision is tried.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use xtask_base::vocab::Precision;

/// A precision per component, in the model's order.
pub type Assignment = BTreeMap<String, Precision>;

/// What one configuration measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    pub assignment: Assignment,
    /// Why it was measured: `baseline`, `alone: vision at w8a16`, `greedy: + llm_split0 w8a16`.
    pub why: String,
    /// Context binary bytes of every component at its precision.
    pub bytes: u64,
    /// Seconds building the components this configuration needed that were not built yet
    /// (quantize + convert + CPU parity + compile; 0 when every step was fresh).
    pub build_seconds: f64,
    /// Seconds of the chain run.
    pub run_seconds: f64,
    /// The final actions against the float golden: largest absolute error and cosine.
    #[serde(deserialize_with = "xtask_recipe::recipe::gate::f64_or_nan")]
    pub actions_max_abs: f64,
    #[serde(deserialize_with = "xtask_recipe::recipe::gate::f64_or_nan")]
    pub actions_cosine: f64,
    /// Within the budget (a NaN error never is).
    pub within_budget: bool,
    /// Set when the configuration could not be built or run (then nothing else counts).
    pub error: Option<String>,
}

/// Builds and runs one configuration. The search calls it; the CLI gives the real one, tests
/// a model of it.
pub trait Measure {
    fn measure(&mut self, assignment: &Assignment, why: &str) -> Result<Measured>;
}

/// What the search found: every configuration measured, in order, and the proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub tried: Vec<Measured>,
    /// The smallest configuration within the budget (the baseline when nothing was).
    pub proposal: Option<Assignment>,
}

/// Whether an error is within the budget (NaN never is).
pub fn within(error: f64, budget: f64) -> bool {
    error.is_finite() && error <= budget
}

/// Runs the search; `on_measured` sees every measurement as it lands (the CLI writes the
/// report then, so an interrupted search keeps what it measured).
pub fn search(
    components: &[String],
    precisions: &[Precision],
    budget: f64,
    m: &mut dyn Measure,
    on_measured: &mut dyn FnMut(&Outcome),
) -> Result<Outcome> {
    let mut out = Outcome {
        tried: Vec::new(),
        proposal: None,
    };
    let baseline: Assignment = components
        .iter()
        .map(|c| (c.clone(), Precision::Fp16))
        .collect();
    let mut record = |out: &mut Outcome, a: &Assignment, why: &str| {
        let mut got = m.measure(a, why)?;
        // The budget is the search's, whatever the measurer thought.
        got.within_budget = got.error.is_none() && within(got.actions_max_abs, budget);
        out.tried.push(got.clone());
        on_measured(out);
        anyhow::Ok(got)
    };
    let base = record(&mut out, &baseline, "baseline: every component fp16")?;
    let mut alone: BTreeMap<(String, Precision), Measured> = BTreeMap::new();
    for c in components {
        for &p in precisions.iter().filter(|p| p.is_quantized()) {
            let mut a = baseline.clone();
            a.insert(c.clone(), p);
            let why = format!("alone: {c} at {p}");
            let got = record(&mut out, &a, &why)?;
            alone.insert((c.clone(), p), got);
        }
    }
    let mut current = baseline.clone();
    let mut current_ok = base.within_budget;
    for (c, options) in greedy_order(components, &alone, &base, budget) {
        for p in options {
            let mut trial = current.clone();
            trial.insert(c.clone(), p);
            let got = if trial == alone_assignment(&baseline, &c, p) {
                alone[&(c.clone(), p)].clone()
            } else {
                record(&mut out, &trial, &format!("greedy: + {c} at {p}"))?
            };
            if got.within_budget && got.error.is_none() {
                current = trial;
                current_ok = true;
                break;
            }
        }
    }
    out.proposal = current_ok.then_some(current);
    on_measured(&out);
    Ok(out)
}

fn alone_assignment(baseline: &Assignment, c: &str, p: Precision) -> Assignment {
    let mut a = baseline.clone();
    a.insert(c.to_string(), p);
    a
}

/// Components by the bytes their smallest acceptable precision saves (largest first), each
/// with its acceptable precisions, smallest binary first.
fn greedy_order(
    components: &[String],
    alone: &BTreeMap<(String, Precision), Measured>,
    base: &Measured,
    budget: f64,
) -> Vec<(String, Vec<Precision>)> {
    let mut order: Vec<(u64, String, Vec<Precision>)> = components
        .iter()
        .filter_map(|c| {
            let mut ok: Vec<(u64, Precision)> = alone
                .iter()
                .filter(|((name, _), m)| {
                    name == c && m.error.is_none() && within(m.actions_max_abs, budget)
                })
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
    let mut ok: Vec<&Measured> = tried
        .iter()
        .filter(|m| m.error.is_none() && m.actions_max_abs.is_finite())
        .collect();
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
mod tests {
    use super::*;

    /// A model of a chain: each component's bytes and error per precision; errors of a
    /// configuration add up, plus an interaction term when both `a` and `b` are quantized.
    struct Model {
        bytes: BTreeMap<(String, Precision), u64>,
        error: BTreeMap<(String, Precision), f64>,
        calls: usize,
    }

    impl Measure for Model {
        fn measure(&mut self, a: &Assignment, why: &str) -> Result<Measured> {
            self.calls += 1;
            let bytes = a.iter().map(|(c, p)| self.bytes[&(c.clone(), *p)]).sum();
            let mut err: f64 = a.iter().map(|(c, p)| self.error[&(c.clone(), *p)]).sum();
            if a["a"].is_quantized() && a["b"].is_quantized() {
                err += 0.5;
            }
            Ok(Measured {
                assignment: a.clone(),
                why: why.into(),
                bytes,
                build_seconds: 0.0,
                run_seconds: 0.0,
                actions_max_abs: err,
                actions_cosine: 1.0 - err,
                within_budget: within(err, 1.0),
                error: None,
            })
        }
    }

    fn model() -> Model {
        let mut bytes = BTreeMap::new();
        let mut error = BTreeMap::new();
        for (c, size, e8, e4) in [
            ("a", 100, 0.1, 0.9),
            ("b", 60, 0.1, 2.0),
            ("c", 10, 0.0, 0.0),
        ] {
            bytes.insert((c.to_string(), Precision::Fp16), size);
            bytes.insert((c.to_string(), Precision::W8a16), size / 2);
            bytes.insert((c.to_string(), Precision::W4a16), size / 4);
            error.insert((c.to_string(), Precision::Fp16), 0.0);
            error.insert((c.to_string(), Precision::W8a16), e8);
            error.insert((c.to_string(), Precision::W4a16), e4);
        }
        Model {
            bytes,
            error,
            calls: 0,
        }
    }

    #[test]
    fn the_greedy_search_keeps_the_budget_across_interactions() {
        let comps: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let mut m = model();
        let mut seen = 0;
        let out = search(
            &comps,
            &[Precision::W8a16, Precision::W4a16],
            1.0,
            &mut m,
            &mut |o| seen = o.tried.len(),
        )
        .unwrap();
        let p = out.proposal.clone().unwrap();
        // a alone at w4a16 (0.9) is within 1.0, so a takes w4a16 first; b then cannot join
        // (0.9 + 0.1 + 0.5 interaction > 1.0 at w8a16; 2.0 alone at w4a16); c costs nothing.
        assert_eq!(p["a"], Precision::W4a16);
        assert_eq!(p["b"], Precision::Fp16);
        assert_eq!(p["c"], Precision::W4a16);
        assert_eq!(seen, out.tried.len());
        assert!(m.calls <= 1 + 3 * 2 + 3 + 1, "{}", m.calls);
        let f = frontier(&out.tried);
        assert!(
            f.windows(2)
                .all(|w| w[0].bytes <= w[1].bytes && w[0].actions_max_abs > w[1].actions_max_abs)
        );
    }

    #[test]
    fn nothing_is_proposed_when_even_the_baseline_is_over_budget() {
        let comps: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let mut m = model();
        let out = search(&comps, &[Precision::W8a16], -1.0, &mut m, &mut |_| {}).unwrap();
        assert_eq!(out.proposal, None);
        assert!(!within(f64::NAN, 1.0));
    }
}
