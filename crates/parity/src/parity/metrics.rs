//! Parity metrics: pure functions over slices, accumulated in f64, NaN/Inf counted. The gate
//! that judges them is `parity::gate`.

use serde::{Deserialize, Serialize};

fn nan() -> f64 {
    f64::NAN
}

pub use xtask_recipe::recipe::gate::f64_or_nan;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    #[serde(deserialize_with = "f64_or_nan")]
    pub cosine: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub max_abs_err: f64,
    /// Flat (row-major) index of the largest absolute error.
    pub max_abs_index: usize,
    #[serde(deserialize_with = "f64_or_nan")]
    pub mean_abs_err: f64,
    /// ||actual - expected|| / ||expected||.
    #[serde(deserialize_with = "f64_or_nan")]
    pub rel_l2_err: f64,
    /// ||actual|| / ||expected|| over the finite pairs: 1 when the scale is right; a global
    /// scale error (a lost 1/sqrt(d), a wrong unit) moves it while the cosine stays 1. NaN in
    /// reports written before it existed.
    #[serde(default = "nan", deserialize_with = "f64_or_nan")]
    pub norm_ratio: f64,
    /// Every element within `atol + rtol * |expected|` (informational, never the gate).
    pub within_tol: bool,
    /// Elements over that tolerance.
    pub over_tol: usize,
    pub nan_actual: usize,
    pub inf_actual: usize,
    pub nan_expected: usize,
    pub inf_expected: usize,
    pub elements: usize,
}

impl Metrics {
    /// Non-finite elements in the output or the golden.
    pub fn non_finite(&self) -> usize {
        self.nan_actual + self.inf_actual + self.nan_expected + self.inf_expected
    }

    /// The cosine as reports show it: never a good-looking number when NaN or Inf were left
    /// out of the sums (the figure would then describe only the finite part).
    pub fn shown_cosine(&self) -> String {
        if self.non_finite() == 0 {
            return xtask_runtime::report::fmt_cosine(self.cosine);
        }
        format!(
            "NaN/Inf ({} NaN, {} Inf out; {} NaN, {} Inf golden)",
            self.nan_actual, self.inf_actual, self.nan_expected, self.inf_expected
        )
    }
}

