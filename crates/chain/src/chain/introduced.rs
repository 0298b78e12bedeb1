//! Introduced vs inherited error. A chain boundary is wrong for two reasons: its component
//! computes differently (introduced) or its inputs were already wrong (inherited). `run` also
//! runs the chain teacher-forced (`pipeline::run_chain_fed`: each component on its *golden*
//! inputs, with the same sessions) and sets both measurements side by side, so a FAIL points at
//! the component that causes it rather than every one downstream of it.

use std::fmt::Write as _;

use super::pipeline::ChainResult;
use super::report::{BoundaryParity, RunReport};
use xtask_parity::parity::metrics::Metrics;

/// Share of a boundary's error its component introduced itself:
/// `rel_L2(golden inputs) / rel_L2(chain inputs)`, clamped to [0, 1], where rel_L2 is
/// `||out - golden|| / ||golden||` with the component fed the chain's values (chain inputs) or
/// the golden values (golden inputs). 1 means the error is all the component's own (fed perfect
/// inputs it is as wrong as in the chain); 0 means it is all inherited. A component can also
/// damp or amplify what it inherits, so this is a share of the error *at this boundary*, not a
/// decomposition that sums along the chain. None when there is nothing to apportion: the chain
/// value is exact (rel-L2 0), or either figure is NaN/Inf or left out non-finite values.
pub fn introduced_share(chain: &Metrics, golden_inputs: &Metrics) -> Option<f64> {
    let (c, g) = (chain.rel_l2_err, golden_inputs.rel_l2_err);
    let clean = chain.non_finite() == 0 && golden_inputs.non_finite() == 0;
    (clean && c.is_finite() && g.is_finite() && c > 0.0).then(|| (g / c).clamp(0.0, 1.0))
}

/// Attaches the teacher-forced measurement of every boundary (matched by name) and the share
/// the component introduced; boundaries the forced run did not compare keep None.
pub fn attach_golden_inputs(
    boundaries: &mut [BoundaryParity],
    forced: &ChainResult,
    expected: &dyn Fn(&str) -> Option<ndarray::ArrayD<f32>>,
) {
    for b in boundaries.iter_mut() {
        let Some(got) = forced.boundaries.iter().find(|f| f.name == b.name) else {
            continue;
        };
        let Some(want) = expected(&b.name) else {
            continue;
        };
        // The same gate as the chain-inputs measurement (only its metrics are kept).
        let Some(gate) = b.gate.clone() else {
            continue;
        };
        let judged = BoundaryParity::new(&b.name, &got.value, Ok(&want), &gate);
        b.introduced = match (&b.metrics, &judged.metrics) {
            (Some(c), Some(g)) => introduced_share(c, g),
            _ => None,
        };
        b.golden_inputs = judged.metrics;
    }
}

/// The Markdown section: one row per boundary, chain inputs beside golden inputs.
pub fn markdown(r: &RunReport) -> String {
    let mut md = String::from(
        "\n## Introduced vs inherited error\n\n\
         Each component also ran on its golden inputs (same sessions). *introduced* = rel-L2 on \
         golden inputs / rel-L2 on chain inputs, clamped to [0, 1]: 1 = the component's own \
         error, 0 = inherited from upstream.\n\n\
         | boundary | cosine (chain inputs) | cosine (golden inputs) | rel L2 (chain inputs) | rel L2 (golden inputs) | introduced |\n\
         |---|---|---|---|---|---|\n",
    );
    let cos = |m: Option<&Metrics>| m.map_or("-".into(), Metrics::shown_cosine);
    let l2 = |m: Option<&Metrics>| m.map_or("-".into(), |m| format!("{:.3e}", m.rel_l2_err));
    for b in &r.run.boundaries {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            b.name,
            cos(b.metrics.as_ref()),
            cos(b.golden_inputs.as_ref()),
            l2(b.metrics.as_ref()),
            l2(b.golden_inputs.as_ref()),
            b.introduced
                .map_or("-".into(), |s| format!("{:.0}%", s * 100.0))
        );
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use xtask_parity::parity::metrics::compare;

    fn metrics(rel: f64) -> Metrics {
        // got = want * (1 + rel): rel-L2 of exactly `rel`.
        let want = [1.0, 2.0, 3.0];
        let got: Vec<f64> = want.iter().map(|v| v * (1.0 + rel)).collect();
        compare(&got, &want, 0.0, 0.0)
    }

    #[test]
    fn the_share_is_the_ratio_clamped() {
        let s = introduced_share(&metrics(1e-2), &metrics(2.5e-3)).unwrap();
        assert!((s - 0.25).abs() < 1e-9, "{s}");
        assert_eq!(introduced_share(&metrics(1e-3), &metrics(1e-2)), Some(1.0));
        assert_eq!(introduced_share(&metrics(1e-3), &metrics(0.0)), Some(0.0));
    }

    #[test]
    fn nothing_to_apportion_is_none() {
        assert_eq!(introduced_share(&metrics(0.0), &metrics(0.0)), None);
        let mut nan = metrics(1e-3);
        nan.nan_actual = 1;
        assert_eq!(introduced_share(&nan, &metrics(1e-3)), None);
    }
}
