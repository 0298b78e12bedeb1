//! The build step cache (`build-ctx --cache DIR`, `XTASK_CACHE_DIR`): two copies of the
//! project share one cache folder; the second restores every step, byte-identical, and passes
//! every release-grade check; a changed recipe builds only its own steps; corrupt or partial
//! entries are refused and rebuilt; `cache ls` and `cache gc` size the folder. Sharing across
//! models, links, `cache verify|rm` and the size cap: `step_cache_share_cli`.

use std::path::Path;

use crate::common::{Scratch, read_json, sha256_hex};

const COMPONENTS: [&str; 7] = [
    "vision",
    "llm_split0",
    "llm_split1",
    "llm_split2",
    "llm_split3",
    "action_context",
    "action_step",
];

/// `build-ctx --soc 77 --cache CACHE <extra…>` on the project.
pub(crate) fn build(p: &Scratch, cache: &Path, extra: &[&str]) -> crate::common::Run {
    let mut args = vec![
        "build-ctx",
        "--soc",
        "77",
        "--cache",
        cache.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    p.run(&args)
}

fn statuses(p: &Scratch) -> Vec<(String, String, String)> {
    let report = read_json(&p.path("reports/tiny/build-soc77.json"));
    let mut out = Vec::new();
    for c in report["components"].as_array().unwrap() {
        for s in c["steps"].as_array().unwrap() {
            out.push((
                c["component"].as_str().unwrap().to_string(),
                s["step"].as_str().unwrap().to_string(),
                s["status"].as_str().unwrap().to_string(),
            ));
        }
    }
    out
}

#[test]
fn a_second_copy_restores_every_step_and_passes_every_check() {
    let cache = tempfile::tempdir().unwrap();
    let a = Scratch::tiny();
    build(&a, cache.path(), &[]).assert_code(0);
    let b = Scratch::tiny();
    let run = build(&b, cache.path(), &[]);
    run.assert_code(0);
    assert!(
        run.stdout.contains("0 step(s) ran, 21 restored from cache"),
        "{}",
        run.all()
    );
    assert!(run.all().contains("restored from cache"), "{}", run.all());
    for (comp, step, status) in statuses(&b) {
        assert_eq!(status, "restored", "{comp} {step}");
    }
    let report = read_json(&b.path("reports/tiny/build-soc77.json"));
    let key = report["components"][0]["steps"][2]["restored_from_cache"]
        .as_str()
        .unwrap();
    assert_eq!(key.len(), 64);
    for c in COMPONENTS {
        for f in [
            format!("{c}.dlc"),
            format!("{c}_socid77_archv73.bin"),
            format!("{c}_socid77_archv73_ctx.onnx"),
        ] {
            let rel = format!("ctx/tiny/{f}");
            assert_eq!(
                sha256_hex(&a.path(&rel)),
                sha256_hex(&b.path(&rel)),
                "{rel}"
            );
        }
    }
    // Restored steps are checked like built ones.
    b.run(&["build-ctx", "--soc", "77", "--require-fresh"])
        .assert_code(0);
    b.run(&["parity", "--backend", "htp"]).assert_code(0);
    b.run(&[
        "package",
        "--allow-unmeasured",
        "--soc",
        "77",
        "--out",
        b.path("dist").to_str().unwrap(),
    ])
    .assert_code(0);
    b.run(&["verify", b.path("dist").to_str().unwrap()])
        .assert_code(0);

    // One component's recipe option changes in a third copy (cache from the environment):
    // only that step compiles, every other step is restored.
    let c = Scratch::tiny();
    let path = c.path("recipes/tiny/action_step.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace("optimization_level = 3", "optimization_level = 2"),
    )
    .unwrap();
    let run = Scratch::command(&c, &["build-ctx", "--soc", "77"])
        .env("XTASK_CACHE_DIR", cache.path())
        .output()
        .unwrap();
    let run = crate::common::Run::from(run);
    run.assert_code(0);
    assert!(
        run.stdout.contains("1 step(s) ran, 20 restored from cache"),
        "{}",
        run.all()
    );
    for (comp, step, status) in statuses(&c) {
        let want = if comp == "action_step" && step == "context binary" {
            "ran"
        } else {
            "restored"
        };
        assert_eq!(status, want, "{comp} {step}");
    }
    // The keys CI uses name every step of a component.
    let keys = a.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "vision",
        "--print-keys",
    ]);
    keys.assert_code(0);
    let lines: Vec<&str> = keys.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", keys.all());
    assert!(
        lines[2].starts_with("vision context@soc77 "),
        "{}",
        keys.all()
    );
}

/// The stored files (blobs) an entry names, by the output they are in the storing build.
pub fn entry_files(cache: &Path, key: &str) -> Vec<(String, std::path::PathBuf)> {
    let layout = cache.join("xtask-steps-v2");
    let entry = read_json(&layout.join("entries").join(format!("{key}.json")));
    let outputs = entry["names"]["outputs"].as_array().unwrap();
    entry["files"]
        .as_array()
        .unwrap()
        .iter()
        .zip(outputs)
        .map(|(f, o)| {
            let sha = f["sha256"].as_str().unwrap();
            (
                o.as_str().unwrap().to_string(),
                layout.join("blobs").join(sha),
            )
        })
        .collect()
}

