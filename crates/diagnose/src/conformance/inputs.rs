//! The input sets every operator is run with. Only float data inputs change between sets:
//! integer inputs (indices, shapes) keep the values the graph gives them and constants stay as
//! the graph holds them, so every set is an input the operator could really be given.

use ndarray::ArrayD;

use xtask_onnx::onnx::writer::seeded_weights;
use xtask_onnx::tensor::Tensor;

/// The magnitude of the `large` set: far beyond typical activations, inside fp16's range.
pub const LARGE: f32 = 1e4;

/// (name, what it is), in the order rows are reported.
pub const INPUT_SETS: [(&str, &str); 6] = [
    (
        "real",
        "the values the node sees when its graph runs the golden inputs on ORT's CPU EP",
    ),
    (
        "random",
        "the real values in a seeded random order, each scaled by a seeded factor in [0.5, 1]: the same distribution at other positions",
    ),
    ("zeros", "every float data input zero"),
    ("negative", "the `random` values made negative (-|x|)"),
    ("large", "the real values scaled to max |x| = 1e4"),
    (
        "fp16-max",
        "the real values scaled to max |x| = 65504, fp16's largest finite value",
    ),
];

/// The float data input `real` as input set `set`; None for a set this module does not know
/// or a tensor that is not float.
pub fn make(set: &str, real: &Tensor, seed: u64) -> Option<Tensor> {
    let values: Vec<f32> = match real {
        Tensor::F32(a) => a.iter().copied().collect(),
        Tensor::F16(a) => a.iter().map(|v| v.to_f32()).collect(),
        _ => return None,
    };
    let peak = values
        .iter()
        .filter(|v| v.is_finite())
        .fold(0.0f32, |m, v| m.max(v.abs()));
    // The real values in another order, each scaled by a factor in [0.5, 1]: the same
    // distribution (signs, masks, outliers) at other positions, never beyond the real range.
    let shuffled = || -> Vec<f32> {
        if peak == 0.0 {
            return seeded_weights(values.len(), seed, 1.0);
        }
        let noise = seeded_weights(2 * values.len(), seed, 1.0);
        let mut out = values.clone();
        for i in (1..out.len()).rev() {
            let j = ((noise[i] * 0.5 + 0.5) * (i + 1) as f32) as usize;
            out.swap(i, j.min(i));
        }
        out.iter()
            .zip(&noise[values.len()..])
            .map(|(v, u)| v * (0.75 + 0.25 * u))
            .collect()
    };
    // Scaled so the largest magnitude is exactly `to` (clamped: the product may round past it).
    let scaled = |to: f32| -> Vec<f32> {
        let base = if peak > 0.0 {
            values.iter().map(|v| v * (to / peak)).collect()
        } else {
            seeded_weights(values.len(), seed, to)
        };
        base.into_iter().map(|v| v.clamp(-to, to)).collect()
    };
    let out: Vec<f32> = match set {
        "real" => values.clone(),
        "random" => shuffled(),
        "zeros" => vec![0.0; values.len()],
        "negative" => shuffled().into_iter().map(|v| -v.abs()).collect(),
        "large" => scaled(LARGE),
        "fp16-max" => scaled(xtask_recipe::fp16::FP16_MAX as f32),
        _ => return None,
    };
    let shape = real.shape();
    Some(match real {
        Tensor::F16(_) => Tensor::F16(
            ArrayD::from_shape_vec(shape, out.into_iter().map(half::f16::from_f32).collect())
                .ok()?,
        ),
        _ => Tensor::F32(ArrayD::from_shape_vec(shape, out).ok()?),
    })
}

/// The tensor as the HTP holds it: float values rounded to fp16 and back (others as they are).
pub fn rounded_to_fp16(t: &Tensor) -> Tensor {
    match t {
        Tensor::F32(a) => Tensor::F32(a.mapv(|v| half::f16::from_f32(v).to_f32())),
        other => other.clone(),
    }
}

/// A seed for one input of one operator in one set, from the sweep's seed: stable across runs
/// and independent of the order operators are visited in.
pub fn seed_for(seed: u64, key: &str, input: usize, set: &str) -> u64 {
    let digest =
        xtask_base::hashing::sha256_bytes(format!("{seed}/{key}/{input}/{set}").as_bytes());
    u64::from_str_radix(&digest[..16], 16).unwrap_or(seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: Vec<f32>) -> Tensor {
        Tensor::F32(ArrayD::from_shape_vec(vec![v.len()], v).unwrap())
    }

    fn values(t: &Tensor) -> Vec<f64> {
        t.to_f64_vec()
    }

    #[test]
    fn sets_keep_the_domain_and_scale_of_the_real_values() {
        let real = t(vec![0.5, 2.0, 1.0, 0.0]);
        let random = make("random", &real, 7).unwrap();
        assert!(values(&random).iter().all(|v| (0.0..=2.0).contains(v)));
        assert_ne!(random, real);
        assert_eq!(random, make("random", &real, 7).unwrap(), "seeded");
        assert!(
            values(&make("negative", &real, 7).unwrap())
                .iter()
                .all(|v| *v <= 0.0)
        );
        let top = |s: &str| {
            values(&make(s, &real, 7).unwrap())
                .iter()
                .fold(0.0f64, |m, v| m.max(v.abs()))
        };
        assert_eq!(top("fp16-max"), 65504.0);
        assert_eq!(top("large"), 1e4);
        assert_eq!(top("zeros"), 0.0);
        assert_eq!(make("real", &real, 7).unwrap(), real);
        let ints = Tensor::I64(ArrayD::from_shape_vec(vec![1], vec![3]).unwrap());
        assert!(make("random", &ints, 7).is_none());
    }

    #[test]
    fn seeds_differ_per_input_and_set() {
        assert_ne!(seed_for(1, "k", 0, "random"), seed_for(1, "k", 1, "random"));
        assert_ne!(
            seed_for(1, "k", 0, "random"),
            seed_for(1, "k", 0, "negative")
        );
        assert_eq!(seed_for(1, "k", 0, "random"), seed_for(1, "k", 0, "random"));
    }
}
