//! `build-ctx --soc 77` on the tiny model as a user runs it: a cold build, a no-op rebuild,
//! a weight change, a failing CPU-parity gate, the HTP parity of the result, the dry run of
//! the real model, and the build lock.

use crate::common;

use std::collections::BTreeMap;

use common::{Scratch, cosines, edit_golden, read_json, sha256_hex};

const COMPONENTS: [&str; 7] = [
    "vision",
    "llm_split0",
    "llm_split1",
    "llm_split2",
    "llm_split3",
    "action_context",
    "action_step",
];

/// (component, step) -> status from the build report.
fn statuses(p: &Scratch) -> BTreeMap<(String, String), String> {
    let report = read_json(&p.path("reports/tiny/build-soc77.json"));
    let mut out = BTreeMap::new();
    for c in report["components"].as_array().unwrap() {
        for s in c["steps"].as_array().unwrap() {
            out.insert(
                (
                    c["component"].as_str().unwrap().into(),
                    s["step"].as_str().unwrap().into(),
                ),
                s["status"].as_str().unwrap().into(),
            );
        }
    }
    out
}

fn ran_components(p: &Scratch) -> Vec<String> {
    let mut ran: Vec<String> = statuses(p)
        .into_iter()
        .filter(|(_, s)| s == "ran")
        .map(|((c, _), _)| c)
        .collect();
    ran.dedup();
    ran
}

#[test]
fn build_ctx_cold_noop_weight_change_htp_parity_and_failing_gate() {
    let p = Scratch::tiny();

    // Cold build: 7 DLCs, 7 binaries, 7 wrappers, the report, CPU cosines >= 0.9999.
    let run = p.run(&["build-ctx", "--soc", "77", "--model", "tiny"]);
    run.assert_code(0);
    // With one job the components run, and their lines come, in pipeline order (the recipe's
    // `[model] components`), not in the order `--jobs 2` would start them (largest first).
    let mut order: Vec<&str> = run
        .stderr
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| COMPONENTS.contains(w))
        .collect();
    order.dedup();
    assert_eq!(order, COMPONENTS, "{}", run.all());
    for c in COMPONENTS {
        for f in [
            format!("{c}.dlc"),
            format!("{c}_socid77_archv73.bin"),
            format!("{c}_socid77_archv73_ctx.onnx"),
        ] {
            let path = p.path(&format!("ctx/tiny/{f}"));
            assert!(
                std::fs::metadata(&path)
                    .map(|m| m.len() > 0)
                    .unwrap_or(false),
                "missing {f}\n{}",
                run.all()
            );
        }
    }
    let report = read_json(&p.path("reports/tiny/build-soc77.json"));
    assert_eq!(report["pass"], true);
    assert!(report["qnn"].as_str().unwrap().starts_with("v2.47.0"));
    for c in report["components"].as_array().unwrap() {
        let cpu = &c["steps"][1];
        assert_eq!(cpu["step"], "cpu parity");
        for o in cpu["detail"]["result"]["outputs"].as_array().unwrap() {
            assert!(o["metrics"]["cosine"].as_f64().unwrap() >= 0.9999, "{c}");
        }
        assert!(
            !c["steps"][2]["detail"]["graph_name"]
                .as_str()
                .unwrap()
                .is_empty()
        );
    }
    assert!(p.path("reports/tiny/build-soc77.md").is_file());

    // No-op: nothing runs, everything fresh.
    let run = p.run(&["build-ctx", "--soc", "77"]);
    run.assert_code(0);
    assert!(
        run.stdout.contains("0 step(s) ran, 21 fresh"),
        "{}",
        run.all()
    );

    // HTP parity through the EPContext wrappers.
    p.run(&["parity", "--backend", "htp", "--model", "tiny"])
        .assert_code(0);
    let htp = read_json(&p.path("reports/tiny/parity-htp.json"));
    assert_eq!(htp["htp_emulated"], true);
    for (comp, out, cos) in cosines(&htp) {
        assert!(cos >= 0.999, "{comp} {out} {cos}");
    }

    // One weight of llm_split2 changes (its external data): only its three steps re-run,
    // and until then its binary is refused as stale.
    let data = p.path("onnx/tiny/llm_split2.onnx.data");
    let mut bytes = std::fs::read(&data).unwrap();
    bytes[1000] ^= 0x01;
    std::fs::write(&data, bytes).unwrap();
    let stale = p.run(&["parity", "--backend", "htp", "--only", "llm_split2"]);
    stale.assert_code(2);
    assert!(
        stale.all().contains("is stale") && stale.all().contains("changed"),
        "{}",
        stale.all()
    );
    let run = p.run(&["build-ctx", "--soc", "77", "-v"]);
    run.assert_code(0);
    assert_eq!(
        ran_components(&p),
        vec!["llm_split2".to_string()],
        "{}",
        run.all()
    );
    assert!(
        run.stdout.contains("3 step(s) ran, 18 fresh"),
        "{}",
        run.all()
    );
    // Named as the ONNX names it (beside the graph): keys hold no project path.
    assert!(
        run.stderr
            .contains("external data llm_split2.onnx.data changed"),
        "{}",
        run.all()
    );

    // A build of one component keeps the others' rows, marked as earlier builds.
    let run = p.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "action_context",
        "--force",
    ]);
    run.assert_code(0);
    assert!(
        run.stdout.contains(
            "the report keeps the earlier builds of vision, llm_split0, llm_split1, llm_split2, llm_split3, action_step (not in --only)"
        ),
        "{}",
        run.all()
    );
    let after = statuses(&p);
    assert_eq!(after.len(), 21, "{after:?}");
    for ((c, step), status) in &after {
        let want = if c == "action_context" {
            "ran"
        } else {
            "earlier"
        };
        assert_eq!(status, want, "{c} {step}");
    }
    let report = read_json(&p.path("reports/tiny/build-soc77.json"));
    let names: Vec<&str> = report["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["component"].as_str().unwrap())
        .collect();
    assert_eq!(names, COMPONENTS, "the model's order");

    // A perturbed golden output of action_step: it fails at cpu parity, gets no new binary,
    // keeps its previous one untouched; the other six stay built.
    let bin = p.path("ctx/tiny/action_step_socid77_archv73.bin");
    let before = sha256_hex(&bin);
    edit_golden(
        &p.path("golden/tiny/action_step_io.npz"),
        "next_trajectory",
        |a| a.mapv_inplace(|v| v * 0.5 + 0.3),
    );
    let run = p.run(&["build-ctx", "--soc", "77"]);
    run.assert_code(1);
    assert!(
        run.stdout.contains("FAILED action_step at cpu parity"),
        "{}",
        run.all()
    );
    let st = statuses(&p);
    assert_eq!(st[&("action_step".into(), "cpu parity".into())], "failed");
    assert_eq!(
        st[&("action_step".into(), "context binary".into())],
        "skipped"
    );
    for c in COMPONENTS.iter().filter(|c| **c != "action_step") {
        assert_eq!(
            st[&(c.to_string(), "context binary".into())],
            "fresh",
            "{c}"
        );
    }
    assert_eq!(
        sha256_hex(&bin),
        before,
        "the previous binary must stay untouched"
    );
    let refused = p.run(&["parity", "--backend", "htp", "--only", "action_step"]);
    refused.assert_code(2);
    assert!(refused.all().contains("is stale"), "{}", refused.all());
}

