//! Bisect's ranking mode (no `--threshold`): every float tensor of the graph measured (in
//! rounds of `--max-outputs`), and the operators ranked by the error they *introduce*: a node's
//! output rel-L2 divided by the worst rel-L2 among its measured inputs. A threshold on cosine
//! finds nothing when an operator deviates by less than it, and it blames every node after the
//! first one; the ratio names the operator where error appears, however small.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::probe::{Measured, Round};
use xtask_onnx::onnx::proto::OnnxSummary;
use xtask_onnx::tensor::Tensor;
use xtask_recipe::recipe::gate::f64_or_nan;

/// What "exact" is worth in the ratio's denominator on a backend computing in fp32: fp32's
/// machine epsilon. An input measured exact (rel-L2 0, or a graph input, fed identically to
/// both) counts as this much error, so an operator that turns exact inputs into a 1e-3 error
/// introduces ~1e4, while one that passes on an error it got introduces ~1.
pub const EXACT_FLOOR: f64 = f32::EPSILON as f64;

/// The same on an HTP computing in fp16: fp16's unit roundoff (2^-11). Every tensor there is
/// rounded to fp16, so an operator whose output is off by that much from exact inputs is only
/// rounding; with the fp32 floor, such rounding outranked the operator that deviates.
pub const FP16_FLOOR: f64 = 1.0 / 2048.0;

/// The floor for a bisect: fp16's when the backend runs the graph in fp16.
pub fn exact_floor(backend: &xtask_runtime::runtime::Backend, fp16: bool) -> f64 {
    match backend {
        xtask_runtime::runtime::Backend::QnnHtp(_) if fp16 => FP16_FLOOR,
        _ => EXACT_FLOOR,
    }
}

/// One operator's output, ranked by the error it introduced. Figures that are NaN (or, for
/// `introduced`, infinite) are written as JSON null and read back as NaN.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ranked {
    pub tensor: String,
    pub node: String,
    pub op_type: String,
    pub attributes: Vec<(String, String)>,
    #[serde(deserialize_with = "f64_or_nan")]
    pub cosine: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub rel_l2_err: f64,
    /// The measured input with the largest rel-L2 (None: no measured float input).
    pub worst_input: Option<String>,
    #[serde(deserialize_with = "f64_or_nan")]
    pub worst_input_rel_l2: f64,
    /// `rel_l2_err / max(worst_input_rel_l2, floor)` (`exact_floor`).
    #[serde(deserialize_with = "f64_or_nan")]
    pub introduced: f64,
}

/// Measures every candidate tensor, `max_outputs` per round, in topological order.
pub fn measure_all(
    count: usize,
    max_outputs: usize,
    measure: &mut impl FnMut(&[usize]) -> Round,
) -> Result<Measured> {
    let mut measured = Measured::new();
    let all: Vec<usize> = (0..count).collect();
    for chunk in all.chunks(max_outputs.max(1)) {
        for (&i, r) in chunk.iter().zip(measure(chunk)?) {
            if let Some(r) = r {
                measured.insert(i, r);
            }
        }
    }
    Ok(measured)
}

/// The ratio, with the exact floor; a non-finite output error ranks above everything.
pub fn introduced(out_rel_l2: f64, worst_input_rel_l2: f64, floor: f64) -> f64 {
    if !out_rel_l2.is_finite() {
        return f64::INFINITY;
    }
    out_rel_l2 / worst_input_rel_l2.max(floor)
}

/// The `top` measured tensors by error introduced, largest first. Inputs that are weights or
/// were not measured (non-float) are left out; graph inputs count as exact.
pub fn rank(
    graph: &OnnxSummary,
    candidates: &[(usize, String)],
    measured: &Measured,
    golden: &BTreeMap<String, Tensor>,
    top: usize,
    floor: f64,
) -> Vec<Ranked> {
    let position: BTreeMap<&str, usize> = candidates
        .iter()
        .enumerate()
        .map(|(i, (_, n))| (n.as_str(), i))
        .collect();
    let mut ranked: Vec<Ranked> = measured
        .iter()
        .map(|(&i, &(cosine, _, rel))| {
            let node = &graph.nodes[candidates[i].0];
            let worst = node
                .inputs
                .iter()
                .filter(|n| !n.is_empty() && !graph.initializers.contains(n))
                .filter_map(|n| {
                    if golden.contains_key(n) {
                        return Some((n, 0.0));
                    }
                    let m = measured.get(position.get(n.as_str())?)?;
                    Some((n, m.2))
                })
                .max_by(|a, b| a.1.total_cmp(&b.1));
            let worst_rel = worst.map_or(0.0, |w| w.1);
            Ranked {
                tensor: candidates[i].1.clone(),
                node: node.name.clone(),
                op_type: node.op_type.clone(),
                attributes: node
                    .attributes
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_string()))
                    .collect(),
                cosine,
                rel_l2_err: rel,
                worst_input: worst.map(|w| w.0.clone()),
                worst_input_rel_l2: worst_rel,
                introduced: introduced(rel, worst_rel, floor),
            }
        })
        .collect();
    ranked.sort_by(|a, b| b.introduced.total_cmp(&a.introduced));
    ranked.truncate(top);
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_inputs_count_as_the_floor_and_inherited_error_as_one() {
        assert!((introduced(1e-3, 0.0, EXACT_FLOOR) - 1e-3 / EXACT_FLOOR).abs() < 1e-6);
        assert!((introduced(2e-3, 1e-3, EXACT_FLOOR) - 2.0).abs() < 1e-12);
        assert_eq!(introduced(0.0, 1e-3, EXACT_FLOOR), 0.0);
        assert_eq!(introduced(f64::NAN, 0.0, EXACT_FLOOR), f64::INFINITY);
    }

    /// On an fp16 HTP, fp16 rounding of exact inputs (~2^-11) introduces ~1, while an
    /// operator that deviates by 1e-2 still introduces ~20: the culprit outranks the rounding.
    #[test]
    fn the_fp16_floor_ranks_a_deviation_above_rounding() {
        let rounding = introduced(3e-4, 0.0, FP16_FLOOR);
        let culprit = introduced(1e-2, 4e-4, FP16_FLOOR);
        assert!(rounding < 1.0 && culprit > 19.0, "{rounding} {culprit}");
        // With the fp32 floor the rounding would have ranked first.
        assert!(introduced(3e-4, 0.0, EXACT_FLOOR) > introduced(1e-2, 4e-4, EXACT_FLOOR));
    }

    #[test]
    fn measuring_all_goes_in_rounds_of_max_outputs() {
        let mut rounds = Vec::new();
        let mut measure = |p: &[usize]| -> Round {
            rounds.push(p.len());
            Ok(p.iter().map(|&i| Some((1.0, 0.0, i as f64))).collect())
        };
        let m = measure_all(10, 4, &mut measure).unwrap();
        assert_eq!(rounds, vec![4, 4, 2]);
        assert_eq!(m.len(), 10);
    }
}
