//! Tests of the plan: which recipe edit dirties which step, and that what a toolchain
//! renders (not the recipe) is what the context key hashes.
use super::*;
use crate::fingerprint::{DirtyReason, freshness};
use crate::toolchain::{Rendered, Toolchain};

fn tiny() -> Model {
    // crates/ctx_build → the workspace root.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    xtask_recipe::recipe::load_model(&root, "tiny").unwrap()
}

fn used(toolchain: &str) -> crate::facts::ToolchainUsed {
    match toolchain.strip_prefix("qairt-sdk ") {
        Some(v) => crate::facts::ToolchainUsed::sdk(v),
        None => crate::facts::ToolchainUsed::embedded(),
    }
}

fn versions(toolchain: &str) -> Versions {
    Versions {
        onnxruntime: "1.23".into(),
        qnn: "2.47".into(),
        toolchain: used(toolchain),
        xtask: "0".into(),
        libraries: String::new(),
    }
}

fn hashes() -> InputHashes {
    InputHashes {
        onnx: Some(BTreeMap::from([("onnx".to_string(), "aa".to_string())])),
        golden: Some("bb".into()),
        calibration: None,
    }
}

fn rendered(tc: &dyn Toolchain, model: &Model, comp: &Component, soc: &Soc) -> [Rendered; 3] {
    let art = artifacts(&model.file.model.name, comp.name(), soc);
    let target = HtpTarget::from_recipe(soc, &comp.file.context);
    StepKind::FLOAT.map(|k| tc.render(k, comp, &target, &art))
}

/// Which of the three steps' keys differ between two recipes of a component.
fn changed(edit: impl Fn(&mut Component), toolchain: &str) -> [bool; 3] {
    let model = tiny();
    let soc = xtask_base::soc::parse_soc("77").unwrap();
    let before = model.components[0].clone();
    let mut after = before.clone();
    edit(&mut after);
    let tc = crate::toolchain::for_plan(&used(toolchain));
    let v = versions(toolchain);
    let keys = |c: &Component| {
        step_keys(
            &model,
            c,
            &HtpTarget::from_recipe(&soc, &c.file.context),
            &v,
            &rendered(tc.as_ref(), &model, c, &soc),
            &hashes(),
        )
    };
    let (a, b) = (keys(&before), keys(&after));
    [0, 1, 2].map(|i| a[i].as_ref().unwrap().key != b[i].as_ref().unwrap().key)
}

#[test]
fn a_parity_edit_dirties_cpu_parity_and_context_but_not_convert() {
    for tc in ["embedded", "qairt-sdk 2.47.0"] {
        let edit = |c: &mut Component| c.file.parity.min_cosine = 0.5;
        assert_eq!(changed(edit, tc), [false, true, true], "{tc}");
    }
}

#[test]
fn a_context_edit_dirties_only_the_context_step() {
    for tc in ["embedded", "qairt-sdk 2.47.0"] {
        let edit = |c: &mut Component| c.file.context.optimization_level = 2;
        assert_eq!(changed(edit, tc), [false, false, true], "{tc}");
        let edit = |c: &mut Component| c.file.context.vtcm_mb = 4;
        assert_eq!(changed(edit, tc), [false, false, true], "{tc}");
    }
}

#[test]
fn a_convert_edit_dirties_every_step() {
    let edit = |c: &mut Component| c.file.convert.float_bitwidth = 16;
    assert_eq!(changed(edit, "qairt-sdk 2.47.0"), [true, true, true]);
}

