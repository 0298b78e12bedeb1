//! Sizing from figures measured at the real size (`[estimate.<c>.measured]`): the measured
//! peak, bytes and seconds scaled to the component's layers, completed by the per-layer
//! estimate where the measured build lacks a figure (its HTP parity, the recipe's O level).

use super::{Estimate, GB, SETUP_MINUTES};
use xtask_recipe::recipe::{ComponentEstimate, MeasuredAtRealSize};

/// Margin on a measured peak: another machine's allocator and page cache differ.
const MEASURED_MEMORY_MARGIN: f64 = 1.25;

/// The estimate from figures measured at the real size, scaled linearly from the measured
/// layers to the component's (memory and bytes too: weights grow with layers). Inputs on
/// disk (or in a --manifest) replace the measured ONNX bytes.
pub(super) fn from_measured(
    bytes: Option<(u64, u64)>,
    e: &ComponentEstimate,
    m: &MeasuredAtRealSize,
    recipe_level: u8,
) -> Estimate {
    let scale = e.layers as f64 / m.layers.max(1) as f64;
    let scaled = if m.layers == e.layers {
        format!("measured at {} layers", m.layers)
    } else {
        format!(
            "measured at {} layer(s), scaled × {scale:.2} to {} (linear in layers: an assumption)",
            m.layers, e.layers
        )
    };
    let w = bytes.map_or(m.onnx_bytes as f64 * scale / GB, |(w, _)| w as f64 / GB);
    let b = bytes.map_or(w, |(_, b)| b as f64 / GB);
    // The DLC and the binary grow with the weights: their measured bytes per ONNX byte.
    let outputs = w * (m.dlc_bytes + m.binary_bytes) as f64 / m.onnx_bytes.max(1) as f64;
    let memory = m.peak_rss_mb / 1e3 * scale.max(1.0) * MEASURED_MEMORY_MARGIN;
    let disk = 2.0 + 2.0 * b + outputs;
    let (parity_s, parity_text, parity_partial) = htp_parity_seconds(e, m, scale);
    let (level_s, level_basis, level_partial) = other_level_compile(e, m, recipe_level);
    let minutes = SETUP_MINUTES + (m.build_s * scale + parity_s + level_s) / 60.0;
    let mut basis = vec![
        format!(
            "peak memory ≈ {MEASURED_MEMORY_MARGIN} × {:.1} GB measured peak RSS ({scaled})",
            m.peak_rss_mb / 1e3
        ),
        format!(
            "disk ≈ 2 GB tool+runtime + 2 × {b:.2} GB inputs (staged, laid out) + {outputs:.2} GB DLC + context binary (their measured bytes per ONNX byte; {scaled})"
        ),
        format!(
            "duration ≈ {SETUP_MINUTES} min setup (assumed) + build {:.0} s ({scaled}) + HTP parity {parity_text}",
            m.build_s,
        ),
        m.basis.clone(),
    ];
    basis.extend(level_basis);
    if bytes.is_some() {
        basis.push("input bytes from the files on disk or the --manifest".into());
    }
    Estimate {
        memory_gb: Some(memory),
        disk_gb: Some(disk),
        minutes: Some(minutes),
        minutes_partial: parity_partial || level_partial,
        basis,
    }
}

/// Seconds of emulated HTP parity: the real-size build's own, scaled like its build; else
/// the estimate's per-layer figure (measured on a smaller graph of the component) times its
/// layers; else none, and the duration is a lower bound.
fn htp_parity_seconds(
    e: &ComponentEstimate,
    m: &MeasuredAtRealSize,
    scale: f64,
) -> (f64, String, bool) {
    match (m.htp_parity_s, e.htp_parity_s_per_layer) {
        (Some(s), _) => (
            s * scale,
            format!("{s:.0} s (scaled like the build)"),
            false,
        ),
        (None, Some(per)) => (
            e.layers as f64 * per,
            format!("{} layers × {per:.0} s ({})", e.layers, e.basis),
            false,
        ),
        (None, None) => (0.0, "not measured (lower bound)".into(), true),
    }
}

/// The recipe level's compile seconds when the measured build ran at another O level: the
/// estimate's per-layer compile times its layers (the measured build's own compile, a small
/// share at O2, stays counted: the figure errs long). Unknown per-layer figure: a lower bound.
fn other_level_compile(
    e: &ComponentEstimate,
    m: &MeasuredAtRealSize,
    recipe_level: u8,
) -> (f64, Option<String>, bool) {
    match m.optimization_level {
        Some(level) if level != recipe_level => match e.htp_compile_s_per_layer {
            Some(per) => (
                e.layers as f64 * per,
                Some(format!(
                    "the measured build compiled at O{level}; the recipe's O{recipe_level} compile adds {} layers × {per:.0} s ({})",
                    e.layers, e.basis
                )),
                false,
            ),
            None => (
                0.0,
                Some(format!(
                    "the measured build compiled at O{level}; the recipe's O{recipe_level} compile is not measured (lower bound)"
                )),
                true,
            ),
        },
        _ => (0.0, None, false),
    }
}
