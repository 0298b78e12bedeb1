//! The embedded runtime under damage: a truncated or altered library inside
//! `target/qnn-runtime/` is named with the command that repairs it, before anything is loaded
//! (a truncated `.so` mapped by the loader kills the process with SIGBUS and no message).

use crate::common;

use std::path::Path;

use common::Scratch;

use common::private_runtime;

fn find(p: &Scratch, name: &str) -> std::path::PathBuf {
    walkdir::WalkDir::new(p.path("target/qnn-runtime"))
        .into_iter()
        .filter_map(|e| e.ok())
        .find(|e| e.file_name() == name)
        .map(|e| e.path().to_path_buf())
        .unwrap()
}

#[test]
fn a_truncated_htp_library_is_named_with_the_repair_command_and_repaired() {
    let p = Scratch::tiny();
    private_runtime(&p, "libQnnHtp.so");
    let lib = find(&p, "libQnnHtp.so");
    let len = std::fs::metadata(&lib).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&lib)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    for args in [
        &["doctor"][..],
        &["build-ctx", "--soc", "77", "--only", "action_step"][..],
    ] {
        let run = p.run(args);
        run.assert_refused(2, "libQnnHtp.so has")
            .assert_refused(2, "truncated")
            .assert_refused(2, "cargo xtask doctor --repair-runtime");
    }
    assert!(!p.path("ctx/tiny/action_step.dlc").exists());
    let repaired = p.run(&["doctor", "--repair-runtime"]);
    repaired.assert_code(0);
    assert!(
        repaired.stdout.contains("match their recorded sha256"),
        "{}",
        repaired.all()
    );
    assert_eq!(
        std::fs::metadata(find(&p, "libQnnHtp.so")).unwrap().len(),
        len
    );
}

#[test]
fn doctor_rehashes_and_names_a_library_altered_in_place() {
    let p = Scratch::tiny();
    private_runtime(&p, "libQnnCpu.so");
    let lib = find(&p, "libQnnCpu.so");
    let mut bytes = std::fs::read(&lib).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    std::fs::write(&lib, bytes).unwrap();
    let run = p.run(&["doctor"]);
    run.assert_refused(2, "libQnnCpu.so has sha256");
    assert!(Path::new(&p.path("target/qnn-runtime")).is_dir());
}

/// `doctor` exits 1 when a backend the recipes need is not usable (here the HTP library is
/// absent from user-provided libraries), and 0 when only the usable ones are asked for.
#[test]
fn doctor_fails_when_a_needed_backend_is_not_usable() {
    let p = Scratch::tiny();
    let shared = std::fs::canonicalize(p.path("target/qnn-runtime")).unwrap();
    let find_in = |name: &str| {
        walkdir::WalkDir::new(&shared)
            .into_iter()
            .filter_map(|e| e.ok())
            .find(|e| e.file_name() == name)
            .map(|e| e.path().to_path_buf())
            .unwrap()
    };
    let ort = find_in("libonnxruntime.so.1.24.4");
    let plugin = find_in("libonnxruntime_providers_qnn.so");
    let qnn_dir = plugin.parent().unwrap();
    // The wheel's layout, inside the temporary folder only: the plugin finds its bundled
    // libc++ in ../onnxruntime_qnn.libs.
    let tmp = tempfile::tempdir().unwrap();
    let partial = tmp.path().join("onnxruntime_qnn");
    std::fs::create_dir(&partial).unwrap();
    for entry in std::fs::read_dir(qnn_dir).unwrap().flatten() {
        if entry.file_name() != "libQnnHtp.so" {
            std::os::unix::fs::symlink(entry.path(), partial.join(entry.file_name())).unwrap();
        }
    }
    let libs = qnn_dir.parent().unwrap().join("onnxruntime_qnn.libs");
    if libs.is_dir() {
        std::os::unix::fs::symlink(&libs, tmp.path().join("onnxruntime_qnn.libs")).unwrap();
    }
    let run = |need: Option<&str>| {
        let mut args = vec!["doctor"];
        if let Some(n) = need {
            args.extend(["--need", n]);
        }
        let mut cmd = p.command(&args);
        cmd.env("ORT_DYLIB_PATH", &ort).env("QNN_LIB_DIR", &partial);
        common::Run::from(cmd.output().unwrap())
    };
    let all = run(None);
    all.assert_code(1);
    assert!(
        all.stdout.contains("needed but not usable")
            && all.stdout.contains("libQnnHtp.so is missing"),
        "{}",
        all.all()
    );
    // The QNN CPU backend is whole in the partial folder, and ORT needs no QNN at all.
    run(Some("cpu")).assert_code(0);
    run(Some("ort")).assert_code(0);
}

/// A thread count the shared ORT pool cannot use is refused by name, not replaced by the
/// default behind the user's back.
#[test]
fn a_bad_ort_thread_count_is_refused_by_name() {
    let p = Scratch::tiny();
    for bad in ["0", "two"] {
        let out = p
            .command(&["parity", "--backend", "ort", "--only", "vision"])
            .env("XTASK_ORT_THREADS", bad)
            .output()
            .unwrap();
        common::Run::from(out).assert_refused(2, &format!("XTASK_ORT_THREADS=\"{bad}\""));
    }
    let ok = p
        .command(&["parity", "--backend", "ort", "--only", "vision"])
        .env("XTASK_ORT_THREADS", "1")
        .output()
        .unwrap();
    common::Run::from(ok).assert_code(0);
}
