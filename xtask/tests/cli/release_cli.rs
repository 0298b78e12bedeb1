//! Packaging, verification, release, fetch and CI regeneration, as a user runs them; the
//! Hugging Face CLI is the test double in test-doubles/hf (it records its calls).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Run, Scratch, copy_tree, read_json};

fn hf_double_dir() -> PathBuf {
    crate::common::repo_root().join("test-doubles/hf")
}

/// Runs the tool with the `hf` test double first on PATH.
fn run_with_hf(p: &Scratch, args: &[&str], token: bool, fail: Option<&str>) -> Run {
    let mut cmd = p.command(args);
    cmd.env("PATH", common::path_with(&hf_double_dir()))
        .env("HF_TEST_DOUBLE_LOG", p.path("hf.log"))
        .env("HF_TEST_DOUBLE_STORE", p.path("hf-store"));
    if token {
        cmd.env("HF_TOKEN", "test-token");
    } else {
        cmd.env_remove("HF_TOKEN");
    }
    match fail {
        Some(f) => cmd.env("HF_TEST_DOUBLE_FAIL", f),
        None => cmd.env_remove("HF_TEST_DOUBLE_FAIL"),
    };
    Run::from(cmd.output().unwrap())
}

#[test]
fn two_runners_then_gather_package_verify_release_and_fetch() {
    // Two entries of the CI matrix, built in two separate clones.
    let a = Scratch::tiny();
    let b = Scratch::tiny();
    a.run(&["build-ctx", "--soc", "77", "--only", "vision"])
        .assert_code(0);
    b.run(&["build-ctx", "--soc", "77", "--only", "action_step"])
        .assert_code(0);

    // The gathering job: the artifacts (with their records) are accepted as fresh.
    let g = Scratch::tiny();
    std::fs::create_dir_all(g.path("ctx/tiny")).unwrap();
    for (from, comp) in [(&a, "vision"), (&b, "action_step")] {
        for entry in std::fs::read_dir(from.path("ctx/tiny")).unwrap().flatten() {
            if entry.file_name().to_string_lossy().starts_with(comp) {
                std::fs::copy(entry.path(), g.path("ctx/tiny").join(entry.file_name())).unwrap();
            }
        }
    }
    let only = ["--only", "vision,action_step"];
    let fresh = g.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--require-fresh",
        only[0],
        only[1],
    ]);
    fresh.assert_code(0);
    assert!(!fresh.stdout.contains("dirty"), "{}", fresh.all());
    g.run(&["parity", "--backend", "htp", only[0], only[1]])
        .assert_code(0);
    let bundle = g.path("dist/tiny");
    g.run(&[
        "package",
        "--model",
        "tiny",
        "--soc",
        "77",
        "--out",
        bundle.to_str().unwrap(),
        only[0],
        only[1],
    ])
    .assert_code(0);
    let verify = g.run(&["verify", bundle.to_str().unwrap()]);
    verify.assert_code(0);
    let card = std::fs::read_to_string(bundle.join("README.md")).unwrap();
    for section in [
        "license: apache-2.0",
        "## Per-component I/O contract",
        "## Validated parity (host, QNN CPU backend vs golden)",
        "## HTP parity (HTP emulated on x86_64, fp16)",
        "## Waivers",
        "## Build provenance",
    ] {
        assert!(card.contains(section), "card lacks {section}:\n{card}");
    }
    let htp_cos = read_json(&g.path("reports/tiny/parity-htp.json"))["components"][0]["outputs"][0]
        ["metrics"]["cosine"]
        .as_f64()
        .unwrap();
    assert!(
        card.contains(&format!("| `vision` | image_embeds | {htp_cos:.8} |")),
        "the card shows the measured HTP cosine {htp_cos}:\n{card}"
    );

    // Release: the dry run lists every file and the exact commands, and uploads nothing.
    let manifest = read_json(&bundle.join("manifest.json"));
    let dry = run_with_hf(
        &g,
        &[
            "release",
            "--repo",
            "someone/tiny",
            "--bundle",
            bundle.to_str().unwrap(),
            "--dry-run",
        ],
        true,
        None,
    );
    dry.assert_code(0);
    for f in manifest["files"].as_array().unwrap() {
        assert!(
            dry.stdout.contains(f["path"].as_str().unwrap()),
            "dry run must list {f}"
        );
    }
    assert!(
        dry.stdout.contains("hf upload --repo-type model")
            && dry
                .stdout
                .contains(&format!("-- someone/tiny {} .", bundle.display())),
        "{}",
        dry.all()
    );
    // A dry run asks `hf` only read-only questions: its version and who is logged in.
    let calls = std::fs::read_to_string(g.path("hf.log")).unwrap_or_default();
    assert!(
        calls.contains("auth whoami")
            && calls
                .lines()
                .all(|l| l.contains("auth whoami") || l.contains("version")),
        "{calls}"
    );
    std::fs::remove_file(g.path("hf.log")).unwrap();

    // No token, and a failing upload: clear errors, nothing claimed.
    let no_token = run_with_hf(
        &g,
        &[
            "release",
            "--repo",
            "someone/tiny",
            "--bundle",
            bundle.to_str().unwrap(),
        ],
        false,
        None,
    );
    no_token.assert_refused(2, "not logged in");
    let failed = run_with_hf(
        &g,
        &[
            "release",
            "--repo",
            "someone/tiny",
            "--bundle",
            bundle.to_str().unwrap(),
        ],
        true,
        Some("upload"),
    );
    failed
        .assert_refused(2, "the release is NOT published")
        .assert_refused(2, "HTTP 503");
    assert!(!g.path("reports/tiny/release.json").exists());

    // A real (double) upload, then fetch into a clean clone, which can re-validate at once.
    run_with_hf(
        &g,
        &[
            "release",
            "--repo",
            "someone/tiny",
            "--bundle",
            bundle.to_str().unwrap(),
            "--revision",
            "v1",
        ],
        true,
        None,
    )
    .assert_code(0);
    assert_eq!(
        read_json(&g.path("reports/tiny/release.json"))["repo"],
        "someone/tiny"
    );
    let f = Scratch::tiny();
    copy_tree(&g.path("hf-store"), &f.path("hf-store"));
    let fetch = run_with_hf(
        &f,
        &[
            "fetch",
            "--repo",
            "someone/tiny",
            "--model",
            "tiny",
            "--revision",
            "v1",
        ],
        true,
        None,
    );
    fetch.assert_code(0);
    assert!(f.path("ctx/tiny/vision_socid77_archv73.bin").is_file());
    f.run(&["parity", "--backend", "htp", only[0], only[1]])
        .assert_code(0);

    // The regeneration's fetch path: two entries in fresh clones without the inputs, each
    // fetching only its component through the Hub's include patterns, then a gather job.
    entries_fetch_build_and_check_then_gather(&g.path("hf-store"));
}

