//! The regeneration workflow's contract with `plan --json`: every field the workflow reads
//! exists, and entries are sized from input bytes and the recipes' measured per-layer times.

use crate::common;

use common::Scratch;

/// Every field of `plan --json` the workflow reads exists: `matrix.<key>` (also nested), the
/// plan job's outputs used through `needs.plan.outputs.X` / `fromJson(...)`, and the fields its
/// `jq` programs read from the plan (`.include[].X`, `\\(.X.Y)`).
#[test]
fn every_plan_field_the_workflow_reads_exists() {
    let text =
        std::fs::read_to_string(common::repo_root().join(".github/workflows/regenerate.yml"))
            .unwrap();
    let yaml: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let p = Scratch::tiny();
    let plan: serde_json::Value = serde_json::from_str(
        p.run(&["plan", "--json", "--large-runner", "big"])
            .stdout
            .trim(),
    )
    .unwrap();
    let entries = plan["include"].as_array().unwrap();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
            .collect::<String>()
            .trim_end_matches('.')
            .to_string()
    };
    let resolve = |path: &str| {
        entries
            .iter()
            .all(|e| path.split('.').try_fold(e, |v, k| v.get(k)).is_some())
    };
    let mut checked = 0;
    for part in text.split("matrix.").skip(1) {
        let key = ident(part);
        assert!(
            resolve(&key),
            "the workflow reads matrix.{key}, which plan --json lacks"
        );
        checked += 1;
    }
    let outputs = yaml["jobs"]["plan"]["outputs"].as_mapping().unwrap();
    for part in text.split("needs.plan.outputs.").skip(1) {
        let key = ident(part);
        assert!(
            outputs.contains_key(key.as_str()),
            "the workflow reads needs.plan.outputs.{key}, which the plan job does not set"
        );
    }
    for part in text.split("fromJson(").skip(1) {
        let arg = part.split(')').next().unwrap();
        assert!(
            arg.starts_with("needs.plan.outputs."),
            "fromJson({arg}) reads something other than the plan"
        );
    }
    let mut plan_script = String::new();
    for step in yaml["jobs"]["plan"]["steps"].as_sequence().unwrap() {
        plan_script.push_str(step["run"].as_str().unwrap_or_default());
    }
    for part in plan_script.split(".include[].").skip(1) {
        let key = ident(part);
        assert!(
            resolve(&key),
            "the plan job's jq reads .include[].{key}, which plan --json lacks"
        );
        checked += 1;
    }
    for part in plan_script.split("\\(.").skip(1) {
        let key = ident(part);
        assert!(
            resolve(&key),
            "the plan job's jq reads .{key}, which plan --json lacks"
        );
        checked += 1;
    }
    assert!(
        checked >= 15,
        "expected the workflow to read the plan ({checked} reads)"
    );
    // The runner and timeout are what GitHub needs: a label and a number.
    for e in entries {
        assert!(e["runner"].as_str().is_some_and(|r| !r.is_empty()));
        assert!(
            e["timeout_minutes"]
                .as_u64()
                .is_some_and(|t| (1..=360).contains(&t))
        );
        assert_eq!(e["estimate"]["kind"], "estimate");
    }
}

