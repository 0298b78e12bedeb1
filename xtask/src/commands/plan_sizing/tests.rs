use super::*;
use xtask_base::vocab::Precision;
use xtask_recipe::recipe::MeasuredAtRealSize;

fn measured(layers: u32, htp_parity_s: Option<f64>) -> ComponentEstimate {
    ComponentEstimate {
        layers: 10,
        htp_compile_s_per_layer: Some(1.0),
        htp_parity_s_per_layer: None,
        basis: "per-layer guess".into(),
        quantized: Default::default(),
        measured: Some(MeasuredAtRealSize {
            layers,
            onnx_bytes: 400_000_000,
            dlc_bytes: 400_000_000,
            binary_bytes: 200_000_000,
            peak_rss_mb: 4000.0,
            build_s: 600.0,
            htp_parity_s,
            optimization_level: None,
            basis: "2 cores".into(),
        }),
    }
}

#[test]
fn measured_figures_replace_the_size_model_and_scale_to_the_components_layers() {
    let e = estimate(None, Some(&measured(2, Some(120.0))), 3, Precision::Fp16);
    // 5 x: 2 GB of ONNX (inputs counted twice), 3 GB of outputs, 5 x 4 GB RSS x 1.25
    assert_eq!(e.memory_gb, Some(25.0));
    assert_eq!(e.disk_gb, Some(2.0 + 2.0 * 2.0 + 3.0));
    assert_eq!(e.minutes, Some(SETUP_MINUTES + 5.0 * 720.0 / 60.0));
    assert!(!e.minutes_partial);
    let text = e.basis.join("\n");
    assert!(text.contains("scaled × 5.00 to 10"), "{text}");
    assert!(text.contains("2 cores"), "{text}");
}

#[test]
fn a_quantized_component_is_sized_from_its_own_precisions_figures_or_says_it_is_not() {
    let mut e = measured(10, Some(1000.0));
    let float = estimate(None, Some(&e), 3, Precision::W8a16);
    assert_eq!(
        float.minutes,
        estimate(None, Some(&e), 3, Precision::Fp16).minutes
    );
    assert!(
        float.basis[0].starts_with("the float build's figures: w8a16 not measured"),
        "{:?}",
        float.basis
    );
    let mut q = e.measured.clone().unwrap();
    q.build_s = 60.0;
    q.htp_parity_s = Some(100.0);
    e.quantized.insert(Precision::W8a16, q);
    let w8 = estimate(None, Some(&e), 3, Precision::W8a16);
    assert_eq!(w8.minutes, Some(SETUP_MINUTES + 160.0 / 60.0));
    assert_eq!(w8.basis[0], "w8a16 build measured at the real size");
    // Another precision has no figures of its own: the float ones, said so.
    let w4 = estimate(None, Some(&e), 3, Precision::W4a16);
    assert!(w4.basis[0].contains("w4a16 not measured"), "{:?}", w4.basis);
}

#[test]
fn without_measured_htp_parity_the_duration_is_a_lower_bound() {
    let e = estimate(
        Some((2_000_000_000, 2_100_000_000)),
        Some(&measured(10, None)),
        3,
        Precision::Fp16,
    );
    assert!(e.minutes_partial);
    assert_eq!(e.timeout_minutes(), MAX_JOB_MINUTES);
    assert_eq!(e.disk_gb, Some(2.0 + 2.0 * 2.1 + 3.0));
}

#[test]
fn a_per_layer_htp_parity_completes_a_build_measured_without_one() {
    let mut e = measured(10, None);
    e.htp_parity_s_per_layer = Some(30.0);
    let est = estimate(None, Some(&e), 3, Precision::Fp16);
    assert!(!est.minutes_partial);
    assert_eq!(est.minutes, Some(SETUP_MINUTES + (600.0 + 300.0) / 60.0));
    let text = est.basis.join("\n");
    assert!(
        text.contains("HTP parity 10 layers × 30 s (per-layer guess)"),
        "{text}"
    );
    // The real-size build's own parity wins over the per-layer figure.
    let mut own = measured(10, Some(60.0));
    own.htp_parity_s_per_layer = Some(30.0);
    assert_eq!(
        estimate(None, Some(&own), 3, Precision::Fp16).minutes,
        Some(SETUP_MINUTES + 660.0 / 60.0)
    );
}

#[test]
fn over_six_hours_blocks_hosted_runners_and_names_the_one_that_would_run_it() {
    let mut e = measured(10, None);
    e.htp_parity_s_per_layer = Some(2400.0);
    let est = estimate(None, Some(&e), 3, Precision::Fp16);
    let choice = Runners { large: None }.choose(&est);
    let blocker = choice.blocker.expect("over 6 h");
    assert!(blocker.contains("self-hosted runner"), "{blocker}");
}

#[test]
fn a_build_measured_at_another_o_level_adds_the_recipe_levels_compile() {
    let mut e = measured(10, Some(60.0));
    e.measured.as_mut().unwrap().optimization_level = Some(2);
    let o3 = estimate(None, Some(&e), 3, Precision::Fp16);
    assert_eq!(
        o3.minutes,
        Some(SETUP_MINUTES + (600.0 + 60.0 + 10.0) / 60.0)
    );
    assert!(!o3.minutes_partial);
    let text = o3.basis.join("\n");
    assert!(
        text.contains(
            "compiled at O2; the recipe's O3 compile adds 10 layers × 1 s (per-layer guess)"
        ),
        "{text}"
    );
    // The recipe at the measured level: nothing added.
    assert_eq!(
        estimate(None, Some(&e), 2, Precision::Fp16).minutes,
        Some(SETUP_MINUTES + 660.0 / 60.0)
    );
    // No per-layer compile figure: the duration is only a lower bound.
    e.htp_compile_s_per_layer = None;
    assert!(estimate(None, Some(&e), 3, Precision::Fp16).minutes_partial);
}
