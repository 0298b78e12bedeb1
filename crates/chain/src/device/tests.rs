use super::*;

#[test]
fn the_probe_answer_is_read_into_device_info() {
    let url = DeviceUrl::parse("ssh://me@board/data/x").unwrap();
    let out = "arch=aarch64\nsdk_root=/opt/a\nsdk_root=/opt/qairt\nsdk_root_from=login-shell\n\
               sdk_is_dir=1\nsdk_version=2.47.0.1\nbin_dir=aarch64-ubuntu-gcc9.4\n\
               bin_dir=aarch64-oe-linux-gcc11.2\nlib_stubs=aarch64-oe-linux-gcc11.2:libQnnHtpV73Stub.so \n\
               present=bin/aarch64-oe-linux-gcc11.2/qnn-net-run\nfree_kb=2\nnoise without a key\n";
    let info = DeviceInfo::from_probe(&url, &Probe::parse(out)).unwrap();
    assert_eq!(info.arch_dir.as_deref(), Some(ARCH_DIRS[0]));
    assert_eq!(
        info.sdk_root.as_deref(),
        Some("/opt/qairt"),
        "the last value wins"
    );
    assert_eq!(info.sdk_bin_dirs.len(), 2);
    let files = sdk_files(&xtask_base::soc::board());
    assert!(info.sdk_is_dir && info.has(&files[0]) && !info.has(&files[1]));
    assert_eq!(info.free_bytes, 2048);
    assert_eq!(
        info.workdir_abs, "/data/x",
        "the URL's folder when not reported"
    );
    assert_eq!(
        info.lib_stubs,
        vec![(
            ARCH_DIRS[0].to_string(),
            vec!["libQnnHtpV73Stub.so".to_string()]
        )]
    );
    assert_eq!(info.dsp_library_path, None);
    assert!(DeviceInfo::from_probe(&url, &Probe::parse("free_kb=1\n")).is_err());
}

#[test]
fn the_tools_folder_follows_the_arch() {
    let none: Vec<String> = Vec::new();
    assert_eq!(
        arch_dir_for("aarch64", &none).as_deref(),
        Some(ARCH_DIRS[1])
    );
    assert_eq!(
        arch_dir_for("arm64", &[ARCH_DIRS[0].to_string()]).as_deref(),
        Some(ARCH_DIRS[0])
    );
    assert_eq!(arch_dir_for("x86_64", &none).as_deref(), Some(ARCH_DIRS[2]));
    assert_eq!(arch_dir_for("riscv64", &none), None);
}
