use super::*;

fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn manifest_paths_must_stay_inside() {
    for good in [
        "manifest.json",
        "ctx/a.bin",
        "onnx/vision/vision.onnx",
        "a..b/c",
    ] {
        assert_eq!(unsafe_path(good), None, "{good}");
    }
    for bad in [
        "",
        "/etc/hostname",
        "../x",
        "ctx/../../x",
        "ctx//a",
        "./a",
        "ctx/.",
        "a\\b",
        "ctx/",
        "a\nb",
    ] {
        assert!(unsafe_path(bad).is_some(), "{bad:?}");
    }
}

#[test]
fn links_fifos_and_outside_files_are_refused_without_a_word_about_them() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret");
    fs::write(&secret, b"SENTINEL-SECRET-BYTES").unwrap();
    let b = tempfile::tempdir().unwrap();
    let d = b.path();
    fs::create_dir_all(d.join("ctx")).unwrap();
    fs::write(d.join("ctx/good.bin"), b"good").unwrap();
    std::os::unix::fs::symlink(&secret, d.join("ctx/stolen")).unwrap();
    std::os::unix::fs::symlink(outside.path(), d.join("onnx")).unwrap();
    mkfifo(&d.join("ctx/pipe"));

    let s = scan(d).unwrap();
    assert_eq!(s.files.keys().collect::<Vec<_>>(), ["ctx/good.bin"]);
    assert_eq!(s.refused["ctx/stolen"], "a symbolic link");
    assert_eq!(s.refused["onnx"], "a symbolic link");
    assert_eq!(s.refused["ctx/pipe"], "a FIFO");

    assert_eq!(read_small(d, "ctx/good.bin").unwrap(), b"good");
    for rel in ["ctx/stolen", "onnx/secret", "ctx/pipe", "ctx/none"] {
        let err = format!("{:#}", open(d, rel).unwrap_err());
        assert!(err.starts_with(rel), "{err}");
        assert!(!err.contains("SENTINEL") && !err.contains(&outside.path().display().to_string()));
    }
    let abs = secret.display().to_string();
    let err = format!("{:#}", sha256(d, &abs).unwrap_err());
    assert!(err.contains("absolute") && !err.contains("21"), "{err}");
    let err = format!("{:#}", sha256(d, "../x").unwrap_err());
    assert!(err.contains("`..`"), "{err}");
}

#[test]
fn a_copy_is_checked_against_the_manifest_hash_and_never_follows_its_destination() {
    let b = tempfile::tempdir().unwrap();
    fs::write(b.path().join("f"), b"abc").unwrap();
    let out = tempfile::tempdir().unwrap();
    let want = xtask_base::hashing::sha256_bytes(b"abc");
    assert_eq!(
        copy_out(b.path(), "f", &out.path().join("ok"), Some(&want)).unwrap(),
        want
    );
    let err = copy_out(b.path(), "f", &out.path().join("bad"), Some("00")).unwrap_err();
    assert!(
        err.to_string().contains("changed while it was copied"),
        "{err}"
    );
    assert!(!out.path().join("bad").exists());
    let victim = out.path().join("victim");
    fs::write(&victim, b"keep").unwrap();
    std::os::unix::fs::symlink(&victim, out.path().join("link")).unwrap();
    assert!(copy_out(b.path(), "f", &out.path().join("link"), None).is_err());
    assert_eq!(fs::read(&victim).unwrap(), b"keep");
}

#[test]
fn a_record_behind_a_link_is_refused_whether_or_not_its_target_exists() {
    #[derive(Debug, serde::Serialize, serde::Deserialize)]
    struct R {
        schema_version: u32,
    }
    impl xtask_base::record::Versioned for R {
        const KIND: &'static str = "test record";
        const SCHEMA: u32 = 1;
    }
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("r.json"), br#"{"schema_version": 1}"#).unwrap();
    let b = tempfile::tempdir().unwrap();
    let d = b.path();
    assert!(
        read_record::<R>(d, "reports/r.json", "x")
            .unwrap()
            .is_none()
    );
    std::os::unix::fs::symlink(outside.path(), d.join("reports")).unwrap();
    let refusal = |rel: &str| {
        let err = format!("{:#}", read_record::<R>(d, rel, "x").unwrap_err());
        assert!(
            err.contains("cannot be opened as a regular file inside the bundle"),
            "{err}"
        );
        err.replace(rel, "REL")
    };
    // The same words whether the link's target holds the file or not.
    assert_eq!(refusal("reports/r.json"), refusal("reports/none.json"));
    fs::remove_file(d.join("reports")).unwrap();
    fs::create_dir(d.join("reports")).unwrap();
    fs::write(d.join("reports/r.json"), br#"{"schema_version": 1}"#).unwrap();
    assert!(
        read_record::<R>(d, "reports/r.json", "x")
            .unwrap()
            .is_some()
    );
}