/// The inputs of `vision` and `action_step` (ONNX + external data, golden, trace), as the
/// recipes place them.
const INPUTS: [(&str, &[&str]); 2] = [
    (
        "vision",
        &[
            "onnx/tiny/vision.onnx",
            "golden/tiny/vision_io.npz",
            "golden/tiny/trace.json",
        ],
    ),
    (
        "action_step",
        &[
            "onnx/tiny/action_step.onnx",
            "golden/tiny/action_step_io.npz",
        ],
    ),
];

fn entries_fetch_build_and_check_then_gather(store: &Path) {
    let fetch_args = |comp: &'static str| {
        vec![
            "fetch",
            "--repo",
            "someone/tiny",
            "--revision",
            "v1",
            "--only",
            comp,
            "--inputs-only",
        ]
    };
    let mut entries = Vec::new();
    let mut keys = Vec::new();
    for (comp, _) in INPUTS {
        let e = Scratch::tiny();
        copy_tree(store, &e.path("hf-store"));
        for (_, files) in INPUTS {
            for f in files {
                std::fs::remove_file(e.path(f)).unwrap();
            }
        }
        // Without the inputs nothing runs, and the error says how to get them.
        let refused = e.run(&["build-ctx", "--soc", "77", "--only", comp]);
        refused.assert_refused(2, "how to obtain them");

        let mut key_args = fetch_args(comp);
        key_args.push("--cache-key");
        let key = run_with_hf(&e, &key_args, true, None);
        key.assert_code(0);
        let key = key.stdout.trim().to_string();
        assert!(key.starts_with(&format!("tiny-{comp}-")), "{key}");
        assert!(
            !e.path("onnx/tiny/vision.onnx").exists(),
            "--cache-key lays nothing out"
        );
        keys.push(key);

        let fetched = run_with_hf(&e, &fetch_args(comp), true, None);
        fetched.assert_code(0);
        let log = std::fs::read_to_string(e.path("hf.log")).unwrap();
        let last = log.lines().last().unwrap();
        for pat in [
            format!("--include onnx/{comp}/\\*"),
            format!("--include golden/{comp}_io.npz"),
            "--include manifest.json".to_string(),
        ] {
            assert!(last.contains(&pat), "{pat} in {last}");
        }
        assert!(
            !last.contains("ctx/"),
            "--inputs-only downloads no context binaries: {last}"
        );
        // Only this component's inputs came, and they are complete; the other's did not.
        for (other, files) in INPUTS {
            for f in files {
                assert_eq!(
                    e.path(f).is_file(),
                    other == comp,
                    "{f} after fetching {comp}"
                );
            }
        }
        assert!(
            !e.path("ctx/tiny").exists()
                || std::fs::read_dir(e.path("ctx/tiny"))
                    .unwrap()
                    .next()
                    .is_none()
        );

        e.run(&["build-ctx", "--soc", "77", "--only", comp])
            .assert_code(0);
        e.run(&["parity", "--backend", "cpu", "--only", comp])
            .assert_code(0);
        e.run(&["parity", "--backend", "htp", "--only", comp])
            .assert_code(0);
        entries.push((comp, e));
    }
    assert_ne!(keys[0], keys[1], "each component has its own content key");

    // A component the bundle does not hold fails at once, naming what is missing and how to get it.
    let (_, e0) = &entries[0];
    for f in [
        "onnx/tiny/action_context.onnx",
        "golden/tiny/action_context_io.npz",
    ] {
        std::fs::remove_file(e0.path(f)).unwrap();
    }
    let absent = run_with_hf(e0, &fetch_args("action_context"), true, None);
    absent.assert_code(2);
    assert!(
        absent
            .stderr
            .contains("golden/tiny/action_context_io.npz (action_context)")
            && absent.stderr.contains("how to provide them"),
        "{}",
        absent.all()
    );
    // No repository named anywhere: says where to name one.
    let no_repo = e0.run(&["fetch", "--only", "vision"]);
    no_repo
        .assert_refused(2, "--repo OWNER/NAME")
        .assert_refused(2, "source_repo");

    // The gather job: every input fetched (no ctx from the Hub), the entries' artifacts and
    // reports gathered, reports merged, nothing re-run; fresh, packaged, verified.
    let g = Scratch::tiny();
    copy_tree(store, &g.path("hf-store"));
    for (_, files) in INPUTS {
        for f in files {
            std::fs::remove_file(g.path(f)).unwrap();
        }
    }
    run_with_hf(
        &g,
        &[
            "fetch",
            "--repo",
            "someone/tiny",
            "--revision",
            "v1",
            "--inputs-only",
        ],
        true,
        None,
    )
    .assert_code(0);
    assert!(!g.path("ctx/tiny/vision_socid77_archv73.bin").exists());
    std::fs::create_dir_all(g.path("ctx/tiny")).unwrap();
    let mut dirs = Vec::new();
    for (comp, e) in &entries {
        for entry in std::fs::read_dir(e.path("ctx/tiny")).unwrap().flatten() {
            if entry.file_name().to_string_lossy().starts_with(comp) {
                std::fs::copy(entry.path(), g.path("ctx/tiny").join(entry.file_name())).unwrap();
            }
        }
        let dir = g.path(&format!("entry-reports/reports-tiny-{comp}-soc77"));
        copy_tree(&e.path("reports/tiny"), &dir);
        dirs.push(dir.display().to_string());
    }
    let only = ["--only", "vision,action_step"];
    g.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--require-fresh",
        only[0],
        only[1],
    ])
    .assert_code(0);
    let mut merge = vec!["merge-reports", "--model", "tiny"];
    merge.extend(dirs.iter().map(String::as_str));
    let merged = g.run(&merge);
    merged.assert_code(0);
    for backend in ["cpu", "htp"] {
        let r = read_json(&g.path(&format!("reports/tiny/parity-{backend}.json")));
        let comps: Vec<&str> = r["components"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["component"].as_str().unwrap())
            .collect();
        assert_eq!(
            comps,
            ["vision", "action_step"],
            "{backend}: {}",
            merged.all()
        );
        assert_eq!(r["pass"], true);
    }
    // The same component from two entries is refused.
    let twice = g.run(&["merge-reports", "--model", "tiny", &dirs[0], &dirs[0]]);
    twice.assert_code(2);
    assert!(twice.stderr.contains("again"), "{}", twice.all());
    g.run(&merge).assert_code(0);

    let bundle = g.path("dist/tiny");
    g.run(&[
        "package",
        "--model",
        "tiny",
        "--soc",
        "77",
        "--out",
        bundle.to_str().unwrap(),
        only[0],
        only[1],
    ])
    .assert_code(0);
    g.run(&["verify", bundle.to_str().unwrap()]).assert_code(0);
}

