//! The typed build record: what the card, `bundle.json` and the dry run say was compiled comes
//! from the record, never from today's recipe; a record of another schema is refused; a DLC
//! whose CPU parity fails never replaces the last good one.

use crate::common::{Scratch, read_json, sha256_hex};

fn set_opt_level(p: &Scratch, comp: &str, from: u8, to: u8) {
    let path = p.path(&format!("recipes/tiny/{comp}.toml"));
    let text = std::fs::read_to_string(&path).unwrap();
    let old = format!("optimization_level = {from}");
    assert!(text.contains(&old), "{text}");
    std::fs::write(
        &path,
        text.replace(&old, &format!("optimization_level = {to}")),
    )
    .unwrap();
}

#[test]
fn the_card_states_the_compiled_o_level_and_package_refuses_the_changed_recipe() {
    let p = Scratch::tiny();
    p.run(&["build-ctx", "--soc", "77", "--only", "vision"])
        .assert_code(0);
    p.package("dist/before", "vision", &[]).assert_code(0);
    let row = "| `vision` | embedded | fp16 | O3 | default |";
    let card = std::fs::read_to_string(p.path("dist/before/README.md")).unwrap();
    assert!(card.contains(row), "{card}");

    // The recipe now asks for O2; nothing is rebuilt.
    set_opt_level(&p, "vision", 3, 2);
    let dry = p.run(&["build-ctx", "--soc", "77", "--only", "vision", "--dry-run"]);
    dry.assert_code(0);
    assert!(
        dry.stdout.contains("optimization_level 3 → 2"),
        "{}",
        dry.all()
    );
    assert!(
        dry.stdout.contains("built:   soc 77 v73, O3"),
        "{}",
        dry.all()
    );
    let refused = p.package("dist/after", "vision", &[]);
    refused.assert_code(2);
    assert!(
        refused.stderr.contains("stale") && refused.stderr.contains("optimization_level 3 → 2"),
        "{}",
        refused.all()
    );
    assert!(!p.path("dist/after").exists());

    // With --allow-stale, the card and bundle.json state what was compiled (O3), not O2.
    p.package("dist/stale", "vision", &["--allow-stale"])
        .assert_code(0);
    let card = std::fs::read_to_string(p.path("dist/stale/README.md")).unwrap();
    assert!(card.contains(row), "{card}");
    assert!(!card.contains("| O2 |"), "{card}");
    let info = read_json(&p.path("dist/stale/reports/bundle.json"));
    assert_eq!(info["components"][0]["optimization_level"], 3);
    assert_eq!(info["components"][0]["toolchain"]["kind"], "embedded");
    // The earlier package still says O3 and still verifies against its record.
    let card = std::fs::read_to_string(p.path("dist/before/README.md")).unwrap();
    assert!(card.contains(row), "{card}");
    let out = p.path("dist/before");
    p.run(&["verify", out.to_str().unwrap()]).assert_code(0);
}

#[test]
fn a_record_of_another_schema_is_refused_with_rebuild_advice_never_filled_in() {
    let p = Scratch::tiny();
    p.run(&["build-ctx", "--soc", "77", "--only", "action_context"])
        .assert_code(0);
    let path = p.path("ctx/tiny/action_context.record.json");
    let mut record = read_json(&path);
    record["schema_version"] = 1.into();
    std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
    let refused = p.package("dist/x", "action_context", &[]);
    refused.assert_code(2);
    assert!(
        refused.stderr.contains("has schema 1")
            && refused.stderr.contains("cargo xtask build-ctx")
            && refused.stderr.contains("writes it again"),
        "{}",
        refused.all()
    );
    // A v2 record missing one fact is refused the same way.
    record["schema_version"] = 2.into();
    let ctx = record["steps"]["context@soc77"]["facts"]
        .as_object_mut()
        .unwrap();
    ctx.remove("target");
    std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
    let dry = p.run(&["build-ctx", "--only", "action_context", "--dry-run"]);
    assert!(
        dry.stdout.contains("is not a schema 2 record") && dry.stdout.contains("target"),
        "{}",
        dry.all()
    );
    p.package("dist/y", "action_context", &["--allow-stale"])
        .assert_refused(2, "rebuild");
}

#[test]
fn an_htp_arch_that_disagrees_with_the_soc_table_is_refused_at_load() {
    let p = Scratch::tiny();
    let path = p.path("recipes/tiny/model.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("htp_arch = 73"), "{text}");
    std::fs::write(&path, text.replace("htp_arch = 73", "htp_arch = 75")).unwrap();
    let line = crate::common::line_of(&text, "htp_arch");
    p.run(&["build-ctx", "--dry-run"]).assert_refused(
        2,
        &format!("recipes/tiny/model.toml:{line}: target.htp_arch: htp_arch = 75"),
    );
}

/// Issue 24 item 10: a new ONNX with the same I/O but wrong weights converts, fails CPU parity,
/// and the last good DLC and binary stay (the record says which DLC is current).
#[test]
fn a_dlc_that_fails_cpu_parity_never_replaces_the_good_one() {
    let p = Scratch::tiny();
    p.run(&["build-ctx", "--soc", "77", "--only", "llm_split2"])
        .assert_code(0);
    let dlc = p.path("ctx/tiny/llm_split2.dlc");
    let bin = p.path("ctx/tiny/llm_split2_socid77_archv73.bin");
    let (good_dlc, good_bin) = (sha256_hex(&dlc), sha256_hex(&bin));
    // Wrong weights, same graph and I/O: every float32 of the external data negated.
    let data = p.path("onnx/tiny/llm_split2.onnx.data");
    let mut bytes = std::fs::read(&data).unwrap();
    for b in bytes.iter_mut().skip(3).step_by(4) {
        *b ^= 0x80;
    }
    std::fs::write(&data, bytes).unwrap();
    let run = p.run(&["build-ctx", "--soc", "77", "--only", "llm_split2"]);
    run.assert_code(1);
    assert!(
        run.stdout.contains("FAILED llm_split2 at cpu parity")
            && run
                .stdout
                .contains("the current DLC stays ctx/tiny/llm_split2.dlc"),
        "{}",
        run.all()
    );
    assert_eq!(sha256_hex(&dlc), good_dlc, "the good DLC must stay");
    assert_eq!(sha256_hex(&bin), good_bin, "the good binary must stay");
    let candidate = p.path("ctx/tiny/llm_split2.candidate.dlc");
    assert_ne!(
        sha256_hex(&candidate),
        good_dlc,
        "the new DLC is only a candidate"
    );
    let record = read_json(&p.path("ctx/tiny/llm_split2.record.json"));
    let current = &record["steps"]["cpu_parity"]["facts"]["current_dlc"];
    assert_eq!(current["path"], "ctx/tiny/llm_split2.dlc");
    assert_eq!(current["sha256"], good_dlc.as_str());
    // Stale now, so it is refused until it builds again.
    p.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "llm_split2",
        "--require-fresh",
    ])
    .assert_code(1);
}
