//! The one parity gate: a minimum cosine and a maximum scale error (| |y|/|golden| - 1 |,
//! which the cosine cannot see), with `atol`/`rtol` for the informational `within_tol`,
//! NaN- and Inf-aware on both sides. Component outputs (`parity`, `build-ctx`)
//! and chain boundaries (`run`) are judged by it, so a tensor that fails one fails the other.

use serde::{Deserialize, Serialize};

use super::metrics::{Metrics, compare};
use xtask_base::vocab::Verdict;

pub use xtask_recipe::recipe::gate::Gate;

/// How one set of metrics came out of its gate: pass, and the reasons when not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    pub pass: bool,
    /// Why it failed, in words a person can act on (empty when it passed).
    pub reasons: Vec<String>,
}

/// Judges metrics already computed: any NaN or Inf (in the output or in the golden) fails, and
/// so does a cosine below the gate (or a NaN cosine).
pub fn judge(m: &Metrics, gate: &Gate) -> Judgement {
    let mut reasons = Vec::new();
    let non_finite = m.nan_actual + m.inf_actual + m.nan_expected + m.inf_expected;
    if non_finite > 0 {
        reasons.push(format!(
            "non-finite values: {} NaN / {} Inf in the output, {} NaN / {} Inf in the golden",
            m.nan_actual, m.inf_actual, m.nan_expected, m.inf_expected
        ));
    }
    if m.cosine.is_nan() || m.cosine < gate.min_cosine {
        // Near 1 the cosine's printed digits hide the miss ("1.00000000 < gate 1"): the
        // distance from 1 is the readable number.
        reasons.push(match m.cosine.is_nan() {
            true => format!("cosine NaN < gate {}", gate.min_cosine),
            false => format!(
                "1 − cosine {:.2e} > allowed {:.2e} (cosine {:.8} < gate {})",
                1.0 - m.cosine,
                1.0 - gate.min_cosine,
                m.cosine,
                gate.min_cosine
            ),
        });
    }
    let off = (m.norm_ratio - 1.0).abs();
    // NaN (no ratio, or an old gate without a bound) fails too.
    if off.is_nan() || gate.max_norm_ratio_error.is_nan() || off > gate.max_norm_ratio_error {
        reasons.push(format!(
            "scale: |output| / |golden| = {:.6e}, off by {off:.3e} > gate {} (the output is {:.6e} times the golden's size)",
            m.norm_ratio, gate.max_norm_ratio_error, m.norm_ratio
        ));
    }
    Judgement {
        pass: reasons.is_empty(),
        reasons,
    }
}

/// What a tensor is judged against.
pub enum Expected<'a> {
    Tensor {
        shape: &'a [usize],
        values: &'a [f64],
    },
    /// No reference exists; the reason says why.
    Missing(String),
}

/// The outcome for one tensor: metrics when there was something to compare.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judged {
    pub status: Verdict,
    pub metrics: Option<Metrics>,
    /// Why it failed, or why it is ungated (empty when it passed).
    pub reasons: Vec<String>,
}