/// The real model's plan: every component sized from its real-size measurements (numbers, not
/// "unknown", though the inputs are not on disk), an estimate beyond the runner blocks the entry.
#[test]
fn plan_sizes_entries_from_bytes_and_measurements() {
    let p = Scratch::tiny();
    let model = "molmoact2-libero-lp-vtp-sd";
    let plan = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["plan", "--json", "--model", model];
        args.extend_from_slice(extra);
        let run = p.run(&args);
        run.assert_code(0);
        serde_json::from_str(run.stdout.trim()).unwrap()
    };
    let v = plan(&[]);
    let by = |v: &serde_json::Value, c: &str| {
        v["include"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["component"] == c)
            .unwrap()
            .clone()
    };
    for entry in v["include"].as_array().unwrap() {
        for key in ["peak_memory_gb", "disk_gb", "minutes"] {
            assert!(entry["estimate"][key].is_number(), "{entry}");
        }
    }
    // [estimate.llm_split0.measured]: 1.25 x 7.72 GB; 2 + 2 x 3.63 + 3.63 + 1.82 GB of disk,
    // more than the standard runner's 14 GB.
    let llm = by(&v, "llm_split0");
    assert_eq!(llm["input_bytes"], "unknown");
    assert_eq!(llm["needs_fetch"], true);
    assert_eq!(llm["estimate"]["peak_memory_gb"], 9.7);
    assert_eq!(llm["estimate"]["disk_gb"], 14.8);
    assert!(
        llm["blocker"].as_str().unwrap().contains("LARGE_RUNNER"),
        "{llm}"
    );
    assert_eq!(
        by(&plan(&["--large-runner", "big"]), "llm_split0")["runner"],
        "big"
    );
    // Build and HTP parity measured: a duration, and a timeout of 1.5 x + 10 min.
    let step = by(&v, "action_step");
    assert_eq!(step["estimate"]["peak_memory_gb"], 8.7, "1.25 x 6.90 GB");
    assert_eq!(step["estimate"]["disk_gb"], 10.1, "2 + 2 x 2.30 + 3.44 GB");
    assert_eq!(step["estimate"]["minutes"], 43.4, "20 + 181.8 s + 1217.6 s");
    assert_eq!(step["estimate"]["minutes_is_lower_bound"], false);
    assert_eq!(step["timeout_minutes"], 75);
    assert_eq!(step["runner"], "ubuntu-24.04");
    let context = by(&v, "action_context");
    assert_eq!(context["estimate"]["minutes"], 23.7, "20 + 4.9 s + 216 s");
    assert_eq!(context["estimate"]["minutes_is_lower_bound"], false);
    assert_eq!(context["timeout_minutes"], 46);
    // Vision's build was measured at the recipe's O3 and 10 layers; its HTP parity comes per
    // layer from the 3-layer graph's.
    let vision = by(&v, "vision");
    assert_eq!(vision["estimate"]["peak_memory_gb"], 4.6, "1.25 x 3.64 GB");
    assert_eq!(
        vision["estimate"]["minutes"], 309.2,
        "20 + 241 s + 10 x 1711 s"
    );
    assert_eq!(vision["estimate"]["minutes_is_lower_bound"], false);
    assert_eq!(
        vision["timeout_minutes"], 360,
        "1.5 x 309 + 10, capped at 6 h"
    );
    let basis = vision["estimate"]["basis"].to_string();
    assert!(
        basis.contains("build 241 s (measured at 10 layers)"),
        "{basis}"
    );
    assert!(basis.contains("HTP parity 10 layers × 1711 s"), "{basis}");
    assert_eq!(vision["blocker"], "", "{vision}");
    assert_eq!(
        by(&plan(&["--large-runner", "big"]), "vision")["runner"],
        "ubuntu-24.04",
        "measured sizes that fit the standard runner keep it"
    );

    // Sizes from a published manifest: 6 GB of weights do not fit the standard runner.
    let manifest = serde_json::json!({
        "format": "xtask-bundle.v1", "model": model,
        "files": [
            {"path": "onnx/llm_split0/llm_split0.onnx", "bytes": 1000000, "sha256": "a", "role": "onnx"},
            {"path": "onnx/llm_split0/llm_split0.onnx.data", "bytes": 6000000000u64, "sha256": "b", "role": "onnx-external-data"},
            {"path": "golden/llm_split0_io.npz", "bytes": 50000000, "sha256": "c", "role": "golden"},
            {"path": "ctx/llm_split0_socid77_archv73.bin", "bytes": 3000000000u64, "sha256": "d", "role": "context-binary"}
        ]
    });
    std::fs::create_dir_all(p.path("published")).unwrap();
    std::fs::write(p.path("published/manifest.json"), manifest.to_string()).unwrap();
    let m = p.path("published/manifest.json");
    let m = m.to_str().unwrap();
    let standard = by(&plan(&["--manifest", m]), "llm_split0");
    assert_eq!(standard["input_bytes"], 6_051_000_000u64);
    assert_eq!(standard["input_bytes_source"], "published manifest.json");
    assert_eq!(standard["runner"], "ubuntu-24.04");
    let blocker = standard["blocker"].as_str().unwrap();
    assert!(
        blocker.contains("LARGE_RUNNER") && blocker.contains("(estimates)"),
        "{blocker}"
    );
    let large = by(
        &plan(&["--manifest", m, "--large-runner", "big"]),
        "llm_split0",
    );
    assert_eq!(large["runner"], "big");
    assert_eq!(large["blocker"], "");
    let small = by(
        &plan(&[
            "--manifest",
            m,
            "--large-runner",
            "big",
            "--large-runner-memory-gb",
            "8",
        ]),
        "llm_split0",
    );
    assert!(
        small["blocker"]
            .as_str()
            .unwrap()
            .contains("more than the larger runner `big`")
    );
}