/// Compares `actual` against `expected`. Non-finite elements are counted and left out of the
/// sums, so one NaN cannot hide behind a NaN cosine; the gate fails on any of them.
pub fn compare(actual: &[f64], expected: &[f64], atol: f64, rtol: f64) -> Metrics {
    assert_eq!(actual.len(), expected.len(), "compare: length mismatch");
    let mut m = Metrics {
        cosine: 0.0,
        max_abs_err: 0.0,
        max_abs_index: 0,
        mean_abs_err: 0.0,
        rel_l2_err: 0.0,
        norm_ratio: 1.0,
        within_tol: true,
        over_tol: 0,
        nan_actual: 0,
        inf_actual: 0,
        nan_expected: 0,
        inf_expected: 0,
        elements: actual.len(),
    };
    let (mut dot, mut na, mut ne, mut diff2, mut abs_sum) =
        (0.0f64, 0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let mut finite_pairs = 0usize;
    for (i, (&a, &e)) in actual.iter().zip(expected).enumerate() {
        m.nan_actual += usize::from(a.is_nan());
        m.inf_actual += usize::from(a.is_infinite());
        m.nan_expected += usize::from(e.is_nan());
        m.inf_expected += usize::from(e.is_infinite());
        if !(a.is_finite() && e.is_finite()) {
            continue;
        }
        finite_pairs += 1;
        let d = a - e;
        dot += a * e;
        na += a * a;
        ne += e * e;
        diff2 += d * d;
        abs_sum += d.abs();
        if d.abs() > m.max_abs_err {
            m.max_abs_err = d.abs();
            m.max_abs_index = i;
        }
        if d.abs() > atol + rtol * e.abs() {
            m.over_tol += 1;
        }
    }
    m.within_tol = m.over_tol == 0;
    m.mean_abs_err = if finite_pairs > 0 {
        abs_sum / finite_pairs as f64
    } else {
        f64::NAN
    };
    m.cosine = cosine_from_sums(dot, na, ne);
    m.norm_ratio = match (na == 0.0, ne == 0.0) {
        (true, true) => 1.0,
        (false, true) => f64::INFINITY,
        _ => na.sqrt() / ne.sqrt(),
    };
    m.rel_l2_err = if ne > 0.0 {
        (diff2 / ne).sqrt()
    } else if diff2 == 0.0 {
        0.0
    } else {
        f64::INFINITY
    };
    m
}

/// Two all-zero tensors are identical (cosine 1); one all-zero tensor against a non-zero one
/// has no direction in common (cosine 0).
fn cosine_from_sums(dot: f64, na: f64, ne: f64) -> f64 {
    match (na == 0.0, ne == 0.0) {
        (true, true) => 1.0,
        (true, false) | (false, true) => 0.0,
        _ => (dot / (na.sqrt() * ne.sqrt())).clamp(-1.0, 1.0),
    }
}

/// Converts a flat index into a multi-dimensional one for reports.
pub fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (d, &n) in shape.iter().enumerate().rev() {
        if n > 0 {
            idx[d] = flat % n;
            flat /= n;
        }
    }
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_tensors_are_perfect() {
        let x = [1.0, -2.0, 3.0];
        let m = compare(&x, &x, 0.0, 0.0);
        assert_eq!(m.cosine, 1.0);
        assert_eq!(m.max_abs_err, 0.0);
        assert!(m.within_tol);
    }

    #[test]
    fn max_error_and_index_are_reported() {
        let m = compare(&[1.0, 2.5, 3.0], &[1.0, 2.0, 3.0], 1e-4, 0.0);
        assert_eq!(m.max_abs_index, 1);
        assert!((m.max_abs_err - 0.5).abs() < 1e-12);
        assert_eq!(m.over_tol, 1);
        assert!(!m.within_tol);
        assert!((m.mean_abs_err - 0.5 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn non_finite_pairs_are_counted_and_left_out() {
        let m = compare(&[1.0, f64::NAN, 3.0], &[1.0, 2.0, f64::INFINITY], 1e-4, 0.0);
        assert_eq!((m.nan_actual, m.inf_expected), (1, 1));
        assert_eq!(m.cosine, 1.0);
    }

    #[test]
    fn opposite_sign_gives_negative_cosine() {
        let m = compare(&[-1.0, -2.0], &[1.0, 2.0], 0.0, 0.0);
        assert!((m.cosine + 1.0).abs() < 1e-12);
    }

    #[test]
    fn cosine_accumulates_in_f64() {
        // a = [1e4, +1 x N], e = [1e4, -1 x N], N = 10_000. Exactly:
        //   a.e = 1e8 - N, |a|^2 = |e|^2 = 1e8 + N, so cos = (1e8 - N) / (1e8 + N) = 9999/10001
        //   = 0.99980002 -- below the default gate 0.9999.
        // In f32, 1e8 is exact but its neighbours are 8 apart (2^26 <= 1e8 < 2^27, 23-bit
        // mantissa), so every +-1 term rounds away: an f32 accumulator ends at 1e8 for all three
        // sums and reports cos = 1e8 / (1e4 * 1e4) = 1.0 exactly, a pass. Checked below too.
        const N: usize = 10_000;
        let mut a = vec![1e4];
        a.extend(std::iter::repeat_n(1.0, N));
        let mut e = vec![1e4];
        e.extend(std::iter::repeat_n(-1.0, N));
        let exact = 9999.0 / 10001.0;
        let m = compare(&a, &e, 0.0, 0.0);
        assert!((m.cosine - exact).abs() < 1e-12, "{} vs {exact}", m.cosine);
        assert!(m.cosine < xtask_recipe::recipe::DEFAULT_MIN_COSINE);

        let (mut dot, mut na, mut ne) = (0.0f32, 0.0f32, 0.0f32);
        for (&x, &y) in a.iter().zip(&e) {
            let (x, y) = (x as f32, y as f32);
            dot += x * y;
            na += x * x;
            ne += y * y;
        }
        let f32_cosine = f64::from(dot / (na.sqrt() * ne.sqrt()));
        assert_eq!(f32_cosine, 1.0, "an f32 accumulator misses the difference");
        assert!((f32_cosine - exact).abs() > 1e-4);
    }

    #[test]
    fn zero_tensors() {
        assert_eq!(compare(&[0.0, 0.0], &[0.0, 0.0], 0.0, 0.0).cosine, 1.0);
        assert_eq!(compare(&[0.0, 0.0], &[1.0, 0.0], 0.0, 0.0).cosine, 0.0);
    }

    #[test]
    fn the_norm_ratio_sees_a_scale_the_cosine_cannot() {
        let g = [1.0, -2.0, 3.0];
        let scaled: Vec<f64> = g.iter().map(|v| v * 1e6).collect();
        let m = compare(&scaled, &g, 0.0, 0.0);
        assert!((m.cosine - 1.0).abs() < 1e-12);
        assert!((m.norm_ratio - 1e6).abs() < 1e-3);
        assert_eq!(compare(&[0.0], &[0.0], 0.0, 0.0).norm_ratio, 1.0);
        assert_eq!(compare(&[1.0], &[0.0], 0.0, 0.0).norm_ratio, f64::INFINITY);
    }

    #[test]
    fn unravel_row_major() {
        assert_eq!(unravel(7, &[2, 3, 2]), vec![1, 0, 1]);
    }
}
