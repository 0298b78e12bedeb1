//! A quantized component that fails its own gate (`[quantize.gates.<precision>]`, else the
//! precision's default) at the CPU stage (its QDQ simulation against the float golden): the
//! build stops before its context binary, so by default the search cannot measure it in the
//! chain and says why (`--component-gates enforce`). With `--component-gates report` the
//! component is built again with its gate set at what it measured (the cosine rounded down, the
//! scale error rounded up: `suggested`), measured in the chain, and `--apply` writes that gate
//! with the chain's error as its reason, so the recipe says what was accepted and why.

use serde::{Deserialize, Serialize};

use xtask_base::vocab::Precision;
use xtask_parity::parity::component::ComponentResult;
use xtask_recipe::recipe::quantize::PrecisionGate;

/// What to do with a component that fails its own gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ComponentGates {
    /// The component's configurations are not measured (its build stops at the gate); the
    /// report says which gate and what it measured.
    Enforce,
    /// Measured in the chain anyway, built with its gate at the measured value; `--apply`
    /// writes that gate with the chain's error as the reason.
    Report,
}

impl ComponentGates {
    pub fn label(self) -> &'static str {
        match self {
            ComponentGates::Enforce => "enforce",
            ComponentGates::Report => "report",
        }
    }
}

/// A quantized component's own gate, failed at its CPU stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentGate {
    pub component: String,
    pub precision: Precision,
    /// Where it was measured: the QDQ simulation (ORT CPU EP) against the float golden.
    pub stage: String,
    /// The output with the lowest cosine, and that cosine.
    pub output: String,
    #[serde(deserialize_with = "xtask_recipe::recipe::gate::f64_or_nan")]
    pub cosine: f64,
    /// The gate's cosine.
    #[serde(deserialize_with = "xtask_recipe::recipe::gate::f64_or_nan")]
    pub min_cosine: f64,
    /// The largest | |output| / |golden| - 1 | over the outputs, and the gate's bound.
    #[serde(deserialize_with = "xtask_recipe::recipe::gate::f64_or_nan")]
    pub norm_ratio_error: f64,
    #[serde(deserialize_with = "xtask_recipe::recipe::gate::f64_or_nan")]
    pub max_norm_ratio_error: f64,
    /// The gate's own words, per failing output.
    pub reasons: Vec<String>,
    /// With `--component-gates report`: the gate it was built and measured with (what
    /// `--apply` writes); None when it was not measured in the chain.
    pub measured_with: Option<PrecisionGate>,
}

impl ComponentGate {
    /// The failed gate of `result` (a component's CPU-stage result), or None when it passed.
    pub fn of(result: &ComponentResult, precision: Precision) -> Option<ComponentGate> {
        if result.pass {
            return None;
        }
        let worst = result
            .outputs
            .iter()
            .min_by(|a, b| nan_low(a.metrics.cosine).total_cmp(&nan_low(b.metrics.cosine)))?;
        let norm = result
            .outputs
            .iter()
            .map(|o| (o.metrics.norm_ratio - 1.0).abs())
            .fold(0.0, f64::max);
        Some(ComponentGate {
            component: result.component.clone(),
            precision,
            stage: result
                .stage
                .clone()
                .unwrap_or_else(|| format!("{} backend", result.backend)),
            output: worst.name.clone(),
            cosine: worst.metrics.cosine,
            min_cosine: worst.gate.min_cosine,
            norm_ratio_error: norm,
            max_norm_ratio_error: worst.gate.max_norm_ratio_error,
            reasons: result
                .outputs
                .iter()
                .filter(|o| !o.verdict.pass)
                .map(|o| format!("{}: {}", o.name, o.verdict.reasons.join("; ")))
                .collect(),
            measured_with: None,
        })
    }