/// The workflow's first step maps a tag `<model>-v<version>` to that model (its script run as
/// GitHub runs it, with `bash -e`), refuses a tag that names no model, and the release's
/// concurrency group is the model's; `HF_TOKEN` is in no workflow- or job-level env, only in
/// the steps that talk to the Hub.
#[test]
fn a_tag_names_its_model_and_the_hub_token_stays_in_the_hub_steps() {
    let text =
        std::fs::read_to_string(common::repo_root().join(".github/workflows/regenerate.yml"))
            .unwrap();
    let yaml: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let steps = yaml["jobs"]["plan"]["steps"].as_sequence().unwrap();
    let script = steps
        .iter()
        .find(|s| s["id"] == "model")
        .and_then(|s| s["run"].as_str())
        .expect("the plan job's `model` step");
    let run = |ref_type: &str, ref_name: &str, input: &str| {
        let out_file = tempfile::NamedTempFile::new().unwrap();
        let out = std::process::Command::new("bash")
            .args(["-e", "-c", script])
            .current_dir(common::committed())
            .env("GITHUB_REF_TYPE", ref_type)
            .env("GITHUB_REF_NAME", ref_name)
            .env("INPUT_MODEL", input)
            .env("GITHUB_OUTPUT", out_file.path())
            .output()
            .unwrap();
        let written = std::fs::read_to_string(out_file.path()).unwrap();
        (
            out.status.code(),
            written,
            String::from_utf8_lossy(&out.stdout).to_string(),
        )
    };
    let (code, out, _) = run("tag", "molmoact2-libero-lp-vtp-sd-v1.2.0", "");
    assert_eq!(
        (code, out.as_str()),
        (Some(0), "model=molmoact2-libero-lp-vtp-sd\n")
    );
    let (code, out, _) = run("tag", "tiny-v0.3", "");
    assert_eq!((code, out.as_str()), (Some(0), "model=tiny\n"));
    for bad in ["v1.0", "nosuchmodel-v1.0"] {
        let (code, out, said) = run("tag", bad, "");
        assert_eq!(code, Some(1), "{bad}");
        assert!(
            out.is_empty() && said.contains("names no model"),
            "{bad}: {said}"
        );
    }
    let (code, out, _) = run("branch", "main", "");
    assert_eq!((code, out.as_str()), (Some(0), "model=tiny\n"));
    let (_, out, _) = run("branch", "main", "molmoact2-libero-lp-vtp-sd");
    assert_eq!(out, "model=molmoact2-libero-lp-vtp-sd\n");

    let release = &yaml["jobs"]["release"];
    assert_eq!(
        release["concurrency"]["group"],
        "release-${{ needs.plan.outputs.model }}"
    );
    assert!(yaml["env"].get("HF_TOKEN").is_none(), "workflow-level env");
    for (name, job) in yaml["jobs"].as_mapping().unwrap() {
        assert!(job["env"].get("HF_TOKEN").is_none(), "job {name:?}");
        for step in job["steps"].as_sequence().unwrap() {
            if step["env"].get("HF_TOKEN").is_some() {
                let run = step["run"].as_str().unwrap_or_default();
                assert!(
                    run.contains("hf download") || run.contains("fetch") || run.contains("release"),
                    "job {name:?}: HF_TOKEN in a step that does not talk to the Hub: {run}"
                );
            }
        }
    }
}

