//! Interoperability with the reference: the `model_signing` 1.1.1 CLI (OpenSSF
//! model-signing, Python), installed pinned and hash-checked by
//! `scripts/ensure-reference-venv.sh` into `<target>/model-signing-venv`.
//!
//! Reference behaviours reproduced, with the installed source each came from
//! (paths inside the venv's `site-packages`):
//! - bundle JSON: compact, fields `mediaType` (`...bundle.v0.3+json`),
//!   `verificationMaterial.{publicKey.hint, tlogEntries: []}`,
//!   `dsseEnvelope.{payload, payloadType, signatures: [{sig, keyid: ""}]}`:
//!   `model_signing/_signing/sign_ec_key.py` (`Signer.sign`),
//!   `model_signing/_signing/sign_sigstore_pb.py` (`_BUNDLE_MEDIA_TYPE`, `write`),
//!   `sigstore_models/bundle/v1/__init__.py`, `sigstore_models/intoto.py`;
//! - bytes as standard padded base64, unknown fields refused:
//!   `sigstore_models/_core.py` (`ProtoBytes`, `extra="forbid"`);
//! - key hint = hex SHA-256 of the public key's SubjectPublicKeyInfo PEM text,
//!   checked before the signature: `model_signing/_signing/sign_ec_key.py`;
//! - signature = ECDSA P-256/SHA-256, DER, over the DSSE PAE
//!   `DSSEv1 <len> application/vnd.in-toto+json <len> <payload>`:
//!   `sign_ec_key.py` and `pae` in `sign_sigstore_pb.py`;
//! - statement: in-toto Statement v1, one subject named after the folder whose
//!   digest is SHA-256 over the raw file digests in listed order, predicate type
//!   `https://model_signing/signature/v1.0`, predicate `serialization` + `resources`:
//!   `model_signing/_signing/signing.py` (`Payload`, `dsse_payload_to_manifest`),
//!   `model_signing/manifest.py` (`_FileSerialization`);
//! - resources sorted as `PurePosixPath`s (component-wise; `a/b` before `a-b/c`):
//!   `manifest.py` (`Manifest.resource_descriptors`, `_File`);
//! - walk: every entry, symlinks refused even under ignored paths, git paths and
//!   the signature file ignored and recorded in `ignore_paths`, which the verifier
//!   then ignores too; extra, missing and changed files refused:
//!   `model_signing/_serialization/file.py`, `_serialization/serialization.py`,
//!   `model_signing/hashing.py` (`Config.hash`), `model_signing/verifying.py`
//!   (`Config.verify`, `_get_manifest_diff`), `model_signing/_cli.py`
//!   (`_resolve_ignore_paths`, `--signature` default `model.sig`, "Verification succeeded").

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use xtask_signing::{PrivateKey, PublicKeyP256, inspect_signature, sign_folder, verify_folder};

/// The workspace root, from this crate's manifest dir (`crates/signing`).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `model_signing` from the pinned venv, made once per test process (the script's
/// lock makes other processes wait). Fails the test, never skips, if it cannot be made.
fn model_signing() -> &'static Path {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let made = BIN.get_or_init(|| {
        let root = workspace_root();
        let target = match std::env::var_os("CARGO_TARGET_DIR") {
            Some(dir) if Path::new(&dir).is_absolute() => PathBuf::from(dir),
            Some(dir) => root.join(dir),
            None => root.join("target"),
        };
        let venv = target.join("model-signing-venv");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ensure-reference-venv.sh");
        let out = Command::new("bash")
            .arg(&script)
            .arg(&venv)
            .output()
            .map_err(|e| format!("cannot run {}: {e} (install bash)", script.display()))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let line = stderr.lines().last().unwrap_or("no message").to_string();
            return Err(format!(
                "the model_signing reference venv could not be made: {line} -- install Python 3.11 with venv and pip and make PyPI reachable, then rerun"
            ));
        }
        Ok(venv.join("bin/model_signing"))
    });
    match made {
        Ok(bin) => bin,
        Err(message) => panic!("{message}"),
    }
}

struct Keys {
    private: PathBuf,
    public: PathBuf,
    public_pem: String,
    private_pem: String,
}

/// A fresh P-256 key pair written as PEM (PKCS#8 private, SPKI public) into `dir`.
fn our_keys(dir: &Path, name: &str) -> Keys {
    let key = PrivateKey::generate();
    let private_pem = key.to_pkcs8_pem().unwrap();
    let public_pem = key.public_key().to_pem().unwrap();
    let private = dir.join(format!("{name}.key.pem"));
    let public = dir.join(format!("{name}.pub.pem"));
    std::fs::write(&private, &private_pem).unwrap();
    std::fs::write(&public, &public_pem).unwrap();
    Keys {
        private,
        public,
        public_pem,
        private_pem,
    }
}

