//! Round trips and refusals of the public API, with keys made here.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::*;

struct Fixture {
    _dir: tempfile::TempDir,
    model: PathBuf,
    private_pem: String,
    public_pem: String,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("my-model");
    fs::create_dir_all(model.join("sub/deeper")).unwrap();
    fs::write(model.join("config.json"), b"{\"a\": 1}").unwrap();
    fs::write(model.join("sub/deeper/weights.bin"), vec![3u8; 300_000]).unwrap();
    fs::write(model.join("sub-x"), b"sorted after sub/ by components").unwrap();
    fs::create_dir(model.join(".git")).unwrap();
    fs::write(model.join(".git/HEAD"), b"ref: refs/heads/main").unwrap();
    let key = PrivateKey::generate();
    Fixture {
        private_pem: key.to_pkcs8_pem().unwrap(),
        public_pem: key.public_key().to_pem().unwrap(),
        model,
        _dir: dir,
    }
}

fn signed(f: &Fixture) -> PathBuf {
    sign_folder(&f.model, &f.private_pem)
        .unwrap()
        .write_into_folder(&f.model)
        .unwrap()
}

fn refusal(f: &Fixture, sig: &Path) -> String {
    format!(
        "{:#}",
        verify_folder(&f.model, sig, &f.public_pem).expect_err("verification should fail")
    )
}

fn assert_has(err: &str, parts: &[&str]) {
    for part in parts {
        assert!(err.contains(part), "expected `{part}` in: {err}");
    }
}

/// Rewrites the bundle JSON through `edit`.
fn edit_bundle(sig: &Path, edit: impl FnOnce(&mut Value)) {
    let mut bundle: Value = serde_json::from_str(&fs::read_to_string(sig).unwrap()).unwrap();
    edit(&mut bundle);
    fs::write(sig, serde_json::to_string(&bundle).unwrap()).unwrap();
}

#[test]
fn round_trip() {
    let f = fixture();
    let sig = signed(&f);
    assert_eq!(sig, f.model.join("model.sig"));
    let verified = verify_folder(&f.model, &sig, &f.public_pem).unwrap();
    let names: Vec<&str> = verified.files.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["config.json", "sub/deeper/weights.bin", "sub-x"]);
    assert_eq!(verified.model_name, "my-model");
    let hint = PublicKeyP256::from_pem(&f.public_pem).unwrap().hint();
    assert_eq!(verified.key_hint.as_deref(), Some(hint.as_str()));
    assert_eq!(
        verified.files[0].sha256,
        sha256_file(&f.model.join("config.json")).unwrap()
    );
    // No temporary file left behind by the atomic write.
    let leftovers: Vec<_> = fs::read_dir(&f.model)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty());
    // Re-signing over an existing model.sig gives the same statement.
    let again = sign_folder(&f.model, &f.private_pem).unwrap();
    let summary = inspect_signature(&sig).unwrap();
    assert_eq!(again.statement().resources, summary.resources);
    assert_eq!(again.statement().subject_sha256, summary.subject_sha256);
}

#[test]
fn the_sec1_key_form_signs_too() {
    let f = fixture();
    let key = PrivateKey::from_pem(&f.private_pem).unwrap();
    let secret =
        <p256::SecretKey as p256::pkcs8::DecodePrivateKey>::from_pkcs8_pem(&f.private_pem).unwrap();
    let sec1 = secret
        .to_sec1_pem(p256::pkcs8::LineEnding::LF)
        .unwrap()
        .to_string();
    let sig = sign_folder(&f.model, &sec1)
        .unwrap()
        .write_into_folder(&f.model)
        .unwrap();
    verify_folder(&f.model, &sig, &key.public_key().to_pem().unwrap()).unwrap();
}

#[test]
fn flipped_byte_is_refused_naming_the_file() {
    let f = fixture();
    let sig = signed(&f);
    let path = f.model.join("sub/deeper/weights.bin");
    let mut bytes = fs::read(&path).unwrap();
    bytes[150_000] ^= 1;
    fs::write(&path, bytes).unwrap();
    assert_has(
        &refusal(&f, &sig),
        &[
            "sha256 differs for sub/deeper/weights.bin",
            "does not match",
        ],
    );
}

#[test]
fn added_file_is_refused_naming_the_file() {
    let f = fixture();
    let sig = signed(&f);
    fs::write(f.model.join("sub/extra.txt"), b"new").unwrap();
    assert_has(
        &refusal(&f, &sig),
        &["file not in the signature: sub/extra.txt"],
    );
}

#[test]
fn removed_file_is_refused_naming_the_file() {
    let f = fixture();
    let sig = signed(&f);
    fs::remove_file(f.model.join("config.json")).unwrap();
    assert_has(&refusal(&f, &sig), &["signed file missing: config.json"]);
}

#[test]
fn renamed_file_is_refused_naming_both_paths() {
    let f = fixture();
    let sig = signed(&f);
    fs::rename(f.model.join("config.json"), f.model.join("config2.json")).unwrap();
    assert_has(
        &refusal(&f, &sig),
        &[
            "file not in the signature: config2.json",
            "signed file missing: config.json",
        ],
    );
}

#[test]
fn signature_by_another_key_is_refused() {
    let f = fixture();
    let other = PrivateKey::generate();
    let sig = sign_folder(&f.model, &other.to_pkcs8_pem().unwrap())
        .unwrap()
        .write_into_folder(&f.model)
        .unwrap();
    assert_has(&refusal(&f, &sig), &["made with another key", "model.sig"]);
    // Without the hint, the signature check itself refuses it.
    edit_bundle(&sig, |b| {
        b["verificationMaterial"]["publicKey"]
            .as_object_mut()
            .unwrap()
            .remove("hint");
    });
    assert_has(
        &refusal(&f, &sig),
        &["does not verify with this public key"],
    );
}

