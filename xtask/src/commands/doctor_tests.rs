use super::*;
use std::path::PathBuf;

#[test]
fn missing_libraries_are_named_with_where_they_were_looked_for() {
    let t = tempfile::tempdir().unwrap();
    let sdk = t.path().join("sdk");
    let lib = sdk.join("lib/aarch64-ubuntu-gcc9.4");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(lib.join("libQnnHtp.so"), b"x").unwrap();
    let search = QnnSearch {
        sdk_root: Some(sdk),
        ..Default::default()
    };
    let lines = inventory_lines(&search.inventory(Platform::LinuxAarch64));
    let line = |w: &str| lines.iter().find(|l| l.contains(w)).unwrap().clone();
    assert!(line("libQnnHtp.so ").starts_with("present"), "{lines:?}");
    let stub = line("libQnnHtpV73Stub.so");
    assert!(stub.starts_with("MISSING"), "{stub}");
    assert!(
        stub.contains("QNN_SDK_ROOT/lib/aarch64-ubuntu-gcc9.4"),
        "{stub}"
    );
    let skel = line("libQnnHtpV73Skel.so");
    assert!(
        skel.starts_with("MISSING") && skel.contains(&xtask_base::soc::board().dsp_lib_dir()),
        "{skel}"
    );
    assert!(
        line("ADSP_LIBRARY_PATH").starts_with("MISSING"),
        "{lines:?}"
    );
    assert!(line("providers_qnn").starts_with("MISSING"), "{lines:?}");

    let none = inventory_lines(&QnnSearch::default().inventory(Platform::LinuxAarch64));
    assert!(
        none.iter()
            .filter(|l| !l.contains("ADSP"))
            .all(|l| l.contains("QNN_SDK_ROOT, QNN_LIB_DIR and QNN_EP_PLUGIN are unset")),
        "{none:?}"
    );
}

#[test]
fn the_qnn_version_is_compared_with_each_recipe() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let ok = qairt_vs_recipes(&root, Some("v2.47.0.260601114230"), None);
    assert!(
        ok.iter()
            .any(|l| l.contains("tiny: wants 2.47.0") && l.ends_with("matches")),
        "{ok:?}"
    );
    let old = qairt_vs_recipes(&root, None, Some("2.45.0.1"));
    assert!(old.iter().all(|l| l.contains("MISMATCH")), "{old:?}");
    let none = qairt_vs_recipes(&root, None, None);
    assert!(none.iter().all(|l| l.ends_with("MISSING")), "{none:?}");
}