#[test]
fn verify_names_a_flipped_byte_a_missing_and_an_extra_file() {
    let p = Scratch::tiny();
    p.run(&["build-ctx", "--soc", "77", "--only", "action_context"])
        .assert_code(0);
    let bundle = p.path("dist/t");
    p.run(&[
        "package",
        "--soc",
        "77",
        "--only",
        "action_context",
        "--out",
        bundle.to_str().unwrap(),
    ])
    .assert_code(0);
    p.run(&["verify", bundle.to_str().unwrap()]).assert_code(0);
    let golden = bundle.join("golden/action_context_io.npz");
    let mut bytes = std::fs::read(&golden).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&golden, bytes).unwrap();
    std::fs::remove_file(bundle.join("ctx/action_context_socid77_archv73_ctx.onnx")).unwrap();
    std::fs::write(bundle.join("ctx/stray.bin"), b"x").unwrap();
    let run = p.run(&["verify", bundle.to_str().unwrap()]);
    run.assert_code(2);
    for expected in [
        "changed: golden/action_context_io.npz",
        "missing: ctx/action_context_socid77_archv73_ctx.onnx",
        "extra: ctx/stray.bin",
    ] {
        assert!(run.stderr.contains(expected), "{expected}\n{}", run.all());
    }
    assert!(p.path("golden/tiny/action_context_io.npz").is_file());
}

