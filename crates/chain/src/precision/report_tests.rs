use super::*;
use crate::precision::outcome::{Measured, all_fp16};

fn versions() -> ToolVersions {
    ToolVersions {
        xtask: "x".into(),
        onnxruntime: "o".into(),
        qnn_build: None,
        qnn_plugin: "p".into(),
        runtime_source: "embedded".into(),
        data_root: None,
        unverified_inputs: None,
    }
}

fn asked(budget: f64, mode: BudgetMode) -> Asked {
    Asked {
        model: "tiny".into(),
        backend: SearchBackend::Htp,
        budget,
        budget_mode: mode,
        component_gates: ComponentGates::Enforce,
        precisions: vec![Precision::W8a16],
        components: vec!["llm_split0".into(), "vision".into()],
    }
}

fn measured(a: &Assignment, why: &str, bytes: u64, err: f64, limit: f64) -> Measured {
    Measured {
        bytes,
        actions_max_abs: err,
        actions_cosine: 0.9999,
        within_budget: err <= limit,
        error: None,
        ..Measured::failed(a, why, String::new())
    }
}

/// The figures: on the HTP the float chain misses 5e-2 (5.235e-2) and llm_split0 at
/// w8a16 lands below it (4.235e-2).
fn from_float() -> (Asked, Outcome) {
    let asked = asked(5e-2, BudgetMode::FromFloat);
    let base = all_fp16(&asked.components);
    let limit = 5.235e-2 + 5e-2;
    let q = crate::precision::outcome::with(&base, "llm_split0", Precision::W8a16);
    let failed = crate::precision::outcome::with(&base, "vision", Precision::W8a16);
    let outcome = Outcome {
        tried: vec![
            measured(
                &base,
                "baseline: every component fp16",
                2_000_000,
                5.235e-2,
                limit,
            ),
            measured(&q, "alone: llm_split0 at w8a16", 1_800_000, 4.235e-2, limit),
            Measured::failed(
                &failed,
                "alone: vision at w8a16",
                "vision at w8a16 did not build (context binary failed: boom)".into(),
            ),
        ],
        float: Some(FloatCheck {
            actions_max_abs: 5.235e-2,
            within_budget: false,
            limit,
            stopped: false,
        }),
        kept: vec![("llm_split0".into(), Precision::W8a16)],
        proposal: Some(q),
        confirmation: None,
    };
    (asked, outcome)
}

#[test]
fn a_float_chain_over_the_budget_opens_every_rendering_and_a_figure_below_it_is_said_to_be_inside_it()
 {
    let (asked, outcome) = from_float();
    let r = PrecisionReport::with_lines(&asked, versions(), &outcome, Status::Complete, vec![]);
    let note = r.float_note.clone().unwrap();
    assert!(
        note.starts_with("The float chain misses the budget"),
        "{note}"
    );
    assert!(
        note.contains("5.235e-2") && note.contains("--budget-from-float"),
        "{note}"
    );
    let md = r.markdown();
    let first = md.lines().nth(2).unwrap();
    assert!(
        first.starts_with("**The float chain misses the budget"),
        "{md}"
    );
    let v = r.verdict();
    assert!(v.contains("below the float chain's own 5.235e-2"), "{v}");
    assert!(v.contains("inside the float chain's own error"), "{v}");
    assert!(
        md.contains("below the float chain's own error 5.235e-2: inside it"),
        "{md}"
    );
    let html = r.html(&md);
    assert!(
        html.contains("The float chain misses the budget"),
        "the HTML says it too"
    );
}

#[test]
fn a_failed_configuration_shows_a_dash_and_its_reason_never_a_zero_or_nan() {
    let (asked, outcome) = from_float();
    let r = PrecisionReport::with_lines(&asked, versions(), &outcome, Status::Complete, vec![]);
    let md = r.markdown();
    let row = md
        .lines()
        .find(|l| l.contains("alone: vision at w8a16"))
        .unwrap();
    assert!(row.contains("| — | 0.0 | — | — | — | — |"), "{row}");
    assert!(
        row.contains("not measured: vision at w8a16 did not build (context binary failed: boom)"),
        "{row}"
    );
    for bad in ["0.000 ", "NaN", "nan"] {
        assert!(!md.contains(bad), "{bad:?} in {md}");
    }
}

#[test]
fn the_status_says_in_progress_complete_or_interrupted() {
    let (asked, mut outcome) = from_float();
    outcome.proposal = None;
    for (status, heading, verdict) in [
        (
            Status::InProgress,
            "Status: **In progress** (3 configuration(s) measured so far",
            "in progress",
        ),
        (Status::Complete, "Status: **Complete**", "no configuration"),
        (
            Status::Interrupted,
            "Status: **Incomplete (interrupted)**",
            "incomplete: the search was interrupted",
        ),
    ] {
        let r = PrecisionReport::with_lines(&asked, versions(), &outcome, status, vec![]);
        let md = r.markdown();
        assert!(md.contains(heading), "{md}");
        assert!(r.verdict().starts_with(verdict), "{}", r.verdict());
        if status != Status::Interrupted {
            assert!(!md.contains("interrupted"), "{md}");
        }
    }
}
