//! Tests of the host pipeline's arithmetic (scatter, padding, de-normalisation).

use super::*;

#[test]
fn scatter_adds_at_positions() {
    let prompt = ArrayD::from_elem(IxDyn(&[1, 4, 2]), 1.0f32);
    let embeds = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![10.0, 20.0, 30.0, 40.0]).unwrap();
    let pos = ArrayD::from_shape_vec(IxDyn(&[2]), vec![3i64, 1]).unwrap();
    let h = scatter_image_embeds(&prompt, &embeds, &pos).unwrap();
    assert_eq!(
        h.iter().copied().collect::<Vec<_>>(),
        vec![1.0, 1.0, 31.0, 41.0, 1.0, 1.0, 11.0, 21.0]
    );
}

#[test]
fn scatter_refuses_positions_outside_the_sequence() {
    let prompt = ArrayD::from_elem(IxDyn(&[1, 4, 2]), 0.0f32);
    let embeds = ArrayD::from_elem(IxDyn(&[1, 2]), 1.0f32);
    let pos = ArrayD::from_shape_vec(IxDyn(&[1]), vec![4i64]).unwrap();
    assert!(scatter_image_embeds(&prompt, &embeds, &pos).is_err());
}

#[test]
fn denormalize_clips_and_passes_the_gripper() {
    use DimMode::{ClipDenorm, Pass};
    let a = ArrayD::from_shape_vec(IxDyn(&[1, 1, 3]), vec![2.0f32, 0.0, 0.7]).unwrap();
    let q01 = ArrayD::from_shape_vec(IxDyn(&[3]), vec![-2.0f32, 0.0, 5.0]).unwrap();
    let q99 = ArrayD::from_shape_vec(IxDyn(&[3]), vec![2.0f32, 10.0, 6.0]).unwrap();
    let out = denormalize(&a, &q01, &q99, &[ClipDenorm, ClipDenorm, Pass]).unwrap();
    assert_eq!(out.iter().copied().collect::<Vec<_>>(), vec![2.0, 5.0, 0.7]);
}

#[test]
fn each_dim_is_clipped_and_de_normalised_as_its_mode_says() {
    use DimMode::{Clip, ClipDenorm, Denorm, Pass};
    // Every value outside [-1, 1], so clipping shows; q01/q99 = 0/10 everywhere.
    let a = ArrayD::from_shape_vec(
        IxDyn(&[1, 2, 4]),
        vec![1.5f32, 1.5, 1.5, 1.5, -3.0, -3.0, -3.0, -3.0],
    )
    .unwrap();
    let q01 = ArrayD::from_elem(IxDyn(&[4]), 0.0f32);
    let q99 = ArrayD::from_elem(IxDyn(&[4]), 10.0f32);
    let out = denormalize(&a, &q01, &q99, &[ClipDenorm, Clip, Denorm, Pass]).unwrap();
    assert_eq!(
        out.iter().copied().collect::<Vec<_>>(),
        // clip+denorm: 1 -> 10, -1 -> 0; clip: 1, -1; denorm: 12.5, -10; pass: as is
        vec![10.0, 1.0, 12.5, 1.5, 0.0, -1.0, -10.0, -3.0]
    );
    assert!(denormalize(&a, &q01, &q99, &[Clip; 3]).is_err());
}

#[test]
fn padded_dims_are_zeroed() {
    let mut x = ArrayD::from_elem(IxDyn(&[1, 2, 3]), 1.0f32);
    let pad = ArrayD::from_shape_vec(IxDyn(&[1, 3]), vec![0.0f32, 1.0, 1.0]).unwrap();
    zero_padded_dims(&mut x, &pad).unwrap();
    assert_eq!(
        x.iter().copied().collect::<Vec<_>>(),
        vec![1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    );
}