#[test]
fn package_refuses_stale_artifacts_unless_allowed_and_says_so_in_the_card() {
    let p = Scratch::tiny();
    p.run(&["build-ctx", "--soc", "77", "--only", "action_context"])
        .assert_code(0);
    let recipe = p.path("recipes/tiny/action_context.toml");
    let text = std::fs::read_to_string(&recipe)
        .unwrap()
        .replace("optimization_level = 3", "optimization_level = 2");
    std::fs::write(&recipe, text).unwrap();
    let out = p.path("dist/s");
    let run = p.run(&[
        "package",
        "--soc",
        "77",
        "--only",
        "action_context",
        "--out",
        out.to_str().unwrap(),
    ]);
    run.assert_refused(2, "`action_context` is stale")
        .assert_refused(2, "recipe [context] changed");
    assert!(!p.path("dist/s").exists());
    p.run(&[
        "package",
        "--soc",
        "77",
        "--only",
        "action_context",
        "--out",
        out.to_str().unwrap(),
        "--allow-stale",
    ])
    .assert_code(0);
    let card = std::fs::read_to_string(p.path("dist/s/README.md")).unwrap();
    assert!(
        card.contains("packaged with `--allow-stale`") && card.contains("action_context"),
        "{card}"
    );
}

#[test]
fn plan_json_is_a_matrix_of_seven_entries() {
    let p = Scratch::tiny();
    let run = p.run(&["plan", "--json", "--soc", "77", "--model", "tiny"]);
    run.assert_code(0);
    let v: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let include = v["include"].as_array().unwrap();
    assert_eq!(include.len(), 7);
    assert_eq!(
        include[0]["build"],
        "cargo xtask build-ctx --soc 77 --model tiny --only vision"
    );
}

