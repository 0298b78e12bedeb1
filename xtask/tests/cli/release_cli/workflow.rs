//! The CI regeneration workflow's contract with the tool: `plan --json` is the build matrix,
//! and `.github/workflows/regenerate.yml` runs only real subcommands and reads only matrix keys
//! the plan emits.

use std::process::Command;

use crate::common::{self, Scratch};

#[test]
fn plan_json_is_a_matrix_of_seven_entries() {
    let p = Scratch::tiny();
    let run = p.run(&["plan", "--json", "--soc", "77", "--model", "tiny"]);
    run.assert_code(0);
    let v: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let include = v["include"].as_array().unwrap();
    assert_eq!(include.len(), 7);
    assert_eq!(
        include[0]["build"],
        "cargo xtask build-ctx --soc 77 --model tiny --only vision"
    );
}

/// Every `cargo xtask <command>` in the workflow is a real subcommand, and every `matrix.X` it
/// uses is a key of the plan's matrix entries.
#[test]
fn the_regenerate_workflow_references_real_commands_and_matrix_keys() {
    let text =
        std::fs::read_to_string(common::repo_root().join(".github/workflows/regenerate.yml"))
            .unwrap();
    let yaml: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let jobs = yaml["jobs"].as_mapping().unwrap();
    for job in ["plan", "build", "gather", "release"] {
        assert!(jobs.contains_key(job), "job {job} missing");
    }
    let help = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let mut seen = 0;
    for (_, job) in jobs {
        for step in job["steps"].as_sequence().unwrap() {
            let Some(run) = step["run"].as_str() else {
                continue;
            };
            for part in run.split("cargo xtask ").skip(1) {
                let sub = part.split_whitespace().next().unwrap();
                assert!(
                    help.contains(&format!("\n  {sub} ")),
                    "`cargo xtask {sub}` is not a subcommand:\n{help}"
                );
                seen += 1;
            }
        }
    }
    assert!(
        seen >= 7,
        "expected the workflow to run the tool's commands"
    );
    let p = Scratch::tiny();
    let plan: serde_json::Value =
        serde_json::from_str(p.run(&["plan", "--json"]).stdout.trim()).unwrap();
    let entry = plan["include"][0].as_object().unwrap();
    for part in text.split("matrix.").skip(1) {
        let key: String = part
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        assert!(
            entry.contains_key(&key),
            "the workflow uses matrix.{key}, which plan --json does not emit"
        );
    }
    assert!(text.contains("fromJson(needs.plan.outputs.matrix)"));
}
