//! Signed bundles, interoperable with the reference: `package --sign-key` writes `model.sig`
//! in the OpenSSF model-signing format, which the pinned reference CLI (`model_signing` 1.1.1,
//! installed hash-checked under `target/` by `crates/signing/scripts/ensure-reference-venv.sh`)
//! accepts with `model_signing verify key BUNDLE --signature BUNDLE/model.sig --public_key
//! PUB.pem`; `verify --key` and `fetch --key` accept a bundle the reference CLI signed
//! (`model_signing sign key`); both refuse a file re-hashed under an old signature and a
//! signature by another key. `release --sign-key` signs what it uploads and never uploads a
//! bundle whose signature does not verify.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common::{Run, copy_tree, read_json};
use crate::hostile_bound_cli::rehash_present;
use crate::hostile_bundle_cli::{remote_tree, with_hf};
use crate::sandbox::Sandbox;

/// The reference CLI from the pinned venv under this build's target folder, made once per test
/// process (the script's lock makes other processes wait). Fails, never skips, when it cannot
/// be made.
fn model_signing() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        // target/<profile>/deps/cli-<hash> → target/model-signing-venv
        let exe = std::env::current_exe().unwrap();
        let target = exe.ancestors().nth(3).unwrap().to_path_buf();
        let venv = target.join("model-signing-venv");
        let script = crate::common::repo_root().join("crates/signing/scripts/ensure-reference-venv.sh");
        let run = Run::from(Command::new("bash").arg(&script).arg(&venv).output().unwrap());
        assert_eq!(
            run.code,
            0,
            "the model_signing reference venv could not be made (Python 3 with venv and pip, PyPI reachable)\n{}",
            run.all()
        );
        venv.join("bin/model_signing")
    })
}

/// A P-256 key pair as PEM files (PKCS#8 private, SubjectPublicKeyInfo public), by openssl.
fn key_pair(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let private = dir.join(format!("{name}.key.pem"));
    let public = dir.join(format!("{name}.pub.pem"));
    for args in [
        vec![
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
        ],
        vec!["pkey", "-pubout", "-in"],
    ] {
        let mut cmd = Command::new("openssl");
        cmd.args(&args);
        match args[0] {
            "genpkey" => cmd.arg(&private),
            _ => cmd.arg(&private).arg("-out").arg(&public),
        };
        let run = Run::from(cmd.output().expect("openssl runs"));
        assert_eq!(run.code, 0, "{}", run.all());
    }
    (private, public)
}

/// `model_signing verify key DIR --signature DIR/model.sig --public_key PUB`: (accepted, text).
fn reference_verify(dir: &Path, public: &Path) -> (bool, String) {
    let run = Run::from(
        Command::new(model_signing())
            .args(["verify", "key"])
            .arg(dir)
            .arg("--signature")
            .arg(dir.join("model.sig"))
            .arg("--public_key")
            .arg(public)
            .output()
            .unwrap(),
    );
    let text = run.all();
    (
        run.code == 0 && text.contains("Verification succeeded"),
        text,
    )
}

fn reference_sign(dir: &Path, private: &Path) {
    let run = Run::from(
        Command::new(model_signing())
            .args(["sign", "key"])
            .arg(dir)
            .arg("--private_key")
            .arg(private)
            .arg("--signature")
            .arg(dir.join("model.sig"))
            .output()
            .unwrap(),
    );
    assert_eq!(run.code, 0, "reference signing failed\n{}", run.all());
}

/// `action_step` built, and packaged into `dist/<name>` (signed with `key` when given).
fn packaged(s: &Sandbox, name: &str, key: Option<&Path>) -> PathBuf {
    if !s.p.path("ctx/tiny/action_step.record.json").exists() {
        s.run(&["build-ctx", "--soc", "77", "--only", "action_step"], &[])
            .assert_code(0);
    }
    let key = key.map(|k| k.to_str().unwrap().to_string());
    let extra: Vec<&str> = match &key {
        Some(k) => vec!["--sign-key", k],
        None => vec![],
    };
    s.p.package(&format!("dist/{name}"), "action_step", &extra)
        .assert_code(0);
    s.p.path(&format!("dist/{name}"))
}