#[test]
fn tampered_payload_is_refused() {
    let f = fixture();
    let sig = signed(&f);
    // Swap a resource's digest for the real digest of other bytes, keeping the
    // statement self-consistent: only the signature can catch it.
    let victim = f.model.join("config.json");
    fs::write(&victim, b"{\"a\": 2}").unwrap();
    let new_digest = sha256_file(&victim).unwrap();
    edit_bundle(&sig, |b| {
        let payload = STANDARD
            .decode(b["dsseEnvelope"]["payload"].as_str().unwrap())
            .unwrap();
        let mut statement: Value = serde_json::from_slice(&payload).unwrap();
        let resources = statement["predicate"]["resources"].as_array_mut().unwrap();
        resources[0]["digest"] = Value::String(new_digest.clone());
        let list: Vec<Resource> = resources
            .iter()
            .map(|r| Resource {
                name: r["name"].as_str().unwrap().into(),
                sha256: r["digest"].as_str().unwrap().into(),
            })
            .collect();
        statement["subject"][0]["digest"]["sha256"] =
            Value::String(crate::statement::global_digest(&list).unwrap());
        b["dsseEnvelope"]["payload"] =
            Value::String(STANDARD.encode(serde_json::to_vec(&statement).unwrap()));
    });
    assert_has(&refusal(&f, &sig), &["is not valid", "does not verify"]);
    // inspect only checks form: the tampered statement is still well formed.
    assert_eq!(
        inspect_signature(&sig).unwrap().resources[0].sha256,
        new_digest
    );
}

#[test]
fn wrong_payload_type_is_refused() {
    let f = fixture();
    let sig = signed(&f);
    edit_bundle(&sig, |b| {
        b["dsseEnvelope"]["payloadType"] = Value::String("application/json".into());
    });
    assert_has(
        &refusal(&f, &sig),
        &["payloadType is `application/json`", "malformed"],
    );
    assert!(inspect_signature(&sig).is_err());
}

#[test]
fn symlinks_are_refused_when_signing_and_verifying() {
    let f = fixture();
    let sig = signed(&f);
    std::os::unix::fs::symlink("config.json", f.model.join("alias.json")).unwrap();
    let err = format!("{:#}", sign_folder(&f.model, &f.private_pem).unwrap_err());
    assert_has(&err, &["alias.json", "symlink"]);
    assert_has(&refusal(&f, &sig), &["alias.json", "symlink"]);
}

#[test]
fn signature_outside_the_folder_and_ignore_paths() {
    let f = fixture();
    let outside = f.model.parent().unwrap().join("elsewhere.sig");
    sign_folder(&f.model, &f.private_pem)
        .unwrap()
        .write_to(&outside)
        .unwrap();
    verify_folder(&f.model, &outside, &f.public_pem).unwrap();
    // Git paths and a stale model.sig are ignored by verification.
    fs::write(f.model.join(".gitattributes"), b"*.bin filter=lfs").unwrap();
    fs::write(f.model.join("model.sig"), b"stale").unwrap();
    verify_folder(&f.model, &outside, &f.public_pem).unwrap();
    // A signature inside the folder under another name is ignored as the CLI does.
    let inside = f.model.join("sub/copy.sig");
    fs::copy(&outside, &inside).unwrap();
    verify_folder(&f.model, &inside, &f.public_pem).unwrap();
}

#[test]
fn precomputed_digests_sign_and_verify() {
    let f = fixture();
    let digests = hash_folder(&f.model).unwrap();
    assert!(!digests.contains_key(".git/HEAD"));
    let made = sign_digests("my-model", &digests, &f.private_pem).unwrap();
    let sig = made.write_into_folder(&f.model).unwrap();
    assert_eq!(
        made.statement(),
        sign_folder(&f.model, &f.private_pem).unwrap().statement()
    );
    // The caller may pass everything it hashed, ignored paths included.
    let mut all: BTreeMap<String, String> = digests.clone();
    all.insert(".git/HEAD".into(), "0".repeat(64));
    all.insert("model.sig".into(), "1".repeat(64));
    let verified = verify_with_digests(&sig, &f.public_pem, &all).unwrap();
    assert_eq!(verified.files.len(), 3);
    all.insert("new.bin".into(), "2".repeat(64));
    let err = format!(
        "{:#}",
        verify_with_digests(&sig, &f.public_pem, &all).unwrap_err()
    );
    assert_has(&err, &["file not in the signature: new.bin"]);
}

#[test]
fn inspect_reports_hint_and_resources() {
    let f = fixture();
    let sig = signed(&f);
    let summary = inspect_signature(&sig).unwrap();
    let hint = PublicKeyP256::from_pem(&f.public_pem).unwrap().hint();
    assert_eq!(summary.key_hint, Some(hint));
    assert_eq!(summary.model_name, "my-model");
    assert_eq!(summary.resources.len(), 3);
    assert_eq!(summary.ignore_paths, DEFAULT_IGNORE_PATHS);
    fs::write(&sig, b"{\"not\": \"a bundle\"}").unwrap();
    let err = format!("{:#}", inspect_signature(&sig).unwrap_err());
    assert_has(&err, &["model.sig", "malformed"]);
}
