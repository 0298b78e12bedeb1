//! How one operator's output on a QNN backend is judged against ORT's CPU EP: the bound of
//! each backend (the QNN CPU backend computes in fp32, the HTP in fp16, so their bounds
//! differ), the verdict, and the sentence that says what is wrong.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use xtask_base::vocab::BackendKind;

use xtask_onnx::tensor::Tensor;
use xtask_parity::parity::metrics::{compare, unravel};

/// What a row found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Within the backend's bound.
    Ok,
    /// The reference output lies beyond fp16's range: the HTP cannot hold it at all. Not an
    /// operator fault (`lint-fp16` finds such values in the real graphs).
    Range,
    /// Beyond the backend's bound.
    Deviates,
    /// The backend refused to place or compile the operator.
    Unsupported,
    /// The reference or the backend failed to run it.
    Error,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Range => "range",
            Verdict::Deviates => "DEVIATES",
            Verdict::Unsupported => "UNSUPPORTED",
            Verdict::Error => "ERROR",
        }
    }

    /// What `lint` warns about.
    pub fn is_finding(self) -> bool {
        matches!(
            self,
            Verdict::Deviates | Verdict::Unsupported | Verdict::Error
        )
    }
}

/// The bound of one backend: an output deviates when its largest absolute error exceeds
/// `atol + rtol * max|reference|`, or its relative L2 error exceeds `rel_l2`. Integer outputs
/// must match exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    pub backend: BackendKind,
    pub precision: String,
    pub atol: f64,
    pub rtol: f64,
    pub rel_l2: f64,
    pub why: String,
}

/// The bound of `backend` (`cpu` or `htp`).
pub fn bound(backend: BackendKind) -> Bound {
    if backend == BackendKind::Htp {
        Bound {
            backend,
            precision: "fp16".into(),
            atol: 1e-3,
            rtol: 1e-2,
            rel_l2: 1e-2,
            why: "fp16 rounds each value to 2^-11 ≈ 4.9e-4 relative; inputs, outputs and \
                  intermediates each round once, reductions add √K terms: 1e-2 of the output's \
                  scale leaves room for that and no more"
                .into(),
        }
    } else {
        Bound {
            backend,
            precision: "fp32".into(),
            atol: 1e-6,
            rtol: 1e-5,
            rel_l2: 1e-5,
            why: "fp32 rounds to 2^-24 ≈ 6e-8 relative; another summation order over K terms \
                  moves a result by up to √K·ε (≈ 6e-6 for K = 10^4): 1e-5 of the output's \
                  scale is what an fp32 implementation of the same formula can differ by"
                .into(),
        }
    }
}

/// One output judged.
#[derive(Debug, Clone)]
pub struct Judged {
    pub cosine: f64,
    pub max_abs: f64,
    pub rel_l2: f64,
    /// Non-finite elements in the backend's output and the reference together.
    pub non_finite: usize,
    pub verdict: Verdict,
    pub wrong: String,
}

impl Judged {
    /// A row with no figures (refused, failed): NaN figures are never shown as good ones.
    pub fn failed(verdict: Verdict, wrong: String) -> Self {
        Judged {
            cosine: f64::NAN,
            max_abs: f64::NAN,
            rel_l2: f64::NAN,
            non_finite: 0,
            verdict,
            wrong,
        }
    }
}

/// Judges `actual` (the backend) against `reference` (ORT's CPU EP) for output `name`.
pub fn judge(b: &Bound, name: &str, reference: &Tensor, actual: &Tensor) -> Judged {
    if reference.shape() != actual.shape() {
        return Judged::failed(
            Verdict::Deviates,
            format!(
                "`{name}` has shape {:?}, the reference {:?}",
                actual.shape(),
                reference.shape()
            ),
        );
    }
    let (r, a) = (reference.to_f64_vec(), actual.to_f64_vec());
    let m = compare(&a, &r, 0.0, 0.0);
    let shape = reference.shape();
    let at = |i: usize| format!("{:?}", unravel(i, &shape));
    let mut judged = Judged {
        cosine: m.cosine,
        max_abs: m.max_abs_err,
        rel_l2: m.rel_l2_err,
        non_finite: m.non_finite(),
        verdict: Verdict::Ok,
        wrong: String::new(),
    };
    let peak = r
        .iter()
        .filter(|v| v.is_finite())
        .fold(0.0f64, |p, v| p.max(v.abs()));
    if b.precision == "fp16" && peak > xtask_recipe::fp16::FP16_MAX {
        judged.verdict = Verdict::Range;
        judged.wrong = format!(
            "the reference `{name}` reaches |x| = {peak:.4e}, beyond fp16's 65504: not representable on the HTP"
        );
        return judged;
    }
    // Finite against non-finite differs; two non-finite values agree when both are NaN or
    // both the same infinity.
    let differs = |x: f64, y: f64| {
        if x.is_finite() || y.is_finite() {
            return x.is_finite() != y.is_finite();
        }
        !((x.is_nan() && y.is_nan()) || x == y)
    };
    let mismatched: Vec<usize> = (0..r.len()).filter(|&i| differs(r[i], a[i])).collect();
    if let Some(&first) = mismatched.first() {
        judged.verdict = Verdict::Deviates;
        judged.wrong = format!(
            "{} element(s) of `{name}` are NaN/Inf on one side only (first at {}: reference {}, got {})",
            mismatched.len(),
            at(first),
            value(r[first]),
            value(a[first])
        );
        return judged;
    }
    let float = matches!(reference, Tensor::F32(_) | Tensor::F16(_));
    let tol = if float { b.atol + b.rtol * peak } else { 0.0 };
    let mut over = Vec::new();
    if m.max_abs_err > tol {
        let i = m.max_abs_index;
        over.push(format!(
            "max-abs {:.3e} > {tol:.1e} at {} (reference {}, got {})",
            m.max_abs_err,
            at(i),
            value(r[i]),
            value(a[i])
        ));
    }
    // Errors under `atol` are below what the bound cares about, even when relatively large
    // (an fp16 subnormal); a zero reference has no relative error (rel-L2 is then Inf for any
    // difference, which the absolute bound already judges).
    if float && m.max_abs_err > b.atol && m.rel_l2_err.is_finite() && m.rel_l2_err > b.rel_l2 {
        over.push(format!("rel-L2 {:.3e} > {:.0e}", m.rel_l2_err, b.rel_l2));
    }
    if !over.is_empty() {
        judged.verdict = Verdict::Deviates;
        judged.wrong = format!("`{name}`: {}", over.join("; "));
    }
    judged
}