/// Deterministic pseudo-random bytes (xorshift), so large files do not compress to nothing.
fn noise(len: usize, mut state: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// A model folder: nested files, a 3 MB file, names whose component order differs
/// from string order, and git files that must be ignored.
fn make_model(dir: &Path) -> PathBuf {
    let model = dir.join("bundle-model");
    std::fs::create_dir_all(model.join("ctx/parts")).unwrap();
    std::fs::create_dir_all(model.join("a")).unwrap();
    std::fs::create_dir_all(model.join("a-b")).unwrap();
    std::fs::create_dir_all(model.join(".git")).unwrap();
    std::fs::write(
        model.join("ctx/parts/model.bin"),
        noise(3 * 1024 * 1024 + 17, 0x9e37_79b9),
    )
    .unwrap();
    std::fs::write(model.join("config.json"), b"{\"arch\": \"qnn\"}\n").unwrap();
    std::fs::write(model.join("a/b"), b"component order").unwrap();
    std::fs::write(model.join("a-b/c"), b"string order").unwrap();
    std::fs::write(model.join("a.txt"), b"dot").unwrap();
    std::fs::write(model.join("empty"), b"").unwrap();
    std::fs::write(model.join(".git/HEAD"), b"ref: refs/heads/main\n").unwrap();
    std::fs::write(model.join(".gitattributes"), b"*.bin filter=lfs\n").unwrap();
    model
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("model_signing runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `model_signing sign key MODEL --private_key KEY --signature SIG`, run from `cwd`.
fn reference_sign(cwd: &Path, model: &Path, private_key: &Path, signature: &Path) {
    let out = run(Command::new(model_signing())
        .current_dir(cwd)
        .args(["sign", "key"])
        .arg(model)
        .arg("--private_key")
        .arg(private_key)
        .arg("--signature")
        .arg(signature));
    assert!(
        out.status.success(),
        "reference signing failed: {}",
        text(&out)
    );
}

/// `model_signing verify key MODEL --signature SIG --public_key PUB`: (accepted, output).
fn reference_verify(
    cwd: &Path,
    model: &Path,
    signature: &Path,
    public_key: &Path,
) -> (bool, String) {
    let out = run(Command::new(model_signing())
        .current_dir(cwd)
        .args(["verify", "key"])
        .arg(model)
        .arg("--signature")
        .arg(signature)
        .arg("--public_key")
        .arg(public_key));
    let output = text(&out);
    let accepted = out.status.success() && output.contains("Verification succeeded");
    (accepted, output)
}

fn assert_reference_refuses(cwd: &Path, model: &Path, sig: &Path, public: &Path, naming: &str) {
    let (accepted, output) = reference_verify(cwd, model, sig, public);
    assert!(
        !accepted,
        "the reference accepted what it should refuse: {output}"
    );
    assert!(
        output.contains("Verification failed") && output.contains(naming),
        "the reference refused without naming `{naming}`: {output}"
    );
}

fn assert_we_refuse(model: &Path, sig: &Path, public_pem: &str, naming: &str) {
    let err = format!(
        "{:#}",
        verify_folder(model, sig, public_pem).expect_err("we accepted what we should refuse")
    );
    assert!(
        err.contains(naming),
        "we refused without naming `{naming}`: {err}"
    );
}

#[test]
fn the_reference_accepts_our_signature() {
    let tmp = tempfile::tempdir().unwrap();
    let model = make_model(tmp.path());
    let keys = our_keys(tmp.path(), "ours");
    let sig = sign_folder(&model, &keys.private_pem)
        .unwrap()
        .write_into_folder(&model)
        .unwrap();
    let (accepted, output) = reference_verify(tmp.path(), &model, &sig, &keys.public);
    assert!(accepted, "the reference refused our signature: {output}");
    verify_folder(&model, &sig, &keys.public_pem).unwrap();
}

#[test]
fn we_accept_the_reference_signature_and_hash_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let model = make_model(tmp.path());
    let keys = our_keys(tmp.path(), "ours");
    let sig = model.join("model.sig");
    reference_sign(tmp.path(), &model, &keys.private, &sig);
    let verified = verify_folder(&model, &sig, &keys.public_pem).unwrap();

    // Same key hint, same resources in the same order, same subject digest.
    let ours = sign_folder(&model, &keys.private_pem).unwrap();
    let theirs = inspect_signature(&sig).unwrap();
    let hint = PublicKeyP256::from_pem(&keys.public_pem).unwrap().hint();
    assert_eq!(theirs.key_hint.as_deref(), Some(hint.as_str()));
    assert_eq!(verified.files, ours.statement().resources);
    assert_eq!(theirs.subject_sha256, ours.statement().subject_sha256);
    assert_eq!(theirs.model_name, ours.statement().model_name);
    let mut ignored = theirs.ignore_paths.clone();
    ignored.sort();
    assert_eq!(ignored, xtask_signing::DEFAULT_IGNORE_PATHS);
    let names: Vec<&str> = verified.files.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "a/b",
            "a-b/c",
            "a.txt",
            "config.json",
            "ctx/parts/model.bin",
            "empty"
        ]
    );
}

