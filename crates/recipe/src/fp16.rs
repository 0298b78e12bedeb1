//! fp16 hazards, found before the NPU finds them. The HTP runs these graphs in fp16 (largest
//! finite value 65504): an additive mask at or below about -1e5 (PyTorch uses the f32 minimum)
//! inverts on the HTP, and values beyond 65504 overflow. Tensors the recipe marks `mask = true`
//! are clamped to -65504 before the HTP sees them; anything else out of range is an offender.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::recipe::Component;
use xtask_onnx::tensor::Tensor;

pub const FP16_MAX: f64 = 65504.0;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Fp16Finding {
    pub tensor: String,
    pub kind: String,
    pub max_abs: f64,
    pub min: f64,
    pub status: String,
    pub offender: bool,
    /// The golden file a golden tensor comes from (None for intermediates).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// Looks at one tensor: its largest magnitude and what fp16 makes of it.
pub fn scan(tensor: &str, kind: &str, t: &Tensor, is_mask: bool) -> Option<Fp16Finding> {
    if !matches!(t, Tensor::F32(_) | Tensor::F16(_)) {
        return None;
    }
    let values = t.to_f64_vec();
    let nan = values.iter().filter(|v| v.is_nan()).count();
    let pos_inf = values.iter().filter(|v| **v == f64::INFINITY).count();
    let neg_inf = values.iter().filter(|v| **v == f64::NEG_INFINITY).count();
    // NaN is skipped by max/min (f64::max ignores it), so it is looked for on its own.
    let max_abs = values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let (status, offender) = if nan > 0 || pos_inf > 0 || (neg_inf > 0 && !is_mask) {
        (
            format!(
                "holds {nan} NaN, {} Inf: no backend can be compared on it (fix the golden)",
                pos_inf + neg_inf
            ),
            true,
        )
    } else if is_mask && min < -FP16_MAX {
        (
            format!("mask below -65504 (min {min:.3e}): clamped to -65504 before the HTP"),
            false,
        )
    } else if max_abs > FP16_MAX {
        let why = if min < -1e5 {
            "looks like an unmarked mask: mark it `mask = true` in the recipe to clamp it"
        } else {
            "overflows fp16 on the HTP"
        };
        (format!("beyond fp16 range: {why}"), true)
    } else if max_abs > FP16_MAX / 4.0 {
        ("within a factor 4 of fp16's limit".into(), false)
    } else {
        ("ok".into(), false)
    };
    Some(Fp16Finding {
        tensor: tensor.into(),
        kind: kind.into(),
        max_abs,
        min,
        status,
        offender,
        file: None,
    })
}

/// Every golden input and output of a component, scanned.
pub fn scan_golden(
    comp: &Component,
    inputs: &BTreeMap<String, Tensor>,
    outputs: &BTreeMap<String, Tensor>,
) -> Vec<Fp16Finding> {
    let is_mask = |name: &str| {
        comp.file
            .inputs
            .iter()
            .any(|s| s.name.get_ref() == name && s.mask)
    };
    let ins = inputs
        .iter()
        .filter_map(|(n, t)| scan(n, "input", t, is_mask(n)));
    let outs = outputs
        .iter()
        .filter_map(|(n, t)| scan(n, "output", t, false));
    let file = comp.file.golden.file.display().to_string();
    ins.chain(outs)
        .map(|f| Fp16Finding {
            file: Some(file.clone()),
            ..f
        })
        .collect()
}

/// The inputs an HTP run is fed: masks clamped to fp16's range unless `clamp` is off
/// (`--no-clamp`), otherwise the golden inputs as they are.
pub fn htp_inputs(
    comp: &Component,
    inputs: &BTreeMap<String, Tensor>,
    clamp: bool,
) -> BTreeMap<String, Tensor> {
    if clamp {
        clamp_masks(comp, inputs)
    } else {
        inputs.clone()
    }
}

/// Inputs with every `mask = true` tensor clamped to fp16's most negative finite value.
pub fn clamp_masks(
    comp: &Component,
    inputs: &BTreeMap<String, Tensor>,
) -> BTreeMap<String, Tensor> {
    clamp_masks_at(comp, inputs, -FP16_MAX as f32)
}

/// Inputs with every `mask = true` tensor clamped to at least `floor`.
pub fn clamp_masks_at(
    comp: &Component,
    inputs: &BTreeMap<String, Tensor>,
    floor: f32,
) -> BTreeMap<String, Tensor> {
    inputs
        .iter()
        .map(|(name, t)| {
            let marked = comp
                .file
                .inputs
                .iter()
                .any(|s| s.name.get_ref() == name && s.mask);
            let t = match t {
                Tensor::F32(a) if marked => Tensor::F32(a.mapv(|v| v.max(floor))),
                other => other.clone(),
            };
            (name.clone(), t)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::ArrayD;

    fn t(values: Vec<f32>) -> Tensor {
        Tensor::F32(ArrayD::from_shape_vec(vec![values.len()], values).unwrap())
    }

    #[test]
    fn an_unmarked_f32_min_mask_is_an_offender_and_a_marked_one_is_clamped() {
        let mask = t(vec![0.0, f32::MIN]);
        assert!(scan("bias", "input", &mask, false).unwrap().offender);
        let marked = scan("bias", "input", &mask, true).unwrap();
        assert!(!marked.offender && marked.status.contains("clamped"));
    }

    #[test]
    fn values_within_range_are_fine() {
        let f = scan("h", "output", &t(vec![1.0, -20000.0]), false).unwrap();
        assert!(!f.offender);
        assert_eq!(f.max_abs, 20000.0);
        assert!(f.status.contains("factor 4"));
    }

    #[test]
    fn nan_and_inf_in_a_golden_are_offenders_named_with_their_file() {
        let t = Tensor::F32(
            ndarray::ArrayD::from_shape_vec(vec![3], vec![1.0, f32::NAN, 2.0]).unwrap(),
        );
        let f = scan("x", "input", &t, false).unwrap();
        assert!(f.offender && f.status.contains("1 NaN"), "{f:?}");
        let m = Tensor::F32(
            ndarray::ArrayD::from_shape_vec(vec![2], vec![0.0, f32::NEG_INFINITY]).unwrap(),
        );
        assert!(
            !scan("mask", "input", &m, true).unwrap().offender,
            "-inf in a marked mask is clamped"
        );
        assert!(scan("bias", "input", &m, false).unwrap().offender);
    }
}