/// Every `cargo xtask <command>` in the workflow is a real subcommand, and every `matrix.X` it
/// uses is a key of the plan's matrix entries.
#[test]
fn the_regenerate_workflow_references_real_commands_and_matrix_keys() {
    let text =
        std::fs::read_to_string(common::repo_root().join(".github/workflows/regenerate.yml"))
            .unwrap();
    let yaml: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let jobs = yaml["jobs"].as_mapping().unwrap();
    for job in ["plan", "build", "gather", "release"] {
        assert!(jobs.contains_key(job), "job {job} missing");
    }
    let help = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let mut seen = 0;
    for (_, job) in jobs {
        for step in job["steps"].as_sequence().unwrap() {
            let Some(run) = step["run"].as_str() else {
                continue;
            };
            for part in run.split("cargo xtask ").skip(1) {
                let sub = part.split_whitespace().next().unwrap();
                assert!(
                    help.contains(&format!("\n  {sub} ")),
                    "`cargo xtask {sub}` is not a subcommand:\n{help}"
                );
                seen += 1;
            }
        }
    }
    assert!(
        seen >= 7,
        "expected the workflow to run the tool's commands"
    );
    let p = Scratch::tiny();
    let plan: serde_json::Value =
        serde_json::from_str(p.run(&["plan", "--json"]).stdout.trim()).unwrap();
    let entry = plan["include"][0].as_object().unwrap();
    for part in text.split("matrix.").skip(1) {
        let key: String = part
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        assert!(
            entry.contains_key(&key),
            "the workflow uses matrix.{key}, which plan --json does not emit"
        );
    }
    assert!(text.contains("fromJson(needs.plan.outputs.matrix)"));
}

/// The Hub as it really is: every repository has a `.gitattributes` that downloads bring along,
/// `hf upload` keeps stale remote files unless asked to delete them, and `hf auth whoami`
/// before huggingface_hub 1.9 says "Not logged in" with exit 0.
#[test]
fn releases_replace_the_revision_and_fetch_accepts_the_hubs_own_files() {
    let p = Scratch::tiny();
    p.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "action_context,action_step",
    ])
    .assert_code(0);
    let package = |out: &str, only: &str| {
        let out = p.path(out);
        p.run(&["package", "--soc", "77", "--only", only, "--out"])
            .assert_code(2); // --out needs a value
        p.run(&[
            "package",
            "--soc",
            "77",
            "--only",
            only,
            "--out",
            out.to_str().unwrap(),
        ])
        .assert_code(0);
        out
    };
    let both = package("dist/both", "action_context,action_step");
    let one = package("dist/one", "action_context");
    let release = |bundle: &Path, token: bool, hub: &str| {
        let mut cmd = p.command(&[
            "release",
            "--repo",
            "someone/tiny",
            "--bundle",
            bundle.to_str().unwrap(),
        ]);
        cmd.env("PATH", common::path_with(&hf_double_dir()))
            .env("HF_TEST_DOUBLE_LOG", p.path("hf.log"))
            .env("HF_TEST_DOUBLE_STORE", p.path("hf-store"))
            .env("HF_TEST_DOUBLE_HUB_VERSION", hub)
            .env_remove("HF_TEST_DOUBLE_FAIL");
        if token {
            cmd.env("HF_TOKEN", "t");
        } else {
            cmd.env_remove("HF_TOKEN");
        }
        Run::from(cmd.output().unwrap())
    };
    // An old CLI says "Not logged in" and exits 0: still refused, nothing uploaded.
    let old = release(&both, false, "1.8.2");
    old.assert_code(2);
    assert!(old.stderr.contains("not logged in"), "{}", old.all());
    assert!(!p.path("hf-store").exists(), "{}", old.all());

    release(&both, true, "1.9.0").assert_code(0);
    let store = p.path("hf-store");
    let remote = remote_tree(&store, "someone/tiny", "main");
    assert!(remote.join(".gitattributes").is_file(), "the Hub adds it");
    assert!(remote.join("ctx/action_step_socid77_archv73.bin").is_file());
    let log = std::fs::read_to_string(p.path("hf.log")).unwrap();
    assert!(
        log.contains("hf discussions merge someone/tiny 1 --yes"),
        "{log}"
    );
    // Re-release with one component fewer: no stale remote file, `.gitattributes` kept.
    release(&one, true, "1.9.0").assert_code(0);
    let remote = remote_tree(&store, "someone/tiny", "main");
    assert!(!remote.join("ctx/action_step_socid77_archv73.bin").exists());
    assert!(!remote.join("onnx/action_step").exists());
    assert!(remote.join(".gitattributes").is_file());
    let log = std::fs::read_to_string(p.path("hf.log")).unwrap();
    assert!(log.contains("--delete \\*"), "{log}");

    // A clean clone fetches it: `.gitattributes` and `.cache/huggingface/` are the Hub's own.
    let f = Scratch::tiny();
    copy_tree(&p.path("hf-store"), &f.path("hf-store"));
    let fetch = run_with_hf(
        &f,
        &["fetch", "--repo", "someone/tiny", "--revision", "main"],
        true,
        None,
    );
    fetch.assert_code(0);
    assert!(
        f.path("ctx/tiny/action_context_socid77_archv73.bin")
            .is_file()
    );
    // Anything else unlisted is still refused.
    std::fs::write(
        remote_tree(&f.path("hf-store"), "someone/tiny", "main").join("stray.txt"),
        b"x",
    )
    .unwrap();
    let refused = run_with_hf(
        &f,
        &["fetch", "--repo", "someone/tiny", "--revision", "main"],
        true,
        None,
    );
    refused.assert_refused(2, "extra: stray.txt");
}