#[test]
fn dry_run_on_the_real_model_prints_the_plan_and_names_missing_files() {
    let p = Scratch::tiny();
    let run = p.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--model",
        "molmoact2-libero-lp-vtp-sd",
        "--dry-run",
    ]);
    run.assert_code(0);
    for c in COMPONENTS {
        assert!(
            run.stdout.contains(&format!(
                "MISSING onnx/molmoact2-libero-lp-vtp-sd/{c}/{c}.onnx"
            )),
            "{}",
            run.all()
        );
        assert!(
            run.stdout.contains(&format!(
                "ctx/molmoact2-libero-lp-vtp-sd/{c}_socid77_archv73.bin"
            )),
            "{}",
            run.all()
        );
    }
    assert!(run.stdout.contains("how to obtain them"), "{}", run.all());
    assert!(
        !p.path("ctx/molmoact2-libero-lp-vtp-sd").exists(),
        "a dry run writes nothing"
    );
    let real = p.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--model",
        "molmoact2-libero-lp-vtp-sd",
    ]);
    real.assert_refused(2, "is missing 14 file(s)");
}

#[test]
fn unknown_soc_lists_the_known_ones_and_chip_names_work() {
    let p = Scratch::tiny();
    let run = p.run(&["build-ctx", "--soc", "12345", "--dry-run"]);
    run.assert_refused(2, "unknown SoC `12345`")
        .assert_refused(2, "QCS9075");
    let run = p.run(&[
        "build-ctx",
        "--soc",
        "QCS9075",
        "--dry-run",
        "--only",
        "vision",
    ]);
    run.assert_code(0);
    assert!(
        run.stdout.contains("vision_socid77_archv73.bin"),
        "{}",
        run.all()
    );
}

