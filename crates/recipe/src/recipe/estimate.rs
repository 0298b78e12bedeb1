//! `[estimate.<component>]` of `model.toml`: what a component's CI job's duration and size
//! are estimated from (`plan --json`), measured per layer or at the bundle's real size.

use serde::Deserialize;

/// Measured per-layer durations of a component's slow steps, with where they were measured;
/// `plan --json` multiplies them by `layers` (absent figures are reported as unknown).
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentEstimate {
    pub layers: u32,
    /// Seconds of HTP context compilation per layer.
    #[serde(default)]
    pub htp_compile_s_per_layer: Option<f64>,
    /// Seconds of HTP parity (emulated on x86_64) per layer; with `measured`, used when the
    /// real-size build's own HTP parity was not measured (a smaller graph's, per layer).
    #[serde(default)]
    pub htp_parity_s_per_layer: Option<f64>,
    /// Where the figures come from (printed with the estimate).
    pub basis: String,
    /// Figures measured at the bundle's real size (`cargo xtask bench build --real-size`):
    /// when present, `plan --json` sizes the job from them instead of the size model.
    #[serde(default)]
    pub measured: Option<MeasuredAtRealSize>,
    /// The same figures for a quantized build (`[estimate.<c>.quantized.w8a16]`): used when
    /// the component's `[quantize] precision` is that one. `dlc_bytes` then counts the QDQ
    /// ONNX and the quantized DLC, `build_s` the quantize step too.
    #[serde(default)]
    pub quantized: std::collections::BTreeMap<xtask_base::vocab::Precision, MeasuredAtRealSize>,
}

/// One component measured at the real size on a named machine; `plan --json` scales the
/// seconds linearly from `layers` to the estimate's `layers` (stated in its basis).
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct MeasuredAtRealSize {
    /// Layers of the graph that was measured.
    pub layers: u32,
    /// ONNX + external-data bytes of the component's graph at `layers`.
    pub onnx_bytes: u64,
    /// Bytes of the DLC and of the context binary the build wrote.
    pub dlc_bytes: u64,
    pub binary_bytes: u64,
    /// The largest peak resident memory of the build's steps and of HTP parity, MB.
    pub peak_rss_mb: f64,
    /// Wall seconds of convert + CPU parity + context compile (one cold `build-ctx`).
    pub build_s: f64,
    /// Wall seconds of `parity --backend htp` (emulated), when measured.
    #[serde(default)]
    pub htp_parity_s: Option<f64>,
    /// The compile's O level when it was not the recipe's (vision's 10-layer build ran at O2:
    /// its O3 compile does not finish on 2 cores). The plan then adds the recipe level's
    /// compile from the estimate's `htp_compile_s_per_layer`.
    #[serde(default)]
    pub optimization_level: Option<u8>,
    /// The machine and command (printed with the estimate).
    pub basis: String,
}

/// `[chain_estimate]` of `model.toml`: the whole chain's run on the HTP (`run --backend htp
/// --iters 1 --warmup 0`) as `cargo xtask bench real-size` measured it, which sizes the
/// regeneration workflow's chain job (`plan --chain`).
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChainEstimate {
    /// The precision the chain was measured at (`w8a16`, `mixed`).
    pub precision: String,
    /// Peak RSS of the chain run's process tree, MB.
    pub peak_rss_mb: f64,
    /// Wall seconds of the chain run.
    pub wall_s: f64,
    /// Bytes on disk the chain job holds: the inputs it fetches and the binaries.
    pub disk_bytes: u64,
    /// The machine, the command and the date (printed with the estimate).
    pub basis: String,
}
