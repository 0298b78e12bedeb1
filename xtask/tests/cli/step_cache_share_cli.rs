//! The build cache, round two: two models sharing their inputs share entries (and never evict
//! each other); a link anywhere in the cache is never written through; a byte-flipped stored
//! file is named by `cache verify`, never restored, rebuilt and replaced; a cache that cannot
//! store is a warning; `cache ls|gc|verify|rm` work from `/` with no project.

use std::path::Path;

use crate::common::{Run, Scratch, copy_tree, sha256_hex};
use crate::step_cache_cli::{build, entry_files, keys};

fn assert_summary(run: &Run, summary: &str) {
    run.assert_code(0);
    assert!(run.stdout.contains(summary), "{}", run.all());
}

/// A second model `tiny-b` in the same project: the same recipes and the same input content,
/// copied to its own folders (`onnx/tiny-b`, `golden/tiny-b`), another name: other paths for
/// every input, artifact and report.
fn add_second_model(p: &Scratch) {
    copy_tree(&p.path("onnx/tiny"), &p.path("onnx/tiny-b"));
    copy_tree(&p.path("golden/tiny"), &p.path("golden/tiny-b"));
    copy_tree(&p.path("recipes/tiny"), &p.path("recipes/tiny-b"));
    for e in std::fs::read_dir(p.path("recipes/tiny-b")).unwrap() {
        let path = e.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let text = text
            .replace("name = \"tiny\"", "name = \"tiny-b\"")
            .replace("onnx/tiny/", "onnx/tiny-b/")
            .replace("golden/tiny/", "golden/tiny-b/");
        std::fs::write(&path, text).unwrap();
    }
}

#[test]
fn two_models_sharing_inputs_built_alternately_never_rebuild_each_other() {
    let cache = tempfile::tempdir().unwrap();
    let p = Scratch::tiny();
    add_second_model(&p);
    assert_summary(
        &build(&p, cache.path(), &["--model", "tiny"]),
        "21 step(s) ran, 0 restored from cache",
    );
    // The second model's first build: every step is the first model's entry.
    assert_summary(
        &build(&p, cache.path(), &["--model", "tiny-b"]),
        "0 step(s) ran, 21 restored from cache",
    );
    for f in ["vision.dlc", "vision_socid77_archv73.bin"] {
        assert_eq!(
            sha256_hex(&p.path(&format!("ctx/tiny/{f}"))),
            sha256_hex(&p.path(&format!("ctx/tiny-b/{f}")))
        );
    }
    // Alternately, with their outputs gone each time: nothing runs again for either.
    for _ in 0..2 {
        for model in ["tiny", "tiny-b"] {
            std::fs::remove_dir_all(p.path(&format!("ctx/{model}"))).unwrap();
            assert_summary(
                &build(&p, cache.path(), &["--model", model]),
                "0 step(s) ran, 21 restored from cache",
            );
        }
    }
    for model in ["tiny", "tiny-b"] {
        p.run(&[
            "build-ctx",
            "--soc",
            "77",
            "--model",
            model,
            "--require-fresh",
        ])
        .assert_code(0);
    }
    let ls = p.run(&["cache", "ls", "--cache", cache.path().to_str().unwrap()]);
    assert!(ls.stdout.contains("21 entries"), "{}", ls.all());
}