/// `<component> <step> <key>` lines of `--print-keys`, as keys.
pub fn keys(p: &Scratch, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["build-ctx", "--soc", "77", "--print-keys"];
    args.extend_from_slice(extra);
    let run = p.run(&args);
    run.assert_code(0);
    run.stdout
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().to_string())
        .collect()
}

#[test]
fn corrupt_and_partial_entries_are_refused_and_rebuilt_and_gc_sizes_the_cache() {
    let cache = tempfile::tempdir().unwrap();
    let a = Scratch::tiny();
    build(&a, cache.path(), &["--only", "vision"]).assert_code(0);
    let keys = keys(&a, &["--only", "vision"]);
    // convert: its DLC truncated to half, as a writer killed mid-copy would leave it had
    // the file not been renamed into place only once complete.
    let dlc = &entry_files(cache.path(), &keys[0])[0].1;
    let bytes = std::fs::read(dlc).unwrap();
    std::fs::write(dlc, &bytes[..bytes.len() / 2]).unwrap();
    // cpu parity: an entry file that is not an entry.
    let entries = cache.path().join("xtask-steps-v2/entries");
    std::fs::write(entries.join(format!("{}.json", keys[1])), b"{\"key\": ").unwrap();
    // context: one byte flipped in the binary.
    let bin = entry_files(cache.path(), &keys[2])
        .into_iter()
        .find(|(artifact, _)| artifact.ends_with(".bin"))
        .unwrap()
        .1;
    let mut bytes = std::fs::read(&bin).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    std::fs::write(&bin, bytes).unwrap();
    // The leftover of a writer killed before its rename: never read as an entry.
    let leftover = cache.path().join("xtask-steps-v2/tmp/.tmp-killed");
    std::fs::write(&leftover, b"PK\x03\x04partial").unwrap();

    let b = Scratch::tiny();
    let run = build(&b, cache.path(), &["--only", "vision"]);
    run.assert_code(0);
    assert!(
        run.stdout.contains("3 step(s) ran, 0 restored from cache"),
        "{}",
        run.all()
    );
    let all = run.all();
    assert_eq!(all.matches("warning: vision").count(), 3, "{all}");
    assert!(all.contains("not a readable entry"), "{all}");
    b.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "vision",
        "--require-fresh",
    ])
    .assert_code(0);
    let report = read_json(&b.path("reports/tiny/build-soc77.json"));
    assert_eq!(
        report["components"][0]["cache_refused"]
            .as_array()
            .unwrap()
            .len(),
        3
    );

    // The rebuilt steps replaced the bad entries: a third copy restores all three.
    let c = Scratch::tiny();
    let run = build(&c, cache.path(), &["--only", "vision"]);
    assert!(
        run.stdout.contains("0 step(s) ran, 3 restored from cache"),
        "{}",
        run.all()
    );
    assert_eq!(
        sha256_hex(&b.path("ctx/tiny/vision_socid77_archv73.bin")),
        sha256_hex(&c.path("ctx/tiny/vision_socid77_archv73.bin"))
    );

    let dir = cache.path().to_str().unwrap();
    let ls = a.run(&["cache", "ls", "--cache", dir]);
    ls.assert_code(0);
    assert!(ls.stdout.contains("3 entries"), "{}", ls.all());
    assert!(
        ls.stdout.contains("1 temporary file(s) left"),
        "{}",
        ls.all()
    );
    assert!(
        ls.stdout
            .contains("context@soc77 of tiny: ctx/tiny/vision_socid77_archv73.bin"),
        "{}",
        ls.all()
    );
    let gc = a.run(&["cache", "gc", "--cache", dir, "--max-size", "0"]);
    gc.assert_code(0);
    assert!(gc.stdout.contains("removed 3 entries"), "{}", gc.all());
    let ls = a.run(&["cache", "ls", "--cache", dir]);
    assert!(ls.stdout.contains("0 entries, "), "{}", ls.all());
    a.run(&["cache", "gc", "--cache", dir, "--max-size", "lots"])
        .assert_code(2);
}

/// Two builds filling one empty cache at once: both succeed, every key ends up with one
/// complete entry, and a third copy restores everything from it.
#[test]
fn two_builds_at_once_share_one_cache_safely() {
    let cache = tempfile::tempdir().unwrap();
    let (a, b) = (Scratch::tiny(), Scratch::tiny());
    let spawn = |p: &Scratch| {
        p.command(&[
            "build-ctx",
            "--soc",
            "77",
            "--cache",
            cache.path().to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
    };
    let (ca, cb) = (spawn(&a), spawn(&b));
    for child in [ca, cb] {
        crate::common::Run::from(child.wait_with_output().unwrap()).assert_code(0);
    }
    let dir = cache.path().to_str().unwrap();
    let ls = a.run(&["cache", "ls", "--cache", dir]);
    assert!(ls.stdout.contains("21 entries"), "{}", ls.all());
    assert!(!ls.stdout.contains("interrupted"), "{}", ls.all());
    let c = Scratch::tiny();
    let run = build(&c, cache.path(), &[]);
    assert!(
        run.stdout.contains("0 step(s) ran, 21 restored from cache"),
        "{}",
        run.all()
    );
    c.run(&["build-ctx", "--soc", "77", "--require-fresh"])
        .assert_code(0);
}