#[test]
fn a_second_build_waits_for_the_lock() {
    let p = Scratch::tiny();
    std::fs::create_dir_all(p.path("ctx/tiny")).unwrap();
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(p.path("ctx/tiny/.build.lock"))
        .unwrap();
    lock.lock().unwrap();
    let stderr_path = p.path("second.stderr");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("--root")
        .arg(p.dir.path())
        .args(["build-ctx", "--soc", "77", "--only", "action_context"])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let mut waited = false;
    for _ in 0..600 {
        if std::fs::read_to_string(&stderr_path)
            .unwrap_or_default()
            .contains("waiting for it to finish")
        {
            waited = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(waited, "the second build never said it waits");
    assert!(
        child.try_wait().unwrap().is_none(),
        "it must not run while the lock is held"
    );
    drop(lock);
    assert!(child.wait().unwrap().success());
    assert!(
        p.path("ctx/tiny/action_context_socid77_archv73.bin")
            .is_file()
    );
}

#[test]
fn a_weight_sharing_group_is_refused_with_the_reason() {
    let p = Scratch::tiny();
    let path = p.path("recipes/tiny/llm_split0.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("vtcm_mb = 0", "vtcm_mb = 0\nweight_sharing_group = \"llm\"");
    std::fs::write(&path, text).unwrap();
    let run = p.run(&["build-ctx", "--soc", "77"]);
    run.assert_refused(2, "llm_split0 (group `llm`")
        .assert_refused(2, "QNN_COMMON_ERROR_NOT_SUPPORTED");
    assert!(
        !p.path("ctx/tiny/vision_socid77_archv73.bin").exists(),
        "nothing is built"
    );
}

#[test]
fn an_interrupted_build_never_looks_fresh_and_the_next_build_completes() {
    use std::io::BufRead;
    let p = Scratch::tiny();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("--root")
        .arg(p.dir.path())
        .args(["build-ctx", "--soc", "77"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Progress lines are on stderr.
    let stderr = child.stderr.take().unwrap();
    for line in std::io::BufReader::new(stderr).lines() {
        let line = line.unwrap();
        // The first compile (components start longest first, so which one it is depends on
        // sizes): six components are still to come when it is cut off.
        if line.contains("context binary  running") {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // Whatever was cut off, the record never claims it: the next build completes and
    // everything it reports fresh has its outputs intact.
    let run = p.run(&["build-ctx", "--soc", "77"]);
    run.assert_code(0);
    assert!(
        !run.stdout.contains("0 step(s) ran"),
        "the interrupted step must run again: {}",
        run.all()
    );
    let leftovers: Vec<_> = std::fs::read_dir(p.path("ctx/tiny"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".staging-"))
        .collect();
    assert!(leftovers.is_empty(), "staging folders left behind");
    p.run(&["build-ctx", "--soc", "77"]).assert_code(0);
    p.run(&["parity", "--backend", "htp"]).assert_code(0);
}

#[test]
fn the_dry_run_plan_as_json_parses_and_names_every_step() {
    let p = Scratch::tiny();
    let run = p.run(&["build-ctx", "--soc", "77", "--dry-run", "--json"]);
    run.assert_code(0);
    let plan: serde_json::Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", run.all()));
    assert_eq!(plan["model"], "tiny");
    let comps = plan["components"].as_array().unwrap();
    assert_eq!(comps.len(), COMPONENTS.len());
    for (c, name) in comps.iter().zip(COMPONENTS) {
        assert_eq!(c["component"], name);
        let kinds: Vec<&str> = c["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["convert", "cpu_parity", "context"]);
        for s in c["steps"].as_array().unwrap() {
            assert_eq!(s["fresh"], false, "{s}");
            assert_eq!(s["reasons"][0]["reason"], "never_built", "{s}");
            assert!(s["key"].is_string(), "{s}");
        }
        let context = &c["steps"][2];
        assert_eq!(context["record_name"], "context@soc77");
        assert!(
            context["key_parts"]["rendered HTP EP options"]
                .as_str()
                .unwrap()
                .contains("soc_model=77"),
            "{context}"
        );
    }
    assert_eq!(plan["dirty_steps"], 21);
}

/// Without a terminal (CI logs) a compile prints heartbeat lines with the compiler's stage; the
/// compiler's output is kept per step, and the report carries its stages and every step's peak RSS.
#[test]
fn a_compile_is_never_silent_and_its_stages_and_memory_are_reported() {
    let p = Scratch::tiny();
    let mut cmd = p.command(&["build-ctx", "--soc", "77", "--only", "vision"]);
    cmd.env("XTASK_HEARTBEAT_SECS", "0.2");
    let run = common::Run::from(cmd.output().unwrap());
    run.assert_code(0);
    assert!(
        run.stderr.contains("context binary  still compiling after"),
        "{}",
        run.all()
    );
    let log = std::fs::read_to_string(p.path("reports/tiny/logs/vision-context.log")).unwrap();
    assert!(
        log.contains("Starting stage: Graph Sequencing for Target"),
        "{log}"
    );
    let report = read_json(&p.path("reports/tiny/build-soc77.json"));
    let steps = report["components"][0]["steps"].as_array().unwrap();
    for s in steps {
        assert!(s["detail"]["peak_rss_mb"].as_f64().unwrap() > 1.0, "{s}");
    }
    let stages = steps[2]["detail"]["compile_stages"].as_array().unwrap();
    assert!(
        stages.iter().any(|s| s[0] == "VTCM Allocation"),
        "{stages:?}"
    );
    // The graph name inside the binary, and whether the recipe's could be honoured.
    let named = &steps[2]["detail"]["graph_name_honoured"];
    assert_eq!(named["recipe"], "vision");
    assert_eq!(named["honoured"], false, "{named}");
    assert!(
        named["why"].as_str().unwrap().contains("--toolchain sdk"),
        "{named}"
    );
    let md = std::fs::read_to_string(p.path("reports/tiny/build-soc77.md")).unwrap();
    assert!(md.contains("could not be honoured for `vision`"), "{md}");
}
