//! The hostile suite: a runtime library edited in place. One byte of `libQnnHtp.so` flipped
//! with its size and mtime kept is found before anything loads it or compiles with it, by
//! every command that uses the runtime.

use crate::common::{self, read_json};
use crate::hostile_bundle_cli::bundle;
use crate::sandbox::Sandbox;

/// One byte of libQnnHtp.so flipped with its size and mtime kept: every command that loads the
/// runtime or hands it to a compiler re-hashes what changed (inode, size or ctime) and names the
/// file before loading it; a forced build compiles nothing and keeps its binaries.
#[test]
fn a_byte_flipped_runtime_library_with_size_and_mtime_kept_is_named() {
    let s = Sandbox::new();
    let built = bundle(&s);
    common::private_runtime(&s.p, "libQnnHtp.so");
    let lib = walkdir::WalkDir::new(s.p.path("target/qnn-runtime"))
        .into_iter()
        .filter_map(|e| e.ok())
        .find(|e| e.file_name() == "libQnnHtp.so")
        .unwrap()
        .into_path();
    let mtime = std::fs::metadata(&lib).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(&lib).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(&lib, &bytes).unwrap();
    let f = std::fs::File::options().write(true).open(&lib).unwrap();
    f.set_modified(mtime).unwrap();
    drop(f);
    let out = built.display().to_string();
    for args in [
        &[
            "build-ctx",
            "--soc",
            "77",
            "--only",
            "action_context",
            "--force",
        ][..],
        &["parity", "--backend", "cpu", "--only", "action_context"][..],
        &["parity", "--backend", "ort", "--only", "action_context"][..],
        &["parity", "--backend", "htp", "--only", "action_context"][..],
        &["run", "--backend", "ort", "--iters", "1", "--warmup", "0"][..],
        &[
            "package",
            "--allow-unmeasured",
            "--soc",
            "77",
            "--only",
            "action_context",
            "--out",
            "dist/again",
        ][..],
        &["verify", &out][..],
    ] {
        let run = s.run(args, &[]);
        run.assert_refused(2, "libQnnHtp.so has sha256")
            .assert_refused(2, "cargo xtask doctor --repair-runtime");
    }
    assert!(!s.p.path("dist/again").exists());
    let bin = s.p.path("ctx/tiny/action_context_socid77_archv73.bin");
    assert_eq!(
        crate::common::sha256_hex(&bin),
        read_json(&s.p.path("ctx/tiny/action_context.record.json"))["steps"]["context@soc77"]["outputs"]
            ["ctx/tiny/action_context_socid77_archv73.bin"],
        "the forced build replaced the binary"
    );
    s.assert_untouched("flipped runtime");
}