/// The seam of "fingerprints hash what was rendered": the same recipe with another
/// rendering of the HTP EP options (or of the SDK's config file) dirties the context step,
/// and the reason names the rendered part.
#[test]
fn a_change_in_what_is_rendered_dirties_the_context_step() {
    let model = tiny();
    let comp = &model.components[0];
    let soc = xtask_base::soc::parse_soc("77").unwrap();
    for (tc, part) in [
        ("embedded", "rendered HTP EP options"),
        ("qairt-sdk 2.47.0", "rendered HTP config file"),
    ] {
        let tool = crate::toolchain::for_plan(&used(tc));
        let v = versions(tc);
        let r = rendered(tool.as_ref(), &model, comp, &soc);
        let mut other = r.clone();
        other[2]
            .parts
            .entry(part.to_string())
            .and_modify(|p| p.push_str("extra_option=1\n"));
        let target = HtpTarget::from_recipe(&soc, &comp.file.context);
        let old = step_keys(&model, comp, &target, &v, &r, &hashes());
        let new = step_keys(&model, comp, &target, &v, &other, &hashes());
        assert_eq!(old[0], new[0]);
        assert_eq!(old[1], new[1]);
        let record = crate::fingerprint::StepRecord {
            key: old[2].clone().unwrap(),
            outputs: BTreeMap::new(),
            finished_unix: 0,
            seconds: 0.0,
            facts: crate::fingerprint::test_facts(),
            restored_from_cache: None,
            detail: Default::default(),
        };
        let dir = tempfile::tempdir().unwrap();
        let state = freshness(
            dir.path(),
            Some(&record),
            new[2].as_ref().unwrap(),
            &mut HashMemo::default(),
        );
        let Freshness::Dirty(reasons) = &state else {
            panic!("{tc}: fresh")
        };
        assert!(
            matches!(&reasons.0[..], [DirtyReason::PartChanged { part: p, .. }] if p == part),
            "{tc}: {reasons:?}"
        );
    }
}

#[test]
fn renderings_use_placeholders_not_machine_paths() {
    let model = tiny();
    let comp = &model.components[0];
    let soc = xtask_base::soc::parse_soc("77").unwrap();
    for tc in ["embedded", "qairt-sdk 2.47.0"] {
        let tool = crate::toolchain::for_plan(&used(tc));
        for r in rendered(tool.as_ref(), &model, comp, &soc) {
            for text in r.parts.values().chain(&r.commands) {
                assert!(!text.contains(env!("CARGO_MANIFEST_DIR")), "{text}");
                assert!(!text.contains("/tmp"), "{text}");
            }
        }
    }
}

/// The keys of a component's steps as `plan_component` computes them (rendered parts with
/// project folders replaced).
fn content_keys(model: &Model, comp: &Component, v: &Versions, toolchain: &str) -> Vec<String> {
    let soc = xtask_base::soc::parse_soc("77").unwrap();
    let tc = crate::toolchain::for_plan(&used(toolchain));
    let art = artifacts(&model.file.model.name, comp.name(), &soc);
    let rendered = rendered(tc.as_ref(), model, comp, &soc).to_vec();
    step_keys(
        model,
        comp,
        &HtpTarget::from_recipe(&soc, &comp.file.context),
        v,
        &content_only(rendered, &model.file.model.name, comp, &art),
        &hashes(),
    )
    .into_iter()
    .map(|k| k.unwrap().key)
    .collect()
}

#[test]
fn keys_hold_content_never_a_model_name_or_a_path() {
    for tc in ["embedded", "qairt-sdk 2.47.0"] {
        let a = tiny();
        let mut b = tiny();
        b.file.model.name = "another-model".into();
        let comp = &mut b.components[0];
        comp.file.component.onnx = format!("onnx/elsewhere/{}.onnx", comp.name()).into();
        comp.file.component.description = "another description".into();
        let v = versions(tc);
        let (ka, kb) = (
            content_keys(&a, &a.components[0], &v, tc),
            content_keys(&b, &b.components[0], &v, tc),
        );
        assert_eq!(ka, kb, "{tc}");
        // What the steps run with is content: the libraries' hash and the tool's identity
        // (a hash of its sources) change every key.
        for edit in [
            |v: &mut Versions| v.libraries = "another plugin build".into(),
            |v: &mut Versions| v.xtask = "0.1.0+src.0123456789abcdef".into(),
        ] {
            let mut w = versions(tc);
            edit(&mut w);
            let kw = content_keys(&a, &a.components[0], &w, tc);
            assert!(ka.iter().zip(&kw).all(|(x, y)| x != y), "{tc}");
        }
    }
}

#[test]
fn a_path_is_replaced_only_where_it_stands_whole() {
    assert_eq!(
        replace_path(
            "dir=onnx/tiny x=onnx/tiny/a.onnx y=onnx/tiny-b/a.onnx",
            "onnx/tiny",
            "ONNX_DIR"
        ),
        "dir=ONNX_DIR x=ONNX_DIR/a.onnx y=onnx/tiny-b/a.onnx"
    );
}
