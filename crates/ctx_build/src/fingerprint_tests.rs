//! Tests of keys, freshness and dirty reasons.
use super::*;

pub fn test_facts() -> StepFacts {
    use crate::facts::{ConvertFacts, FileHash, ToolVersions, ToolchainUsed};
    let file = FileHash {
        path: "x".into(),
        sha256: "00".into(),
    };
    StepFacts::Convert(ConvertFacts {
        versions: ToolVersions {
            onnxruntime: "1".into(),
            qnn: "2".into(),
            toolchain: ToolchainUsed::embedded(),
            xtask: "0".into(),
            libraries: String::new(),
        },
        qnn_onnx: file.clone(),
        inputs: BTreeMap::new(),
        float_bitwidth: 32,
        preserve_io_datatype: true,
        dlc_validation: "x".into(),
        rewrites: None,
        candidate_dlc: file,
        precision: None,
    })
}

mod key_tests {
    use super::*;

    fn key(onnx: &str) -> StepKey {
        StepKey::new(
            "convert",
            BTreeMap::from([
                ("onnx".to_string(), onnx.to_string()),
                ("qnn".to_string(), "2.47".to_string()),
            ]),
        )
    }

    #[test]
    fn key_changes_with_any_part() {
        assert_ne!(key("a").key, key("b").key);
        assert_eq!(key("a").key, key("a").key);
    }

    #[test]
    fn dirty_reason_names_the_changed_part() {
        let dir = tempfile::tempdir().unwrap();
        let rec = StepRecord {
            key: key("a"),
            outputs: BTreeMap::new(),
            finished_unix: 0,
            seconds: 0.0,
            facts: test_facts(),
            restored_from_cache: None,
            detail: Default::default(),
        };
        let mut memo = HashMemo::default();
        assert_eq!(
            freshness(dir.path(), Some(&rec), &key("a"), &mut memo),
            Freshness::Fresh
        );
        assert_eq!(
            freshness(dir.path(), Some(&rec), &key("b"), &mut memo),
            Freshness::dirty(DirtyReason::PartChanged {
                part: "onnx".into(),
                old: "a".into(),
                new: "b".into(),
            })
        );
        assert_eq!(
            freshness(dir.path(), None, &key("a"), &mut memo),
            Freshness::dirty(DirtyReason::NeverBuilt)
        );
    }

    /// A dry run before the runtime is fetched knows the versions only as the pins: a recorded
    /// build of the pinned release is not a change, another release is, and said as one.
    #[test]
    fn a_dry_run_on_the_pins_judges_recorded_versions_against_them() {
        let dir = tempfile::tempdir().unwrap();
        let with = |qnn: &str| {
            StepKey::new(
                "convert",
                BTreeMap::from([
                    ("onnx".to_string(), "a".to_string()),
                    ("qnn version".to_string(), qnn.to_string()),
                ]),
            )
        };
        let rec = StepRecord {
            key: with("v2.47.0.260601114230"),
            outputs: BTreeMap::new(),
            finished_unix: 0,
            seconds: 0.0,
            facts: test_facts(),
            restored_from_cache: None,
            detail: Default::default(),
        };
        let mut memo = HashMemo::default();
        let pinned = |pin: &str| with(&format!("{pin}{NOT_FETCHED_MARK}"));
        assert_eq!(
            freshness(dir.path(), Some(&rec), &pinned("2.47.0"), &mut memo),
            Freshness::Fresh
        );
        for other in ["2.47.1", "2.4"] {
            let Freshness::Dirty(reasons) =
                freshness(dir.path(), Some(&rec), &pinned(other), &mut memo)
            else {
                panic!("{other}: fresh against v2.47.0.260601114230");
            };
            assert_eq!(
                reasons.join("; "),
                format!("qnn version changed: v2.47.0.260601114230 → {other}{NOT_FETCHED_MARK}"),
                "{other}"
            );
        }
        // Another part that changed is still told, the pinned version is not.
        let mut changed = pinned("2.47.0");
        changed.parts.insert("onnx".into(), "b".into());
        let changed = StepKey::new("convert", changed.parts);
        assert_eq!(
            freshness(dir.path(), Some(&rec), &changed, &mut memo),
            Freshness::dirty(DirtyReason::PartChanged {
                part: "onnx".into(),
                old: "a".into(),
                new: "b".into(),
            })
        );
    }

    #[test]
    fn missing_or_modified_output_is_dirty() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("out.bin"), b"good").unwrap();
        let mut memo = HashMemo::default();
        let sha = memo.sha256(&dir.path().join("out.bin")).unwrap();
        let outputs = BTreeMap::from([("out.bin".to_string(), sha)]);
        let rec = StepRecord {
            key: key("a"),
            outputs,
            finished_unix: 0,
            seconds: 0.0,
            facts: test_facts(),
            restored_from_cache: None,
            detail: Default::default(),
        };
        assert_eq!(
            freshness(dir.path(), Some(&rec), &key("a"), &mut memo),
            Freshness::Fresh
        );
        std::fs::write(dir.path().join("out.bin"), b"bad!!").unwrap();
        assert!(
            matches!(freshness(dir.path(), Some(&rec), &key("a"), &mut memo), Freshness::Dirty(r) if r.join("").contains("modified"))
        );
    }
}

mod reason_tests {
    use super::*;

    #[test]
    fn reasons_serialise_as_tagged_objects_and_print_as_text() {
        let r = DirtyReason::PartChanged {
            part: "htp target".into(),
            old: "optimization_level=3\nfp16=true\n".into(),
            new: "optimization_level=2\nfp16=true\n".into(),
        };
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            serde_json::json!({ "reason": "part_changed", "part": "htp target",
                "old": "optimization_level=3\nfp16=true\n", "new": "optimization_level=2\nfp16=true\n" })
        );
        assert_eq!(
            r.to_string(),
            "htp target changed: optimization_level 3 → 2"
        );
        let all = DirtyReasons(vec![r, DirtyReason::Forced]);
        assert_eq!(
            all.join("; "),
            "htp target changed: optimization_level 3 → 2; --force"
        );
        let back: DirtyReasons =
            serde_json::from_value(serde_json::to_value(&all).unwrap()).unwrap();
        assert_eq!(back, all);
    }
}
