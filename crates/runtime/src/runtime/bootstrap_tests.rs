use super::*;

#[test]
fn a_truncated_or_altered_library_is_named_with_the_repair_command() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("rt");
    fs::create_dir_all(dir.join("lib")).unwrap();
    fs::write(dir.join("lib/libQnnHtp.so"), b"0123456789").unwrap();
    fs::write(dir.join("lib/libQnnCpu.so"), b"abcdef").unwrap();
    let file = |p: &str, b: &[u8]| RuntimeFile {
        path: p.into(),
        bytes: b.len() as u64,
        sha256: xtask_base::hashing::sha256_bytes(b),
    };
    let manifest = RuntimeManifest {
        ort_wheel_sha256: String::new(),
        qnn_wheel_sha256: None,
        files: vec![
            file("lib/libQnnHtp.so", b"0123456789"),
            file("lib/libQnnCpu.so", b"abcdef"),
        ],
    };
    fs::write(
        dir.join("manifest.json"),
        serde_json::to_vec(&manifest).unwrap(),
    )
    .unwrap();
    assert_eq!(check_runtime_files(root.path(), &dir, true).unwrap(), 2);
    fs::write(dir.join("lib/libQnnHtp.so"), b"01234").unwrap();
    fs::write(dir.join("lib/libQnnCpu.so"), b"abcdeX").unwrap();
    let cheap = check_runtime_files(root.path(), &dir, false)
        .unwrap_err()
        .to_string();
    assert!(
        cheap.contains("lib/libQnnHtp.so has 5 bytes, 10"),
        "{cheap}"
    );
    assert!(!cheap.contains("libQnnCpu"), "sizes first: {cheap}");
    assert!(cheap.contains(REPAIR_COMMAND), "{cheap}");
    // The sizes right again: the same-size edit is found without a full re-hash, since its
    // ctime moved (the unchanged file is trusted from the stamp).
    fs::write(dir.join("lib/libQnnHtp.so"), b"0123456789").unwrap();
    let fast = check_runtime_files(root.path(), &dir, false)
        .unwrap_err()
        .to_string();
    assert!(fast.contains("lib/libQnnCpu.so has sha256"), "{fast}");
    assert!(!fast.contains("libQnnHtp"), "{fast}");
    let full = check_runtime_files(root.path(), &dir, true)
        .unwrap_err()
        .to_string();
    assert!(full.contains("lib/libQnnCpu.so has sha256"), "{full}");
}

#[test]
fn each_platform_unpacks_into_its_own_folder() {
    let root = Path::new("/r");
    let x86 = runtime_dir(root, Platform::LinuxX86_64);
    let arm = runtime_dir(root, Platform::LinuxAarch64);
    assert_eq!(x86, Path::new("/r/target/qnn-runtime/ort-1.24.4-qnn-2.3.0"));
    assert_eq!(
        arm,
        Path::new("/r/target/qnn-runtime/ort-1.24.4-linux-aarch64")
    );
}

#[test]
fn the_x86_64_runtime_takes_qnn_from_its_wheel() {
    let libs = embedded_libs(Path::new("/rt"), Platform::LinuxX86_64);
    assert_eq!(
        libs.qnn_plugin(),
        Some(Path::new(
            "/rt/onnxruntime_qnn/libonnxruntime_providers_qnn.so"
        ))
    );
    assert_eq!(libs.source, "embedded");
    assert_eq!(
        libs.ort_dylib,
        Path::new("/rt/onnxruntime/capi/libonnxruntime.so.1.24.4")
    );
}

#[test]
fn without_qnn_the_request_for_its_folder_says_what_to_set() {
    let libs = RuntimeLibs {
        ort_dylib: PathBuf::from("/rt/libonnxruntime.so"),
        qnn: None,
        qnn_missing: Some(
            QnnSearch::default()
                .locate(Platform::LinuxAarch64)
                .unwrap_err(),
        ),
        source: "embedded",
    };
    let err = libs.qnn_dir().unwrap_err().to_string();
    assert!(
        err.contains("QNN_SDK_ROOT") && err.contains("QNN_EP_PLUGIN"),
        "{err}"
    );
    assert!(libs.qnn_plugin().is_none());
}