#[test]
fn an_openssl_sec1_key_works_both_ways() {
    let tmp = tempfile::tempdir().unwrap();
    let key = tmp.path().join("ec.key.pem");
    let public = tmp.path().join("ec.pub.pem");
    let made = Command::new("openssl")
        .args([
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
        ])
        .arg(&key)
        .output();
    match made {
        Ok(out) if out.status.success() => {}
        _ => {
            println!(
                "note: openssl not found: skipping the SEC1 (`openssl ecparam`) key case only"
            );
            return;
        }
    }
    let out = run(Command::new("openssl")
        .args(["ec", "-pubout", "-in"])
        .arg(&key)
        .arg("-out")
        .arg(&public));
    assert!(out.status.success(), "openssl ec -pubout: {}", text(&out));
    let private_pem = std::fs::read_to_string(&key).unwrap();
    assert!(
        private_pem.contains("BEGIN EC PRIVATE KEY"),
        "{private_pem}"
    );
    let public_pem = std::fs::read_to_string(&public).unwrap();
    let model = make_model(tmp.path());

    // Ours with the SEC1 key, verified by the reference.
    let sig = sign_folder(&model, &private_pem)
        .unwrap()
        .write_into_folder(&model)
        .unwrap();
    let (accepted, output) = reference_verify(tmp.path(), &model, &sig, &public);
    assert!(
        accepted,
        "the reference refused our SEC1-key signature: {output}"
    );

    // The reference's with the same key, verified by us; the hints agree.
    let theirs = tmp.path().join("theirs.sig");
    reference_sign(tmp.path(), &model, &key, &theirs);
    verify_folder(&model, &theirs, &public_pem).unwrap();
    assert_eq!(
        inspect_signature(&theirs).unwrap().key_hint,
        inspect_signature(&sig).unwrap().key_hint
    );
}

/// Both signatures (ours and the reference's) of one folder, with one key pair.
struct Signed {
    tmp: tempfile::TempDir,
    model: PathBuf,
    keys: Keys,
    ours: PathBuf,
    theirs: PathBuf,
}

fn signed_both_ways() -> Signed {
    let tmp = tempfile::tempdir().unwrap();
    let model = make_model(tmp.path());
    let keys = our_keys(tmp.path(), "ours");
    let ours = tmp.path().join("ours.sig");
    sign_folder(&model, &keys.private_pem)
        .unwrap()
        .write_to(&ours)
        .unwrap();
    let theirs = tmp.path().join("theirs.sig");
    reference_sign(tmp.path(), &model, &keys.private, &theirs);
    Signed {
        tmp,
        model,
        keys,
        ours,
        theirs,
    }
}

#[test]
fn both_refuse_a_rewritten_file_of_the_same_size() {
    let s = signed_both_ways();
    let victim = s.model.join("ctx/parts/model.bin");
    let mut bytes = std::fs::read(&victim).unwrap();
    let len = bytes.len();
    bytes[len / 2] ^= 0x40;
    std::fs::write(&victim, &bytes).unwrap();
    assert_eq!(std::fs::metadata(&victim).unwrap().len() as usize, len);
    for sig in [&s.ours, &s.theirs] {
        assert_reference_refuses(
            s.tmp.path(),
            &s.model,
            sig,
            &s.keys.public,
            "ctx/parts/model.bin",
        );
        assert_we_refuse(
            &s.model,
            sig,
            &s.keys.public_pem,
            "sha256 differs for ctx/parts/model.bin",
        );
    }
}

#[test]
fn both_refuse_a_file_added_after_signing() {
    let s = signed_both_ways();
    std::fs::write(s.model.join("ctx/parts/extra.bin"), b"late").unwrap();
    for sig in [&s.ours, &s.theirs] {
        assert_reference_refuses(
            s.tmp.path(),
            &s.model,
            sig,
            &s.keys.public,
            "ctx/parts/extra.bin",
        );
        assert_we_refuse(
            &s.model,
            sig,
            &s.keys.public_pem,
            "file not in the signature: ctx/parts/extra.bin",
        );
    }
}

#[test]
fn both_refuse_a_signature_by_another_key() {
    let s = signed_both_ways();
    let other = our_keys(s.tmp.path(), "other");
    for sig in [&s.ours, &s.theirs] {
        assert_reference_refuses(s.tmp.path(), &s.model, sig, &other.public, "Key mismatch");
        assert_we_refuse(&s.model, sig, &other.public_pem, "made with another key");
    }
    // Untouched, both still accept with the right key.
    for sig in [&s.ours, &s.theirs] {
        let (accepted, output) = reference_verify(s.tmp.path(), &s.model, sig, &s.keys.public);
        assert!(accepted, "{output}");
        verify_folder(&s.model, sig, &s.keys.public_pem).unwrap();
    }
}