/// Every `run:` script of every workflow passes shellcheck the way actionlint runs it on a
/// step: each `${{ … }}` expression replaced by underscores of the same length, the script
/// checked as bash (GitHub's shell on Linux runners), by the pinned shellcheck the tests fetch
/// into `target/test-tools/` (`common::shellcheck`), whatever the machine has.
#[test]
fn every_workflow_script_is_clean_under_shellcheck() {
    let dir = common::repo_root().join(".github/workflows");
    let scratch = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let yaml: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
        for (job, spec) in yaml["jobs"].as_mapping().unwrap() {
            let steps = spec["steps"].as_sequence().map_or(&[][..], Vec::as_slice);
            for (i, step) in steps.iter().enumerate() {
                let Some(script) = step["run"].as_str() else {
                    continue;
                };
                let name = format!("{}-{}-{i}.sh", job.as_str().unwrap(), checked);
                let file = scratch.path().join(&name);
                std::fs::write(
                    &file,
                    format!("#!/bin/bash\n{}", without_expressions(script)),
                )
                .unwrap();
                let out = std::process::Command::new(common::shellcheck())
                    .args(["--shell=bash", "--format=gcc"])
                    .arg(&file)
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "{} job {job:?} step {i} ({:?}):\n{}",
                    path.display(),
                    step["name"],
                    String::from_utf8_lossy(&out.stdout)
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 10, "only {checked} scripts found");
}

/// `${{ expr }}` → underscores of the same length, as actionlint hands a script to shellcheck.
fn without_expressions(script: &str) -> String {
    let mut out = String::new();
    let mut rest = script;
    while let Some(start) = rest.find("${{") {
        let end = rest[start..]
            .find("}}")
            .map_or(rest.len(), |e| start + e + 2);
        out.push_str(&rest[..start]);
        out.push_str(&"_".repeat(rest[start..end].chars().count()));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The chain job: after every component's build and before the bundle is gathered, the whole
/// chain runs once on the HTP with every downloaded binary, on the runner `plan --chain` sizes
/// (its fields exist, for tiny and for the real model), and the gather job packages with its
/// report (package refuses a bundle whose chain never ran on its binaries).
#[test]
fn the_chain_job_runs_the_whole_chain_before_the_bundle_is_packaged() {
    let text =
        std::fs::read_to_string(common::repo_root().join(".github/workflows/regenerate.yml"))
            .unwrap();
    let yaml: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let jobs = &yaml["jobs"];
    let chain = &jobs["chain"];
    let needs: Vec<&str> = chain["needs"]
        .as_sequence()
        .expect("a chain job that needs others")
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert!(
        needs.contains(&"build") && needs.contains(&"plan"),
        "{needs:?}"
    );
    assert_eq!(
        chain["runs-on"].as_str(),
        Some("${{ needs.plan.outputs.chain_runner }}")
    );
    let runs: Vec<&str> = chain["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|s| s["run"].as_str())
        .collect();
    let order = |needle: &str| runs.iter().position(|r| r.contains(needle));
    let fresh = order("--require-fresh").expect("the binaries checked fresh");
    let run = order("run --backend htp --iters 1 --warmup 0").expect("the chain run");
    assert!(fresh < run);
    assert!(text.contains("name: chain-reports-${{ env.MODEL }}"));
    let gather = &jobs["gather"];
    let gather_needs: Vec<&str> = gather["needs"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert!(gather_needs.contains(&"chain"), "{gather_needs:?}");
    let steps = gather["steps"].as_sequence().unwrap();
    let pos = |f: &dyn Fn(&serde_yaml::Value) -> bool| steps.iter().position(f).unwrap();
    let download = pos(&|s| {
        s["with"]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("chain-reports-"))
    });
    let package = pos(&|s| {
        s["run"]
            .as_str()
            .is_some_and(|r| r.contains("xtask package"))
    });
    assert!(
        download < package,
        "the chain report must be there before package"
    );

    for model in ["tiny", "molmoact2-libero-lp-vtp-sd"] {
        let p = Scratch::tiny();
        let out = p.run(&["plan", "--chain", "--json", "--model", model]);
        out.assert_code(0);
        let plan: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
        assert!(
            plan["runner"].as_str().is_some_and(|r| !r.is_empty()),
            "{plan}"
        );
        assert!(
            plan["timeout_minutes"]
                .as_u64()
                .is_some_and(|t| (1..=360).contains(&t)),
            "{plan}"
        );
        assert!(plan["blocker"].is_string(), "{plan}");
        assert_eq!(plan["estimate"]["kind"], "estimate");
    }
}