/// `fetch --key PUB` of `bundle` served as someone/tiny@main.
fn fetch_with_key(s: &Sandbox, bundle: &Path, public: &Path) -> Run {
    let remote = remote_tree(s);
    let _ = std::fs::remove_dir_all(&remote);
    copy_tree(bundle, &remote);
    with_hf(
        s,
        &[
            "fetch",
            "--repo",
            "someone/tiny",
            "--key",
            public.to_str().unwrap(),
        ],
    )
}

fn verify_with_key(s: &Sandbox, bundle: &Path, public: &Path) -> Run {
    s.run(
        &[
            "verify",
            bundle.to_str().unwrap(),
            "--key",
            public.to_str().unwrap(),
        ],
        &[],
    )
}

#[test]
fn each_tool_accepts_the_others_signature_and_refuses_another_key() {
    let s = Sandbox::new();
    let keys = tempfile::tempdir().unwrap();
    let (a_key, a_pub) = key_pair(keys.path(), "a");
    let (b_key, b_pub) = key_pair(keys.path(), "b");

    // Ours, checked by the reference and by us.
    let ours = packaged(&s, "ours", Some(&a_key));
    assert!(ours.join("model.sig").is_file());
    let listed = read_json(&ours.join("manifest.json")).to_string();
    let sums = std::fs::read_to_string(ours.join("SHA256SUMS")).unwrap();
    assert!(
        !listed.contains("model.sig") && !sums.contains("model.sig"),
        "{listed}"
    );
    let (accepted, text) = reference_verify(&ours, &a_pub);
    assert!(
        accepted,
        "the reference refused package --sign-key's bundle: {text}"
    );
    let run = verify_with_key(&s, &ours, &a_pub);
    run.assert_code(0);
    assert!(run.stdout.contains("signature verified"), "{}", run.all());
    let run = s.run(&["verify", ours.to_str().unwrap()], &[]);
    run.assert_code(0);
    assert!(run.stdout.contains("signed, not verified"), "{}", run.all());
    let run = fetch_with_key(&s, &ours, &a_pub);
    run.assert_code(0);
    assert!(run.stderr.contains("signature verified"), "{}", run.all());

    // The reference's, checked by us.
    let theirs = packaged(&s, "theirs", None);
    reference_sign(&theirs, &b_key);
    verify_with_key(&s, &theirs, &b_pub).assert_code(0);
    fetch_with_key(&s, &theirs, &b_pub).assert_code(0);

    // Another key: refused by both, naming the signature.
    for (bundle, other) in [(&ours, &b_pub), (&theirs, &a_pub)] {
        let (accepted, text) = reference_verify(bundle, other);
        assert!(!accepted, "the reference accepted another key: {text}");
        verify_with_key(&s, bundle, other)
            .assert_refused(2, "model.sig: not a valid signature by --key");
        fetch_with_key(&s, bundle, other)
            .assert_refused(2, "model.sig")
            .assert_refused(2, "nothing was laid out");
    }
    // An unsigned bundle under --key.
    let unsigned = packaged(&s, "unsigned", None);
    verify_with_key(&s, &unsigned, &a_pub).assert_refused(2, "model.sig: the bundle is not signed");
    s.assert_untouched("signatures");
}

#[test]
fn both_refuse_a_file_rehashed_under_an_old_signature() {
    let s = Sandbox::new();
    let keys = tempfile::tempdir().unwrap();
    let (a_key, a_pub) = key_pair(keys.path(), "a");
    let ours = packaged(&s, "ours", Some(&a_key));
    let theirs = packaged(&s, "theirs", None);
    reference_sign(&theirs, &a_key);
    let rel = "golden/action_step_io.npz";
    for signed in [ours, theirs] {
        let forged = s.p.path("dist/forged");
        let _ = std::fs::remove_dir_all(&forged);
        copy_tree(&signed, &forged);
        let mut bytes = std::fs::read(forged.join(rel)).unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 0xff;
        std::fs::write(forged.join(rel), bytes).unwrap();
        rehash_present(&forged);
        let (accepted, text) = reference_verify(&forged, &a_pub);
        assert!(!accepted && text.contains(rel), "the reference: {text}");
        for run in [
            verify_with_key(&s, &forged, &a_pub),
            fetch_with_key(&s, &forged, &a_pub),
        ] {
            run.assert_refused(2, "model.sig: not a valid signature by --key")
                .assert_refused(2, &format!("sha256 differs for {rel}"));
        }
        // Without a key the signature is still held to the files it signs.
        s.run(&["verify", "dist/forged"], &[])
            .assert_refused(2, &format!("model.sig: signs {rel} with sha256"));
    }
    s.assert_untouched("old signatures");
}