    /// The gate that accepts what was measured: the cosine rounded down and the scale error
    /// rounded up to two significant digits of their distance from exact, each only where the
    /// gate failed. None when no gate can accept it (non-finite values).
    pub fn suggested(&self) -> Option<PrecisionGate> {
        let cos_failed = self.cosine.is_nan() || self.cosine < self.min_cosine;
        let norm_failed = self.norm_ratio_error.is_nan()
            || self.max_norm_ratio_error.is_nan()
            || self.norm_ratio_error > self.max_norm_ratio_error;
        if (cos_failed && !self.cosine.is_finite())
            || (norm_failed && !self.norm_ratio_error.is_finite())
        {
            return None;
        }
        let gate = PrecisionGate {
            min_cosine: cos_failed.then(|| cosine_floor(self.cosine)),
            max_norm_ratio_error: norm_failed.then(|| round_up(self.norm_ratio_error)),
            reason: None,
        };
        (gate.min_cosine.is_some() || gate.max_norm_ratio_error.is_some()).then_some(gate)
    }

    /// `action_step w8a16: cosine 0.99998230 < gate 0.9999999 (QDQ simulation (ORT CPU EP))`.
    pub fn summary(&self) -> String {
        let mut parts = vec![format!(
            "cosine {:.8} (`{}`) {} gate {}",
            self.cosine,
            self.output,
            if self.cosine < self.min_cosine {
                "<"
            } else {
                "≥"
            },
            self.min_cosine
        )];
        if self.norm_ratio_error > self.max_norm_ratio_error || self.norm_ratio_error.is_nan() {
            parts.push(format!(
                "scale off by {:.3e} > gate {}",
                self.norm_ratio_error, self.max_norm_ratio_error
            ));
        }
        format!(
            "{} {} failed its component gate at the CPU stage ({}): {}",
            self.component,
            self.precision,
            self.stage,
            parts.join(", ")
        )
    }
}

fn nan_low(v: f64) -> f64 {
    if v.is_nan() { f64::NEG_INFINITY } else { v }
}

/// A cosine rounded down to two significant digits of `1 - cosine`, strictly below it when
/// that is exact (0.9999823 → 0.999982, 0.99887 → 0.9988, 0.95 → 0.949).
pub fn cosine_floor(cosine: f64) -> f64 {
    let gap = 1.0 - cosine;
    if gap.is_nan() || gap <= 0.0 {
        return cosine.min(1.0);
    }
    let decimals = ((-gap.log10()).floor() as i32 + 2).clamp(1, 15);
    let scale = 10f64.powi(decimals);
    let mut v = (cosine * scale).floor() / scale;
    if v >= cosine {
        v -= 1.0 / scale;
    }
    let text = format!("{v:.*}", decimals as usize);
    text.parse::<f64>().unwrap_or(v).max(0.0)
}

/// A positive error rounded up to two significant digits (0.0234 → 0.024, 3.1e-5 → 3.1e-5).
pub fn round_up(v: f64) -> f64 {
    if v.is_nan() || v <= 0.0 {
        return 0.0;
    }
    let decimals = (-v.log10()).floor() as i32 + 2;
    let scale = 10f64.powi(decimals);
    let up = (v * scale).ceil() / scale;
    format!("{up:.*}", decimals.max(0) as usize)
        .parse::<f64>()
        .unwrap_or(up)
        .min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_are_rounded_to_accept_what_was_measured() {
        assert_eq!(cosine_floor(0.9999823), 0.999982);
        assert_eq!(cosine_floor(0.99887), 0.9988);
        assert_eq!(cosine_floor(0.95), 0.949);
        assert_eq!(cosine_floor(0.9985), 0.9984);
        for c in [0.9999823, 0.99887, 0.95, 0.5, 0.99999999] {
            let f = cosine_floor(c);
            assert!(f < c && c - f <= 0.2 * (1.0 - c) + 1e-12, "{c} → {f}");
        }
        assert_eq!(round_up(0.0234), 0.024);
        assert_eq!(round_up(3.1e-5), 3.1e-5);
        assert!(round_up(0.0234) >= 0.0234);
    }
}