/// A value as the "what is wrong" text shows it: 6 significant digits, exponent when large or
/// small.
pub fn value(x: f64) -> String {
    if !x.is_finite() || x == 0.0 {
        return format!("{x}");
    }
    if (1e-3..1e5).contains(&x.abs()) {
        format!("{x:.6}")
    } else {
        format!("{x:.5e}")
    }
}

/// The worst-judged output of the node (most severe verdict, then largest rel-L2).
pub(super) fn worst_output(
    backend: BackendKind,
    expected: &BTreeMap<String, Tensor>,
    actual: &BTreeMap<String, Tensor>,
) -> Judged {
    let b = bound(backend);
    expected
        .iter()
        .map(|(name, r)| match actual.get(name) {
            Some(a) => judge(&b, name, r, a),
            None => Judged::failed(Verdict::Error, format!("{backend} returned no `{name}`")),
        })
        .max_by(|x, y| {
            x.verdict
                .cmp(&y.verdict)
                .then(x.rel_l2.total_cmp(&y.rel_l2))
        })
        .unwrap_or_else(|| Judged::failed(Verdict::Error, "the node has no output".into()))
}

/// Whether the HTP's deviation is the fp16 rounding of the inputs themselves: the reference
/// run again on inputs rounded to fp16; when the HTP is within its bound of that, the
/// operator is not at fault (the inputs cannot be told apart in fp16).
pub(super) fn fp16_inputs_explain(
    reference: &mut xtask_runtime::runtime::session::CheckedSession,
    inputs: &BTreeMap<String, Tensor>,
    actual: &BTreeMap<String, Tensor>,
) -> String {
    let rounded: BTreeMap<String, Tensor> = inputs
        .iter()
        .map(|(k, t)| (k.clone(), super::inputs::rounded_to_fp16(t)))
        .collect();
    if rounded == *inputs {
        return "; the inputs are exact in fp16, so the operator itself deviates".into();
    }
    match reference.run(&rounded) {
        Ok(expected) => {
            let again = worst_output(BackendKind::Htp, &expected, actual);
            if again.verdict == Verdict::Ok {
                format!(
                    "; the reference on the inputs rounded to fp16 agrees with the HTP (max-abs {:.2e}): \
                     fp16 cannot resolve these inputs, the operator is not at fault",
                    again.max_abs
                )
            } else {
                "; it deviates from the reference on fp16-rounded inputs too: the operator itself"
                    .into()
            }
        }
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::ArrayD;

    fn t(v: Vec<f32>) -> Tensor {
        Tensor::F32(ArrayD::from_shape_vec(vec![v.len()], v).unwrap())
    }

    #[test]
    fn an_error_beyond_the_fp32_bound_deviates_and_says_where() {
        // 2 + 2^-10: exact in f32, so the error is exactly 9.765625e-4.
        let j = judge(
            &bound(BackendKind::Cpu),
            "y",
            &t(vec![1.0, 2.0]),
            &t(vec![1.0, 2.0009766]),
        );
        assert_eq!(j.verdict, Verdict::Deviates);
        assert!(
            j.wrong.contains("max-abs 9.766e-4 > 2.1e-5 at [1]"),
            "{}",
            j.wrong
        );
        let same = judge(
            &bound(BackendKind::Cpu),
            "y",
            &t(vec![1.0, 2.0]),
            &t(vec![1.0, 2.0]),
        );
        assert_eq!((same.verdict, same.max_abs), (Verdict::Ok, 0.0));
        assert_eq!(
            judge(
                &bound(BackendKind::Htp),
                "y",
                &t(vec![1.0, 2.0]),
                &t(vec![1.0, 2.001])
            )
            .verdict,
            Verdict::Ok
        );
    }

    #[test]
    fn nan_on_one_side_deviates_on_both_agrees_and_fp16_overflow_is_range() {
        let nan = judge(
            &bound(BackendKind::Cpu),
            "y",
            &t(vec![1.0, 2.0]),
            &t(vec![1.0, f32::NAN]),
        );
        assert_eq!(nan.verdict, Verdict::Deviates);
        assert!(nan.wrong.contains("NaN/Inf on one side"), "{}", nan.wrong);
        let both = judge(
            &bound(BackendKind::Cpu),
            "y",
            &t(vec![f32::NAN, 2.0]),
            &t(vec![f32::NAN, 2.0]),
        );
        assert_eq!(both.verdict, Verdict::Ok);
        let big = judge(
            &bound(BackendKind::Htp),
            "y",
            &t(vec![1e5]),
            &t(vec![f32::INFINITY]),
        );
        assert_eq!(big.verdict, Verdict::Range);
    }
}
