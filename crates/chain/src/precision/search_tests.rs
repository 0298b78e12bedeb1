use super::*;
use crate::precision::outcome::frontier;

/// A model of a chain: each component's bytes and error per precision; errors of a
/// configuration add up, plus an interaction term when both `a` and `b` are quantized, plus
/// `float` (the float chain's own error). On the "HTP" each quantized component adds
/// `htp_extra` more.
struct Model {
    bytes: BTreeMap<(String, Precision), u64>,
    error: BTreeMap<(String, Precision), f64>,
    float: f64,
    htp_float: f64,
    htp_extra: BTreeMap<String, f64>,
    calls: Vec<String>,
}

impl Model {
    fn figures(&self, a: &Assignment) -> (u64, f64) {
        let bytes = a.iter().map(|(c, p)| self.bytes[&(c.clone(), *p)]).sum();
        let mut err: f64 = a.iter().map(|(c, p)| self.error[&(c.clone(), *p)]).sum();
        if a["a"].is_quantized() && a["b"].is_quantized() {
            err += 0.5;
        }
        (bytes, err)
    }

    fn measured(a: &Assignment, why: &str, bytes: u64, err: f64) -> Measured {
        Measured {
            bytes,
            actions_max_abs: err,
            actions_cosine: 1.0 - err,
            // The search judges, whatever the measurer thought.
            within_budget: true,
            error: None,
            ..Measured::failed(a, why, String::new())
        }
    }
}

impl Measure for Model {
    fn measure(&mut self, a: &Assignment, why: &str) -> Result<Measured> {
        self.calls.push(why.to_string());
        let (bytes, err) = self.figures(a);
        Ok(Self::measured(a, why, bytes, err + self.float))
    }

    fn measure_on_htp(&mut self, a: &Assignment, why: &str) -> Result<Measured> {
        self.calls.push(format!("on-chip {why}"));
        let (bytes, err) = self.figures(a);
        let extra: f64 = a
            .iter()
            .filter(|(_, p)| p.is_quantized())
            .map(|(c, _)| self.htp_extra.get(c).copied().unwrap_or(0.0))
            .sum();
        Ok(Self::measured(a, why, bytes, err + self.htp_float + extra))
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
        float: 0.0,
        htp_float: 0.0,
        htp_extra: BTreeMap::new(),
        calls: Vec::new(),
    }
}

fn plan(budget: f64, mode: BudgetMode, precisions: &[Precision], confirm: bool) -> Plan {
    Plan {
        components: ["a", "b", "c"].map(String::from).to_vec(),
        precisions: precisions.to_vec(),
        budget,
        mode,
        confirm_on_htp: confirm,
    }
}

/// The search over w8a16 alone, with no progress to hear.
fn search_w8a16(m: &mut Model, budget: f64, mode: BudgetMode, confirm: bool) -> Outcome {
    search(
        &plan(budget, mode, &[Precision::W8a16], confirm),
        m,
        &mut |_| {},
    )
    .unwrap()
}

