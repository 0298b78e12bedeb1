//! Latency figures: percentiles of a chain run per component and end to end, and the
//! execute-time distribution of a profiled QNN run (SDK or device). One home for both, below
//! the chain, the toolchains and the device, which all report them.

use std::collections::BTreeMap;

use serde::Serialize;

use xtask_recipe::recipe::gate::f64_or_nan;

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct LatencyStats {
    pub name: String,
    pub samples: usize,
    #[serde(deserialize_with = "f64_or_nan")]
    pub min_ms: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub p50_ms: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub p90_ms: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub p99_ms: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub max_ms: f64,
    /// Every timed sample in the order it was measured (the percentiles above hide how few
    /// there may be; the HTML draws them as a distribution).
    #[serde(deserialize_with = "xtask_recipe::recipe::gate::vec_f64_or_nan")]
    pub samples_ms: Vec<f64>,
}

impl LatencyStats {
    pub fn of(name: &str, samples: &[f64]) -> Self {
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        let pct = |p: f64| {
            v.get(((p / 100.0) * (v.len() - 1) as f64).round() as usize)
                .copied()
                .unwrap_or(f64::NAN)
        };
        LatencyStats {
            name: name.into(),
            samples: v.len(),
            min_ms: v.first().copied().unwrap_or(f64::NAN),
            p50_ms: pct(50.0),
            p90_ms: pct(90.0),
            p99_ms: pct(99.0),
            max_ms: v.last().copied().unwrap_or(f64::NAN),
            samples_ms: samples.to_vec(),
        }
    }

    /// One entry per component in pipeline order, then `end-to-end`.
    pub fn per_component(
        order: &[&str],
        run_ms: &BTreeMap<String, Vec<f64>>,
        chain_ms: &[f64],
    ) -> Vec<LatencyStats> {
        let mut out: Vec<LatencyStats> = order
            .iter()
            .filter_map(|n| run_ms.get(*n).map(|s| LatencyStats::of(n, s)))
            .collect();
        out.push(LatencyStats::of("end-to-end", chain_ms));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_known_samples() {
        let s: Vec<f64> = (1..=100).map(f64::from).collect();
        let l = LatencyStats::of("x", &s);
        assert_eq!((l.min_ms, l.max_ms), (1.0, 100.0));
        assert!(
            (l.p50_ms - 51.0).abs() <= 1.0 && (l.p99_ms - 99.0).abs() <= 1.0,
            "{l:?}"
        );
    }
}

/// The distribution of the per-inference execute times of one `qnn-net-run` call, in µs.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ExecuteStats {
    /// Which rows were read (`NETRUN` for `qnn-net-run`, see `toolchain::sdk::profile`).
    pub timing_source: String,
    pub samples: usize,
    /// NaN without samples, written as null (read back as NaN).
    #[serde(deserialize_with = "f64_or_nan")]
    pub min_us: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub p50_us: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub p90_us: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub p99_us: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub max_us: f64,
}

impl ExecuteStats {
    /// Percentiles as the embedded runtime's chain latency computes them.
    pub fn of(timing_source: &str, samples_us: &[f64]) -> Self {
        let l = LatencyStats::of(timing_source, samples_us);
        ExecuteStats {
            timing_source: timing_source.into(),
            samples: l.samples,
            min_us: l.min_ms,
            p50_us: l.p50_ms,
            p90_us: l.p90_ms,
            p99_us: l.p99_ms,
            max_us: l.max_ms,
        }
    }
}