/// `release --bundle <bundle> <extra…>` through the `hf` double.
fn release(s: &Sandbox, bundle: &str, extra: &[&str]) -> Run {
    let mut args = vec!["release", "--repo", "someone/tiny", "--bundle", bundle];
    args.extend_from_slice(extra);
    with_hf(s, &args)
}

#[test]
fn release_signs_what_it_uploads_and_refuses_a_signature_that_does_not_verify() {
    let s = Sandbox::new();
    let keys = tempfile::tempdir().unwrap();
    let (a_key, a_pub) = key_pair(keys.path(), "a");
    let bundle = packaged(&s, "t", None);
    let key = a_key.to_str().unwrap();
    let dry = release(&s, "dist/t", &["--sign-key", key, "--dry-run"]);
    dry.assert_code(0);
    assert!(
        dry.stdout.contains("manifest.json, SHA256SUMS, model.sig"),
        "{}",
        dry.all()
    );
    assert!(
        !bundle.join("model.sig").exists(),
        "a dry run signs nothing"
    );
    release(&s, "dist/t", &["--sign-key", key]).assert_code(0);
    let (accepted, text) = reference_verify(&bundle, &a_pub);
    assert!(accepted, "{text}");
    // What was uploaded is what a `fetch --key` accepts.
    let public = a_pub.to_str().unwrap();
    with_hf(&s, &["fetch", "--repo", "someone/tiny", "--key", public]).assert_code(0);

    // A signature that no longer covers the files is never uploaded.
    let forged = s.p.path("dist/forged");
    copy_tree(&bundle, &forged);
    std::fs::write(forged.join("README.md"), "# edited after signing\n").unwrap();
    rehash_present(&forged);
    let log = s.p.path("hf.log");
    let _ = std::fs::remove_file(&log);
    for extra in [&["--dry-run"][..], &[]] {
        release(&s, "dist/forged", extra)
            .assert_refused(2, "model.sig: signs README.md with sha256");
    }
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!calls.contains("upload"), "{calls}");
    s.assert_untouched("signed releases");
}

#[test]
fn keys_that_do_not_load_are_refused_before_any_work_naming_the_file() {
    let s = Sandbox::new();
    let keys = tempfile::tempdir().unwrap();
    let (a_key, a_pub) = key_pair(keys.path(), "a");
    let missing = keys.path().join("missing.pem");
    for (args, says) in [
        (
            vec![
                "package",
                "--soc",
                "77",
                "--out",
                "dist/x",
                "--sign-key",
                missing.to_str().unwrap(),
            ],
            format!("--sign-key {}: cannot be read", missing.display()),
        ),
        (
            vec![
                "package",
                "--soc",
                "77",
                "--out",
                "dist/x",
                "--sign-key",
                a_pub.to_str().unwrap(),
            ],
            format!(
                "--sign-key {} is not a P-256 private key in PEM",
                a_pub.display()
            ),
        ),
        (
            vec!["verify", "dist/x", "--key", a_key.to_str().unwrap()],
            format!("--key {} is not a P-256 public key in PEM", a_key.display()),
        ),
    ] {
        s.run(&args, &[]).assert_refused(2, &says);
    }
    assert!(!s.p.path("dist/x").exists());
}