#[test]
fn the_greedy_search_keeps_the_budget_across_interactions() {
    let mut m = model();
    let mut seen = 0;
    let both = [Precision::W8a16, Precision::W4a16];
    let out = search(
        &plan(1.0, BudgetMode::Absolute, &both, false),
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
    assert!(m.calls.len() <= 1 + 3 * 2 + 3, "{:?}", m.calls);
    assert!(
        out.confirmation.is_none(),
        "no HTP confirmation of an HTP search"
    );
    let f = frontier(&out.tried);
    assert!(
        f.windows(2)
            .all(|w| w[0].bytes <= w[1].bytes && w[0].actions_max_abs > w[1].actions_max_abs)
    );
}

#[test]
fn a_float_chain_over_an_absolute_budget_stops_the_search_after_one_measurement() {
    let mut m = model();
    m.float = 0.3;
    let out = search_w8a16(&mut m, 0.2, BudgetMode::Absolute, true);
    assert_eq!(out.proposal, None);
    assert_eq!(m.calls, ["baseline: every component fp16"]);
    let f = out.float.unwrap();
    assert!(f.stopped && !f.within_budget, "{f:?}");
    assert_eq!(f.actions_max_abs, 0.3);
    assert!(!within(f64::NAN, 1.0));
}

#[test]
fn with_budget_from_float_the_budget_is_added_error_over_the_float_chain() {
    let mut m = model();
    m.float = 0.3;
    let out = search_w8a16(&mut m, 0.2, BudgetMode::FromFloat, false);
    let f = out.float.clone().unwrap();
    assert!(!f.within_budget && !f.stopped, "{f:?}");
    assert!((f.limit - 0.5).abs() < 1e-12, "{f:?}");
    // a (0.1) and c (0) each add within 0.2; b joins a only with the 0.5 interaction: over.
    let p = out.proposal.unwrap();
    assert_eq!(p["a"], Precision::W8a16);
    assert_eq!(p["b"], Precision::Fp16);
    assert_eq!(p["c"], Precision::W8a16);
    for t in &out.tried {
        assert_eq!(t.within_budget, t.actions_max_abs <= 0.5 + 1e-12, "{t:?}");
    }
}

#[test]
fn a_qdq_proposal_the_htp_confirms_is_proposed_after_one_htp_chain() {
    let mut m = model();
    m.htp_float = 0.05;
    let out = search_w8a16(&mut m, 0.3, BudgetMode::Absolute, true);
    let c = out.confirmation.clone().unwrap();
    assert_eq!(c.runs.len(), 1, "{c:?}");
    assert!(c.runs[0].measured.within_budget);
    assert_eq!(c.runs[0].measured.assignment, c.proposed);
    assert_eq!(out.proposal.as_ref(), Some(&c.proposed));
    assert!(c.runs[0].search_backend_max_abs.is_some());
    assert_eq!(
        m.calls.iter().filter(|c| c.starts_with("on-chip")).count(),
        1
    );
}

#[test]
fn an_htp_over_budget_backs_off_on_the_htp_fewest_bytes_per_error_first() {
    let mut m = model();
    // On QDQ: a w8a16 (0.1, saves 50), c w8a16 (0, saves 5) are kept within 0.3; b joins a
    // only with the interaction (0.7): never kept.
    m.htp_extra.insert("a".into(), 0.5);
    let out = search_w8a16(&mut m, 0.3, BudgetMode::Absolute, true);
    let c = out.confirmation.clone().unwrap();
    let kept: Vec<&str> = out.kept.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(kept, ["a", "c"]);
    // The proposal a+c is over on the HTP (0.6). c added no error: undone last; a saves 50
    // bytes for 0.1: undone first, and c alone is within.
    assert_eq!(c.runs.len(), 2, "{c:?}");
    assert!(!c.runs[0].measured.within_budget);
    assert_eq!(c.runs[1].undone.as_deref(), Some("a w8a16"));
    assert!(c.runs[1].measured.within_budget);
    let p = out.proposal.unwrap();
    assert_eq!((p["a"], p["c"]), (Precision::Fp16, Precision::W8a16));
    assert_eq!(c.confirmed, Some(p));
}

#[test]
fn the_back_off_ends_at_the_float_bundle_and_proposes_nothing_when_even_it_is_over() {
    let mut m = model();
    m.htp_float = 0.4;
    let out = search_w8a16(&mut m, 0.3, BudgetMode::Absolute, true);
    let c = out.confirmation.unwrap();
    let last = c.runs.last().unwrap();
    assert_eq!(
        last.measured.assignment,
        all_fp16(&["a", "b", "c"].map(String::from))
    );
    assert!(!last.measured.within_budget);
    assert_eq!(c.confirmed, None);
    assert_eq!(out.proposal, None);
    assert!(c.htp_float.is_some());
}

#[test]
fn with_budget_from_float_the_htp_limit_is_the_htp_float_chain_plus_the_budget() {
    let mut m = model();
    m.float = 0.01;
    m.htp_float = 0.4;
    let out = search_w8a16(&mut m, 0.3, BudgetMode::FromFloat, true);
    let c = out.confirmation.unwrap();
    assert!((c.limit - 0.7).abs() < 1e-12, "{c:?}");
    assert_eq!(c.htp_float.unwrap().actions_max_abs, 0.4);
    assert!(c.runs[0].measured.within_budget, "{:?}", c.runs);
    assert!(out.proposal.is_some());
}
