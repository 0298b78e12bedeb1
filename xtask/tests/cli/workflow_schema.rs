//! The workflows are checked against GitHub's workflow JSON schema (SchemaStore's
//! `github-workflow.json`, vendored in tests/fixtures/schemas with its source and license): a
//! structural error in a workflow fails `cargo test`.

use crate::common;

use std::path::Path;

fn schema() -> jsonschema::Validator {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/schemas/github-workflow.json");
    let schema: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

fn errors(validator: &jsonschema::Validator, yaml_text: &str) -> Vec<String> {
    let instance: serde_json::Value = serde_yaml::from_str(yaml_text).unwrap();
    validator
        .iter_errors(&instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn every_workflow_matches_githubs_workflow_schema() {
    let validator = schema();
    let dir = common::repo_root().join(".github/workflows");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.ends_with(".yml") || name.ends_with(".yaml")) {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let errs = errors(&validator, &text);
        assert!(
            errs.is_empty(),
            "{name} does not match the workflow schema:\n{}",
            errs.join("\n")
        );
        seen += 1;
    }
    assert!(seen >= 1, "no workflow in {}", dir.display());
}

/// The check has teeth: structural mistakes of the kind a hand edit makes are refused.
#[test]
fn the_schema_refuses_structural_errors() {
    let validator = schema();
    let text =
        std::fs::read_to_string(common::repo_root().join(".github/workflows/regenerate.yml"))
            .unwrap();
    for (what, from, to) in [
        (
            "a misspelt job key",
            "    runs-on: ${{ matrix.runner }}",
            "    run-on: ${{ matrix.runner }}",
        ),
        ("needs as a number", "    needs: plan\n", "    needs: 3\n"),
        (
            "an unknown top-level key",
            "\njobs:\n",
            "\njobz: {}\njobs:\n",
        ),
        (
            "timeout as words",
            "    timeout-minutes: ${{ matrix.timeout_minutes }}",
            "    timeout-minutes: long",
        ),
    ] {
        assert!(
            text.contains(from),
            "{what}: the workflow changed, update the test ({from:?})"
        );
        let broken = text.replacen(from, to, 1);
        assert!(
            !errors(&validator, &broken).is_empty(),
            "{what} was accepted"
        );
    }
}