/// Every file in the cache replaced by a link to a file outside it, then a `--force` build:
/// each link is replaced by a file, each file outside keeps its bytes. A cache folder that is
/// a link is refused with a warning and the build stands, writing nothing through it.
#[test]
fn a_link_anywhere_in_the_cache_is_never_written_through() {
    let (cache, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = Scratch::tiny();
    build(&a, cache.path(), &["--only", "vision"]).assert_code(0);
    let layout = cache.path().join("xtask-steps-v2");
    let mut victims = Vec::new();
    for sub in ["entries", "blobs"] {
        for e in std::fs::read_dir(layout.join(sub)).unwrap() {
            let place = e.unwrap().path();
            let victim = outside.path().join(format!("{}-{}", sub, victims.len()));
            std::fs::rename(&place, &victim).unwrap();
            std::os::unix::fs::symlink(&victim, &place).unwrap();
            victims.push((place, victim.clone(), sha256_hex(&victim)));
        }
    }
    assert!(victims.len() >= 9, "3 entries, 3 stamps, 3+ files");
    let b = Scratch::tiny();
    let run = build(&b, cache.path(), &["--only", "vision", "--force"]);
    assert_summary(&run, "3 step(s) ran, 0 restored from cache");
    for (_, victim, sha) in &victims {
        assert_eq!(
            &sha256_hex(victim),
            sha,
            "{} was written through",
            victim.display()
        );
    }
    // Every entry, stamp and file the entries name is a file now (the DLC is not byte-stable
    // across builds: the first build's DLC is a link no entry names any more, left alone).
    let is_file = |p: &Path| std::fs::symlink_metadata(p).unwrap().file_type().is_file();
    for e in std::fs::read_dir(layout.join("entries")).unwrap() {
        assert!(is_file(&e.unwrap().path()));
    }
    for key in keys(&b, &["--only", "vision"]) {
        for (artifact, blob) in entry_files(cache.path(), &key) {
            assert!(is_file(&blob), "{artifact}: {} is a link", blob.display());
        }
    }
    assert_summary(
        &build(&Scratch::tiny(), cache.path(), &["--only", "vision"]),
        "0 step(s) ran, 3 restored from cache",
    );
    // The temporary folder itself a link to a folder outside.
    let empty = tempfile::tempdir().unwrap();
    std::fs::remove_dir_all(layout.join("tmp")).unwrap();
    std::os::unix::fs::symlink(empty.path(), layout.join("tmp")).unwrap();
    let run = build(&Scratch::tiny(), cache.path(), &["--only", "vision"]);
    assert_summary(&run, "3 step(s) ran, 0 fresh");
    assert!(
        run.stderr
            .contains("warning: building without the build cache"),
        "{}",
        run.all()
    );
    assert_eq!(std::fs::read_dir(empty.path()).unwrap().count(), 0);
}

/// Entries that cannot be written (a folder stands where each entry file goes): every step
/// builds, each store failure is a warning, and the build succeeds.
#[test]
fn a_cache_that_cannot_store_is_a_warning_and_the_build_stands() {
    let cache = tempfile::tempdir().unwrap();
    let a = Scratch::tiny();
    let entries = cache.path().join("xtask-steps-v2/entries");
    std::fs::create_dir_all(&entries).unwrap();
    for key in keys(&a, &["--only", "vision"]) {
        std::fs::create_dir(entries.join(format!("{key}.json"))).unwrap();
    }
    let run = build(&a, cache.path(), &["--only", "vision"]);
    assert_summary(&run, "3 step(s) ran, 0 restored from cache");
    assert_eq!(
        run.stderr.matches("was built but not cached").count(),
        3,
        "{}",
        run.all()
    );
}

fn xtask_from_root(args: &[&str], env: &[(&str, &Path)]) -> Run {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"));
    cmd.current_dir("/")
        .args(args)
        .env_remove("XTASK_CACHE_DIR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    Run::from(cmd.output().unwrap())
}

/// A byte flipped in a stored binary: `cache verify` (run from `/`) names the entry and the
/// file and fails; a build restores nothing from that entry, rebuilds it and replaces it;
/// `cache verify` then passes. `ls`, `gc`, `rm` work from `/` too.
#[test]
fn a_flipped_byte_is_named_by_verify_rebuilt_and_replaced_and_the_commands_work_from_root() {
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().to_str().unwrap();
    let a = Scratch::tiny();
    build(&a, cache.path(), &["--only", "vision"]).assert_code(0);
    let keys = keys(&a, &["--only", "vision"]);
    let (artifact, bin) = entry_files(cache.path(), &keys[2])
        .into_iter()
        .find(|(artifact, _)| artifact.ends_with(".bin"))
        .unwrap();
    let mut bytes = std::fs::read(&bin).unwrap();
    bytes[100] ^= 0x01;
    std::fs::write(&bin, bytes).unwrap();

    let verify = xtask_from_root(&["cache", "verify", "--cache", dir], &[]);
    verify.assert_code(1);
    let named = format!("bad entry {} {artifact}: ", keys[2]);
    assert!(verify.stdout.contains(&named), "{}", verify.all());
    assert!(
        verify.stdout.contains("3 entries checked, 1 bad"),
        "{}",
        verify.all()
    );

    let b = Scratch::tiny();
    let run = build(&b, cache.path(), &["--only", "vision"]);
    assert_summary(&run, "1 step(s) ran, 2 restored from cache");
    assert!(
        run.stderr
            .contains("warning: vision: context binary: cache entry"),
        "{}",
        run.all()
    );
    assert_eq!(
        sha256_hex(&a.path("ctx/tiny/vision_socid77_archv73.bin")),
        sha256_hex(&b.path("ctx/tiny/vision_socid77_archv73.bin"))
    );
    let env = [("XTASK_CACHE_DIR", cache.path())];
    let verify = xtask_from_root(&["cache", "verify"], &env);
    verify.assert_code(0);
    assert!(
        verify.stdout.contains("3 entries checked, 0 bad"),
        "{}",
        verify.all()
    );

    let ls = xtask_from_root(&["cache", "ls"], &env);
    ls.assert_code(0);
    assert!(ls.stdout.contains("3 entries"), "{}", ls.all());
    let rm = xtask_from_root(&["cache", "rm", "--cache", dir, &keys[0][..12]], &[]);
    rm.assert_code(0);
    assert!(rm.stdout.contains("1 entry removed"), "{}", rm.all());
    let rm = xtask_from_root(&["cache", "rm", "--model", "tiny"], &env);
    rm.assert_code(0);
    assert!(rm.stdout.contains("2 entries removed"), "{}", rm.all());
    let gc = xtask_from_root(&["cache", "gc", "--cache", dir, "--max-size", "1G"], &[]);
    gc.assert_code(0);
    let ls = xtask_from_root(&["cache", "ls", "--cache", dir], &[]);
    assert!(
        ls.stdout.contains("0 entries, 0 B stored in 0 file(s)"),
        "{}",
        ls.all()
    );
    // Without a cache named anywhere: refused, saying what to pass.
    xtask_from_root(&["cache", "ls"], &[]).assert_refused(2, "--cache DIR");
}

/// The size cap is applied after a build (least recently used first): `--cache-max-size`,
/// else `XTASK_CACHE_MAX_SIZE`; a value that is not a size is refused, never defaulted.
#[test]
fn the_size_cap_is_applied_after_a_build() {
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().to_str().unwrap();
    let a = Scratch::tiny();
    let run = build(
        &a,
        cache.path(),
        &["--only", "vision", "--cache-max-size", "1M"],
    );
    run.assert_code(0);
    let ls = a.run(&["cache", "ls", "--cache", dir]);
    assert!(ls.stdout.contains("3 entries"), "{}", ls.all());
    // The DLC alone is 0.5 MB: a 600K cap keeps the most recently used entries only.
    let run = Scratch::command(
        &a,
        &["build-ctx", "--soc", "77", "--only", "vision", "--force"],
    )
    .env("XTASK_CACHE_DIR", cache.path())
    .env("XTASK_CACHE_MAX_SIZE", "600K")
    .output()
    .unwrap();
    let run = Run::from(run);
    run.assert_code(0);
    assert!(
        run.stderr.contains("least recently used entr"),
        "{}",
        run.all()
    );
    let ls = a.run(&["cache", "ls", "--cache", dir]);
    assert!(!ls.stdout.contains("3 entries"), "{}", ls.all());
    let bad = Scratch::command(&a, &["build-ctx", "--soc", "77", "--only", "vision"])
        .env("XTASK_CACHE_DIR", cache.path())
        .env("XTASK_CACHE_MAX_SIZE", "lots")
        .output()
        .unwrap();
    Run::from(bad).assert_refused(2, "XTASK_CACHE_MAX_SIZE");
}