/// Judging a tensor by a recipe's `Gate`: a trait because the gate is the recipe layer's type
/// (what a recipe says) and the judging is this layer's (how numbers are compared).
pub trait JudgeTensor {
    /// Compares and judges one tensor. A missing reference is `Ungated`; a shape that differs
    /// from the reference's fails (naming both shapes) before any metric is computed.
    fn judge_tensor(&self, shape: &[usize], actual: &[f64], expected: Expected<'_>) -> Judged;
}

impl JudgeTensor for Gate {
    fn judge_tensor(&self, shape: &[usize], actual: &[f64], expected: Expected<'_>) -> Judged {
        let (want_shape, want) = match expected {
            Expected::Missing(reason) => {
                return Judged {
                    status: Verdict::Ungated,
                    metrics: None,
                    reasons: vec![reason],
                };
            }
            Expected::Tensor { shape, values } => (shape, values),
        };
        if want_shape != shape || want.len() != actual.len() {
            return Judged {
                status: Verdict::Fail,
                metrics: None,
                reasons: vec![format!(
                    "shape {shape:?} produced, but the golden holds shape {want_shape:?}"
                )],
            };
        }
        let metrics = compare(actual, want, self.atol, self.rtol);
        let verdict = judge(&metrics, self);
        Judged {
            status: if verdict.pass {
                Verdict::Pass
            } else {
                Verdict::Fail
            },
            metrics: Some(metrics),
            reasons: verdict.reasons,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(min: f64) -> Gate {
        Gate {
            min_cosine: min,
            max_norm_ratio_error: 1e-3,
            atol: 1e-4,
            rtol: 1e-3,
            waiver: None,
            source: String::new(),
            replaced_min_cosine: None,
        }
    }

    fn tensor<'a>(shape: &'a [usize], values: &'a [f64]) -> Expected<'a> {
        Expected::Tensor { shape, values }
    }

    #[test]
    fn identical_tensors_pass() {
        let x = [1.0, -2.0, 3.0];
        assert!(judge(&compare(&x, &x, 0.0, 0.0), &gate(0.9999)).pass);
        let j = gate(0.9999).judge_tensor(&[3], &x, tensor(&[3], &x));
        assert_eq!(j.status, Verdict::Pass);
        assert!(j.reasons.is_empty());
    }

    #[test]
    fn nan_in_the_output_fails_even_with_good_cosine() {
        let m = compare(&[1.0, f64::NAN, 3.0], &[1.0, 2.0, 3.0], 1e-4, 0.0);
        assert_eq!(m.nan_actual, 1);
        assert!((m.cosine - 1.0).abs() < 1e-12);
        let v = judge(&m, &gate(0.9));
        assert!(!v.pass);
        assert!(v.reasons[0].contains("NaN"), "{:?}", v.reasons);
    }

    #[test]
    fn nan_or_inf_in_the_golden_fails_with_the_count() {
        let got = [1.0, 2.0, 3.0, 4.0];
        for (bad, word) in [
            (f64::NAN, "2 NaN / 0 Inf in the golden"),
            (f64::INFINITY, "0 NaN / 2 Inf in the golden"),
        ] {
            let want = [1.0, bad, 3.0, bad];
            let j = gate(0.9).judge_tensor(&[4], &got, tensor(&[4], &want));
            assert_eq!(j.status, Verdict::Fail);
            assert!(j.reasons[0].contains(word), "{:?}", j.reasons);
            let m = j.metrics.unwrap();
            assert!((m.cosine - 1.0).abs() < 1e-12, "finite pairs agree: {m:?}");
        }
    }

    #[test]
    fn inf_in_the_output_fails() {
        let j = gate(0.9).judge_tensor(&[2], &[f64::NEG_INFINITY, 1.0], tensor(&[2], &[1.0, 1.0]));
        assert_eq!(j.status, Verdict::Fail);
        assert!(
            j.reasons[0].contains("0 NaN / 1 Inf in the output"),
            "{:?}",
            j.reasons
        );
    }

    #[test]
    fn a_shape_mismatch_fails_naming_both_shapes() {
        let j = gate(0.9).judge_tensor(&[2, 2], &[1.0; 4], tensor(&[4], &[1.0; 4]));
        assert_eq!(j.status, Verdict::Fail);
        assert!(j.metrics.is_none());
        assert!(
            j.reasons[0].contains("[2, 2]") && j.reasons[0].contains("[4]"),
            "{:?}",
            j.reasons
        );
    }

    #[test]
    fn a_missing_reference_is_ungated_with_its_reason() {
        let j = gate(0.9).judge_tensor(&[1], &[1.0], Expected::Missing("no golden".into()));
        assert_eq!(j.status, Verdict::Ungated);
        assert_eq!(j.reasons, vec!["no golden".to_string()]);
    }

    #[test]
    fn opposite_sign_fails() {
        let m = compare(&[-1.0, -2.0], &[1.0, 2.0], 0.0, 0.0);
        assert!(!judge(&m, &gate(0.9999)).pass);
    }

    #[test]
    fn a_scaled_output_fails_the_scale_gate_with_a_perfect_cosine() {
        let g = [1.0, -2.0, 3.0, 0.5];
        for k in [1e6, 1e-42, 1.01] {
            let y: Vec<f64> = g.iter().map(|v| v * k).collect();
            let j = gate(0.9999).judge_tensor(&[4], &y, tensor(&[4], &g));
            assert_eq!(j.status, Verdict::Fail, "{k}");
            assert!(j.reasons[0].starts_with("scale:"), "{:?}", j.reasons);
        }
        let y: Vec<f64> = g.iter().map(|v| v * (1.0 + 5e-4)).collect();
        assert_eq!(
            gate(0.9999).judge_tensor(&[4], &y, tensor(&[4], &g)).status,
            Verdict::Pass
        );
    }

    #[test]
    fn tolerances_do_not_gate() {
        // Every element over tolerance, cosine and scale right: the tolerances do not gate.
        let j = gate(0.9999).judge_tensor(&[2], &[1.002, 1.997], tensor(&[2], &[1.0, 2.0]));
        assert_eq!(j.status, Verdict::Pass);
        assert_eq!(j.metrics.unwrap().over_tol, 2);
    }
}