/// The tree of `rev` (a branch or tag) of `repo` in the `hf` double's store.
fn remote_tree(store: &Path, repo: &str, rev: &str) -> PathBuf {
    let d = store.join(repo);
    let oid = ["refs/heads", "refs/tags"]
        .iter()
        .find_map(|r| std::fs::read_to_string(d.join(r).join(rev)).ok())
        .unwrap_or_else(|| panic!("no revision {rev} in {}", d.display()));
    d.join("commits").join(oid.trim())
}

fn packaged(p: &Scratch) -> PathBuf {
    p.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "action_context,action_step",
    ])
    .assert_code(0);
    let out = p.path("dist/tiny");
    p.run(&[
        "package",
        "--soc",
        "77",
        "--only",
        "action_context,action_step",
        "--out",
        out.to_str().unwrap(),
    ])
    .assert_code(0);
    out
}

fn release_cmd(p: &Scratch, bundle: &Path, extra: &[&str]) -> Command {
    let mut args = vec![
        "release",
        "--repo",
        "someone/tiny",
        "--bundle",
        bundle.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let mut cmd = p.command(&args);
    cmd.env("PATH", common::path_with(&hf_double_dir()))
        .env("HF_TEST_DOUBLE_LOG", p.path("hf.log"))
        .env("HF_TEST_DOUBLE_STORE", p.path("hf-store"))
        .env("HF_TOKEN", "t")
        .env_remove("HF_TEST_DOUBLE_FAIL")
        .env_remove("HF_TEST_DOUBLE_PAUSE_AFTER_COMMIT");
    cmd
}

/// `release` killed between two upload batches (3 files per commit here): `main` still holds
/// the previous release, untouched; the partial upload sits in an unmerged pull request.
#[test]
fn a_release_killed_between_two_upload_batches_leaves_the_target_unchanged() {
    let p = Scratch::tiny();
    let bundle = packaged(&p);
    let store = p.path("hf-store");
    // A first, complete release of an older bundle (its manifest differs: one file changed).
    let one = p.path("dist/one");
    p.run(&[
        "package",
        "--soc",
        "77",
        "--only",
        "action_context",
        "--out",
        one.to_str().unwrap(),
    ])
    .assert_code(0);
    let first = Run::from(release_cmd(&p, &one, &[]).output().unwrap());
    first.assert_code(0);
    let main_before = std::fs::read_to_string(store.join("someone/tiny/refs/heads/main")).unwrap();
    let tree_before: Vec<_> = walk(&remote_tree(&store, "someone/tiny", "main"));
    // The new bundle has both components: its manifest and sums differ.
    let marker = p.path("paused");
    let mut child = release_cmd(&p, &bundle, &[])
        .env("HF_TEST_DOUBLE_BATCH_FILES", "3")
        .env("HF_TEST_DOUBLE_PAUSE_AFTER_COMMIT", &marker)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !marker.is_file()
        || std::fs::read_to_string(&marker)
            .unwrap()
            .split_whitespace()
            .count()
            < 2
    {
        assert!(
            started.elapsed().as_secs() < 120,
            "the upload never committed a batch"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // One batch committed, more to come: kill the release and the upload under it.
    let hf_pid = std::fs::read_to_string(&marker)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    child.kill().unwrap();
    child.wait().unwrap();
    Command::new("kill").args(["-9", &hf_pid]).status().unwrap();
    assert_eq!(
        std::fs::read_to_string(store.join("someone/tiny/refs/heads/main")).unwrap(),
        main_before,
        "main moved"
    );
    assert_eq!(
        walk(&remote_tree(&store, "someone/tiny", "main")),
        tree_before
    );
    assert!(
        store.join("someone/tiny/refs/pr/2").is_file(),
        "the partial upload is in a PR"
    );
    // Run again to the end: now main is the new bundle, in one step.
    let again = Run::from(release_cmd(&p, &bundle, &[]).output().unwrap());
    again.assert_code(0);
    let now = remote_tree(&store, "someone/tiny", "main");
    assert_eq!(
        std::fs::read(now.join("manifest.json")).unwrap(),
        std::fs::read(bundle.join("manifest.json")).unwrap()
    );
    let rec = read_json(&p.path("reports/tiny/release.json"));
    assert_eq!(rec["revision"], "main");
    assert!(rec["huggingface_hub"].as_str().is_some(), "{rec}");
}

/// `--tag v1.2` creates a real tag (refs/tags/v1.2) at the verified commit, and no branch.
#[test]
fn a_release_to_a_tag_creates_a_tag_not_a_branch() {
    let p = Scratch::tiny();
    let bundle = packaged(&p);
    let run = Run::from(
        release_cmd(&p, &bundle, &["--tag", "v1.2"])
            .output()
            .unwrap(),
    );
    run.assert_code(0);
    let repo = p.path("hf-store/someone/tiny");
    assert!(repo.join("refs/tags/v1.2").is_file(), "{}", run.all());
    assert!(!repo.join("refs/heads/v1.2").exists());
    let heads: Vec<String> = std::fs::read_dir(repo.join("refs/heads"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(heads, ["main"], "the staging branch is removed");
    let tree = remote_tree(&p.path("hf-store"), "someone/tiny", "v1.2");
    assert_eq!(
        std::fs::read(tree.join("SHA256SUMS")).unwrap(),
        std::fs::read(bundle.join("SHA256SUMS")).unwrap()
    );
    let rec = read_json(&p.path("reports/tiny/release.json"));
    assert_eq!(
        (rec["revision"].as_str(), rec["revision_kind"].as_str()),
        (Some("v1.2"), Some("tag"))
    );
    let log = std::fs::read_to_string(p.path("hf.log")).unwrap();
    assert!(
        log.contains("hf repos tag create someone/tiny v1.2 --revision"),
        "{log}"
    );
    // The same bundle to the same tag again: already there, nothing uploaded.
    let again = Run::from(
        release_cmd(&p, &bundle, &["--tag", "v1.2"])
            .output()
            .unwrap(),
    );
    again.assert_code(0);
    assert!(
        again.stdout.contains("already holds this bundle"),
        "{}",
        again.all()
    );
    // Another bundle to the same tag: refused before anything is uploaded; the tag stays.
    let tag_before = std::fs::read_to_string(repo.join("refs/tags/v1.2")).unwrap();
    let one = p.path("dist/one");
    p.run(&[
        "package",
        "--soc",
        "77",
        "--only",
        "action_context",
        "--out",
        one.to_str().unwrap(),
    ])
    .assert_code(0);
    let other = Run::from(release_cmd(&p, &one, &["--tag", "v1.2"]).output().unwrap());
    assert_ne!(other.code, 0, "{}", other.all());
    assert!(
        other.stderr.contains("tag v1.2 already exists"),
        "{}",
        other.all()
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("refs/tags/v1.2")).unwrap(),
        tag_before
    );
    let log = std::fs::read_to_string(p.path("hf.log")).unwrap();
    assert_eq!(log.matches("hf upload").count(), 1, "{log}");

    // The check after the upload fails (a download error): nothing is exposed and the staging
    // branch holding the partial upload is deleted, not left behind.
    let failed = Run::from(
        release_cmd(&p, &one, &["--tag", "v2.0"])
            .env("HF_TEST_DOUBLE_FAIL", "download")
            .output()
            .unwrap(),
    );
    failed.assert_refused(2, "the release is NOT published");
    assert!(
        failed.stdout.contains("(the partial upload) was deleted"),
        "{}",
        failed.all()
    );
    assert!(!repo.join("refs/tags/v2.0").exists());
    let heads: Vec<String> = std::fs::read_dir(repo.join("refs/heads"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(heads, ["main"], "{}", failed.all());
}

fn walk(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            (
                e.path().strip_prefix(dir).unwrap().display().to_string(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}
