//! What the card, `bundle.json` and `verify` say compiled the binaries comes from the build
//! records, never from the recipe: the QNN build the runtime reported when it compiled each
//! binary (the context step's `versions.qnn`), the QAIRT release of that build, and the tool
//! identity the record names (`versions.xtask`, a hash of the tool's sources).

use crate::common::{Scratch, read_json};

/// The context step's versions in a component's build record.
fn context_versions(p: &Scratch, comp: &str) -> serde_json::Value {
    let record = read_json(&p.path(&format!("ctx/tiny/{comp}.record.json")));
    record["steps"]["context@soc77"]["facts"]["versions"].clone()
}

#[test]
fn the_card_of_a_fresh_build_states_the_reported_qnn_build_and_the_records_tool_identity() {
    let p = Scratch::tiny();
    p.run(&["build-ctx", "--soc", "77", "--only", "action_step"])
        .assert_code(0);
    let versions = context_versions(&p, "action_step");
    let qnn = versions["qnn"].as_str().unwrap().to_string();
    let xtask = versions["xtask"].as_str().unwrap().to_string();
    // The runtime's own build string, and the tool's identity from its sources (not `0.1.0`).
    assert!(qnn.starts_with("v2.47.0."), "{versions}");
    let (_, hash) = xtask.split_once("+src.").expect("0.1.0+src.<hash>");
    assert!(
        hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{xtask}"
    );

    p.package("dist/facts", "action_step", &[]).assert_code(0);
    let out = p.path("dist/facts");
    let card = std::fs::read_to_string(out.join("README.md")).unwrap();
    for line in [
        "(Hexagon v73, soc_id 77)**, QAIRT **2.47.0**.".to_string(),
        format!("QAIRT 2.47.0 (QNN build `{qnn}`)"),
        format!("- Built by xtask `{xtask}` (the tool identity its build records name)"),
    ] {
        assert!(card.contains(&line), "the card lacks {line:?}:\n{card}");
    }
    let info = read_json(&out.join("reports/bundle.json"));
    assert_eq!(info["schema_version"], 3, "{info}");
    assert_eq!(info["built_by"]["qnn_build"], qnn.as_str(), "{info}");
    assert_eq!(info["built_by"]["qairt"], "2.47.0", "{info}");
    assert_eq!(info["built_by"]["xtask"], xtask.as_str(), "{info}");
    assert_eq!(read_json(&out.join("manifest.json"))["schema_version"], 1);
    p.run(&["verify", out.to_str().unwrap()]).assert_code(0);

    // A record naming another tool identity (its step keys untouched, so still fresh) is shown
    // as that identity, and verify agrees with it.
    let other = "0.0.9+src.0123456789abcdef";
    let path = p.path("ctx/tiny/action_step.record.json");
    let mut record = read_json(&path);
    record["steps"]["context@soc77"]["facts"]["versions"]["xtask"] = other.into();
    std::fs::write(&path, serde_json::to_vec_pretty(&record).unwrap()).unwrap();
    p.package("dist/other", "action_step", &[]).assert_code(0);
    let out = p.path("dist/other");
    let card = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(
        card.contains(&format!("- Built by xtask `{other}`")) && !card.contains(&xtask),
        "{card}"
    );
    p.run(&["verify", out.to_str().unwrap()]).assert_code(0);
}

/// `bundle.json` claiming other build facts than the shipped records (with the card rendered
/// to match and the checksums fixed, as a careful forger would) is refused by verify.
#[test]
fn verify_refuses_build_facts_the_records_do_not_state() {
    let p = Scratch::tiny();
    p.run(&["build-ctx", "--soc", "77", "--only", "action_step"])
        .assert_code(0);
    p.package("dist/t", "action_step", &[]).assert_code(0);
    let out = p.path("dist/t");
    let qnn = context_versions(&p, "action_step")["qnn"]
        .as_str()
        .unwrap()
        .to_string();
    let forge = |rel: &str| {
        let path = out.join(rel);
        let text = std::fs::read_to_string(&path).unwrap();
        let forged = text.replace(&qnn, "v2.48.0.1").replace("2.47.0", "2.48.0");
        assert_ne!(text, forged, "{rel} names the QAIRT release");
        std::fs::write(&path, forged).unwrap();
    };
    forge("README.md");
    // Only the bundle-wide facts: each component's own copy still matches its record.
    let info_path = out.join("reports/bundle.json");
    let mut info = read_json(&info_path);
    info["built_by"]["qairt"] = "2.48.0".into();
    info["built_by"]["qnn_build"] = "v2.48.0.1".into();
    std::fs::write(&info_path, serde_json::to_vec_pretty(&info).unwrap()).unwrap();
    let manifest_path = out.join("manifest.json");
    let mut manifest = read_json(&manifest_path);
    for f in manifest["files"].as_array_mut().unwrap() {
        let rel = f["path"].as_str().unwrap().to_string();
        if rel == "README.md" || rel == "reports/bundle.json" {
            f["bytes"] = std::fs::metadata(out.join(&rel)).unwrap().len().into();
            f["sha256"] = crate::common::sha256_hex(&out.join(&rel)).into();
        }
    }
    std::fs::write(
        &manifest_path,
        serde_json::to_vec_pretty(&manifest).unwrap(),
    )
    .unwrap();
    let sums: String = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{}  {}\n",
                f["sha256"].as_str().unwrap(),
                f["path"].as_str().unwrap()
            )
        })
        .collect();
    std::fs::write(out.join("SHA256SUMS"), sums).unwrap();
    let run = p.run(&["verify", out.to_str().unwrap()]);
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("reports/bundle.json says the binaries were built by QAIRT 2.48.0")
            && run.stderr.contains(&format!(
                "their build records say QAIRT 2.47.0, QNN build {qnn}"
            )),
        "{}",
        run.all()
    );
}
