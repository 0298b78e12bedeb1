//! The workflow's build step cache and shells: the step cache is saved when the build fails or
//! is cancelled (`actions/cache/save` under `always()`), one cache per component, and no pipe
//! hides a failure (every run script under an explicit `shell: bash`, which GitHub runs with
//! `-o pipefail`).

use crate::common;

fn workflow() -> serde_yaml::Value {
    let text =
        std::fs::read_to_string(common::repo_root().join(".github/workflows/regenerate.yml"))
            .unwrap();
    serde_yaml::from_str(&text).unwrap()
}

/// What GitHub runs for `shell: bash` (docs: "Exit codes and error action preference"); the
/// implicit default is `bash -e {0}`, without pipefail.
const GITHUB_BASH: [&str; 4] = ["--noprofile", "--norc", "-eo", "pipefail"];

/// Every workflow sets `shell: bash` for all its run steps and no job or step overrides it.
#[test]
fn every_run_step_runs_under_bash_with_pipefail() {
    let dir = common::repo_root().join(".github/workflows");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let yaml: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            yaml["defaults"]["run"]["shell"].as_str(),
            Some("bash"),
            "{}: no workflow-level `defaults: run: shell: bash`",
            path.display()
        );
        for (name, job) in yaml["jobs"].as_mapping().unwrap() {
            let job_shell = job["defaults"]["run"]["shell"].as_str();
            assert!(matches!(job_shell, None | Some("bash")), "job {name:?}");
            for step in job["steps"].as_sequence().map_or(&[][..], Vec::as_slice) {
                let shell = step["shell"].as_str();
                assert!(
                    matches!(shell, None | Some("bash")),
                    "job {name:?}: {step:?}"
                );
            }
        }
    }
}

/// The step-keys script, run as GitHub runs it (with the workflow's shell), with a `cargo` that fails: the step fails
/// (a `… | tee` under `bash -e` would have passed with an empty key).
#[test]
fn a_failing_key_computation_fails_its_step() {
    let yaml = workflow();
    let steps = yaml["jobs"]["build"]["steps"].as_sequence().unwrap();
    let script = steps
        .iter()
        .find(|s| s["id"] == "keys")
        .and_then(|s| s["run"].as_str())
        .expect("the build job's `keys` step");
    let scratch = tempfile::tempdir().unwrap();
    let bin = scratch.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(scratch.path().join("target")).unwrap();
    let cargo = bin.join("cargo");
    std::fs::write(&cargo, "#!/bin/sh\necho 'error: no runtime' >&2\nexit 3\n").unwrap();
    std::fs::set_permissions(&cargo, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let file = scratch.path().join("step.sh");
    std::fs::write(
        &file,
        script
            .replace("${{ matrix.soc }}", "77")
            .replace("${{ matrix.model }}", "tiny")
            .replace("${{ matrix.component }}", "vision"),
    )
    .unwrap();
    let output = scratch.path().join("github-output");
    // The shell GitHub would use for this step: `shell: bash` (explicit) adds pipefail.
    let explicit = yaml["defaults"]["run"]["shell"] == "bash";
    let args: &[&str] = if explicit { &GITHUB_BASH } else { &["-e"] };
    let run = std::process::Command::new("bash")
        .args(args)
        .arg(&file)
        .current_dir(scratch.path())
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("GITHUB_OUTPUT", &output)
        .output()
        .unwrap();
    assert_ne!(run.status.code(), Some(0), "{run:?}");
    assert!(
        !std::fs::read_to_string(&output)
            .unwrap_or_default()
            .contains("key=")
    );
}

/// The step cache is restored before the build and saved after it under `always()`: a
/// complete build under its key, a failed or cancelled one under a partial key of the same
/// keys; every key names the component.
#[test]
fn the_step_cache_is_saved_when_the_build_fails_or_is_cancelled() {
    let yaml = workflow();
    let steps = yaml["jobs"]["build"]["steps"].as_sequence().unwrap();
    let at = |pred: &dyn Fn(&serde_yaml::Value) -> bool| steps.iter().position(pred);
    let uses =
        |s: &serde_yaml::Value, what: &str| s["uses"].as_str().is_some_and(|u| u.starts_with(what));
    let build = at(&|s| s["id"] == "build").expect("a `build` step");
    let restore = at(&|s| uses(s, "actions/cache/restore@")).expect("a restore step");
    assert!(restore < build);
    let saves: Vec<(usize, &serde_yaml::Value)> = steps
        .iter()
        .enumerate()
        .filter(|(_, s)| uses(s, "actions/cache/save@"))
        .collect();
    assert_eq!(saves.len(), 2, "a complete and a partial save");
    let cond = |s: &serde_yaml::Value| s["if"].as_str().unwrap_or_default().to_string();
    for (i, s) in &saves {
        assert!(*i > build, "saved after the build");
        assert!(cond(s).starts_with("always()"), "{:?}", cond(s));
        assert_eq!(s["with"]["path"], steps[restore]["with"]["path"]);
    }
    let failed = saves
        .iter()
        .find(|(_, s)| cond(s).contains("'failure'"))
        .expect("a save for a failed build");
    assert!(cond(failed.1).contains("'cancelled'"));
    assert!(
        failed.1["with"]["key"]
            .as_str()
            .unwrap()
            .contains("-partial-")
    );
    let keys = steps.iter().find(|s| s["id"] == "keys").unwrap()["run"]
        .as_str()
        .unwrap();
    assert!(keys.contains("${{ matrix.component }}") && keys.contains("--print-keys"));
    // Entries are kept under a size cap during the build itself.
    assert!(
        steps[build]["env"]["XTASK_CACHE_MAX_SIZE"]
            .as_str()
            .is_some()
    );
}
