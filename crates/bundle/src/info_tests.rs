use super::*;
use xtask_ctx_build::facts::ToolchainUsed;

/// The versions an embedded build's context record holds.
pub(crate) fn versions(qnn: &str, xtask: &str) -> ToolVersions {
    ToolVersions {
        onnxruntime: "1.23.2".into(),
        qnn: qnn.into(),
        toolchain: ToolchainUsed::embedded(),
        xtask: xtask.into(),
        libraries: String::new(),
    }
}

/// A component whose context record holds `built_with`.
pub(crate) fn component(name: &str, built_with: ToolVersions) -> BundleComponent {
    BundleComponent {
        name: name.into(),
        description: format!("the {name} graph"),
        inputs: vec![("x".into(), vec![1, 4], "float32".into())],
        outputs: vec![("y".into(), vec![1, 4], "float32".into())],
        cpu_cosine: vec![("y".into(), 0.99999)],
        graph_name: name.into(),
        ep_sdk_version: Some(built_with.qnn.clone()),
        bin_file: format!("{name}_socid77_archv73.bin"),
        bin_bytes: 2_000_000,
        optimization_level: 3,
        fp16: true,
        vtcm_mb: 0,
        toolchain: built_with.toolchain.clone(),
        float_bitwidth: 32,
        dlc_validation: "structure only".into(),
        rewrites: None,
        record_schema: xtask_ctx_build::facts::RECORD_SCHEMA,
        built_with,
        recipe_sha256: "a".repeat(64),
        onnx_sha256: "b".repeat(64),
        golden_sha256: "c".repeat(64),
        waivers: Vec::new(),
        quantized: None,
    }
}

/// `bundle.json` of these components, its build facts derived as `package` derives them.
pub(crate) fn info(components: Vec<BundleComponent>) -> BundleInfo {
    BundleInfo {
        schema_version: BundleInfo::SCHEMA,
        model: "tiny".into(),
        description: "A tiny model.".into(),
        soc_id: 77,
        soc_chips: vec!["QCS9075".into()],
        htp_arch: 73,
        built_by: BuiltBy::of_components(&components),
        toolchain: "embedded".into(),
        commit: "0123abcd".into(),
        allow_stale: false,
        stale: Vec::new(),
        unverified_inputs: None,
        htp_unmeasured: Vec::new(),
        chain_unmeasured: None,
        components,
        files: Vec::new(),
    }
}

#[test]
fn the_qairt_shown_is_the_release_of_the_build_the_compiling_runtime_reported() {
    let embedded = versions("v2.47.0.250908123456", "0.1.0+src.0123456789abcdef");
    assert_eq!(reported_qnn(&embedded), "v2.47.0.250908123456");
    let mut sdk = embedded.clone();
    sdk.toolchain = ToolchainUsed::sdk("2.45.0.250101000000");
    assert_eq!(reported_qnn(&sdk), "2.45.0.250101000000");
    assert_eq!(qairt_of("v2.47.0.250908123456"), "2.47.0");
    assert_eq!(qairt_of("2.45.0.250101000000"), "2.45.0");
    assert_eq!(qairt_of("not-a-version"), "not-a-version");

    let built = BuiltBy::of(&[("vision", &embedded)]);
    assert_eq!(built.qairt, Recorded::Same("2.47.0".into()));
    assert_eq!(
        built.qnn_build,
        Recorded::Same("v2.47.0.250908123456".into())
    );
    assert_eq!(
        built.xtask,
        Recorded::Same("0.1.0+src.0123456789abcdef".into())
    );
    let built = BuiltBy::of(&[("vision", &sdk)]);
    assert_eq!(built.qairt, Recorded::Same("2.45.0".into()));
}

#[test]
fn components_that_disagree_are_each_named_never_one_picked() {
    let a = versions("v2.47.0.1", "0.1.0+src.aaaaaaaaaaaaaaaa");
    let b = versions("v2.46.0.2", "0.1.0+src.aaaaaaaaaaaaaaaa");
    let built = BuiltBy::of(&[("vision", &a), ("action_step", &b), ("llm", &a)]);
    assert_eq!(
        built.qairt.to_string(),
        "differs between components: 2.46.0 (action_step); 2.47.0 (vision, llm)"
    );
    assert_eq!(
        built.xtask,
        Recorded::Same("0.1.0+src.aaaaaaaaaaaaaaaa".into())
    );
    // In JSON a shared fact is its value, a differing one names the components of each value.
    let json = serde_json::to_value(&built).unwrap();
    assert_eq!(json["xtask"], "0.1.0+src.aaaaaaaaaaaaaaaa");
    assert_eq!(json["qairt"]["2.46.0"][0], "action_step");
    assert_eq!(serde_json::from_value::<BuiltBy>(json).unwrap(), built);
    assert_eq!(
        Recorded::of(std::iter::empty()).to_string(),
        "unknown (no build record)"
    );
}

#[test]
fn bundle_json_round_trips_through_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let a = versions("v2.47.0.1", "0.1.0+src.aaaaaaaaaaaaaaaa");
    let written = info(vec![component("vision", a.clone()), component("llm", a)]);
    xtask_base::record::write(&dir.path().join("reports/bundle.json"), &written).unwrap();
    let read = read_info(dir.path()).unwrap();
    assert_eq!(
        xtask_base::record::to_json(&read).unwrap(),
        xtask_base::record::to_json(&written).unwrap()
    );
    assert_eq!(read.schema_version, BundleInfo::SCHEMA);
    assert_eq!(read.built_by, written.built_by);
}

/// A `bundle.json` of before (no schema number, the recipe's QAIRT as a plain string) is
/// refused, naming the file and the `package` command of the bundle's model.
#[test]
fn an_unnumbered_bundle_json_is_refused_with_the_file_and_the_package_command() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = versions("v2.47.0.1", "0.1.0");
    let mut old = serde_json::to_value(info(vec![component("vision", a)])).unwrap();
    let fields = old.as_object_mut().unwrap();
    fields.remove("schema_version");
    fields.remove("built_by");
    fields.insert("qairt".into(), "2.47.0".into());
    fields.insert("qnn_build".into(), "v2.47.0.1".into());
    std::fs::create_dir_all(d.join("reports")).unwrap();
    std::fs::write(
        d.join("reports/bundle.json"),
        serde_json::to_vec(&old).unwrap(),
    )
    .unwrap();
    super::super::manifest::Manifest::new("tiny", Vec::new())
        .write(d)
        .unwrap();
    let err = format!("{:#}", read_info(d).unwrap_err());
    assert!(err.contains(&format!("{}", d.join("reports/bundle.json").display())));
    assert!(
        err.contains("before its kind carried a schema number"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "`cargo xtask package --model tiny --out {}` writes it again",
            d.display()
        )),
        "{err}"
    );
}