/// The regeneration workflow's release step signs with the `MODEL_SIGNING_KEY` secret: run as
/// GitHub runs it (`bash -e`, `cargo` and `python3` stubbed), the key reaches `release
/// --sign-key` as a file only its user can read, is never printed, and is gone after the step;
/// without the secret the step fails before `release` runs. No other step or job sees it.
#[test]
fn the_release_job_signs_with_the_secret_key_kept_in_a_private_file() {
    let text = std::fs::read_to_string(
        crate::common::repo_root().join(".github/workflows/regenerate.yml"),
    )
    .unwrap();
    let yaml: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let mut holders = Vec::new();
    for (job, spec) in yaml["jobs"].as_mapping().unwrap() {
        assert!(
            spec["env"].get("MODEL_SIGNING_KEY").is_none(),
            "job {job:?}"
        );
        for step in spec["steps"].as_sequence().unwrap() {
            if step["env"].get("MODEL_SIGNING_KEY").is_some() {
                holders.push((job.as_str().unwrap().to_string(), step.clone()));
            }
        }
    }
    assert_eq!(holders.len(), 1, "one step holds the key");
    let (job, step) = &holders[0];
    assert_eq!(job, "release");
    assert_eq!(
        step["env"]["MODEL_SIGNING_KEY"],
        "${{ secrets.MODEL_SIGNING_KEY }}"
    );
    let script = step["run"].as_str().unwrap();

    let work = tempfile::tempdir().unwrap();
    let (bin, seen) = stubs(work.path());
    let secret =
        "-----BEGIN PRIVATE KEY-----\nSECRET-KEY-BYTES-never-printed\n-----END PRIVATE KEY-----";
    let run = |key: &str| {
        Run::from(
            Command::new("bash")
                .args(["-e", "-c", script])
                .env("PATH", crate::common::path_with(&bin))
                .env("MODEL_SIGNING_KEY", key)
                .env("RUNNER_TEMP", work.path())
                .env("HF_REPO", "someone/tiny")
                .env("MODEL", "tiny")
                .env("GITHUB_REF_NAME", "tiny-v1.0")
                .env("HF_HUB_VERSION", "2.4.0")
                .output()
                .unwrap(),
        )
    };
    let done = run(secret);
    done.assert_code(0);
    assert!(!done.all().contains("SECRET-KEY-BYTES"), "{}", done.all());
    let read = |f: &str| std::fs::read_to_string(seen.join(f)).unwrap();
    assert!(read("args").contains("release\n") && read("args").contains("--sign-key\n"));
    assert_eq!(read("mode").trim(), "600");
    assert_eq!(read("key").trim_end(), secret);
    assert!(
        !read("env").contains("SECRET-KEY-BYTES"),
        "the variable reached cargo"
    );
    assert!(
        !Path::new(read("path").trim()).exists(),
        "the key file outlived the step"
    );

    let _ = std::fs::remove_file(seen.join("args"));
    let refused = run("");
    assert_ne!(refused.code, 0);
    assert!(
        refused.stdout.contains("MODEL_SIGNING_KEY"),
        "{}",
        refused.all()
    );
    assert!(!seen.join("args").exists(), "release ran without a key");
}

/// `cargo` and `python3` stubs in `<work>/bin`: the stub cargo records its arguments, and the
/// `--sign-key` file's mode, bytes and path and its own environment, in `<work>/seen`.
fn stubs(work: &Path) -> (PathBuf, PathBuf) {
    let bin = work.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let seen = work.join("seen");
    // The stub cargo records its arguments, the key file's mode and bytes.
    let cargo = format!(
        "#!/bin/bash\nprintf '%s\\n' \"$@\" >{0}/args\nwhile [ $# -gt 0 ]; do [ \"$1\" = --sign-key ] && {{ stat -c %a \"$2\" >{0}/mode; cat \"$2\" >{0}/key; echo \"$2\" >{0}/path; env >{0}/env; }}; shift; done\n",
        seen.display()
    );
    std::fs::create_dir_all(&seen).unwrap();
    for (name, body) in [("cargo", cargo.as_str()), ("python3", "#!/bin/bash\n")] {
        let path = bin.join(name);
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
    (bin, seen)
}
