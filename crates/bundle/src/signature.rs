//! The bundle's signature: `model.sig` at its root, in the OpenSSF model-signing format (the
//! `model_signing` 1.1.x key method, ECDSA P-256: `xtask_signing`). It covers exactly the
//! bundle's files: every file `manifest.json` lists, `manifest.json` and `SHA256SUMS`; the
//! manifest never lists `model.sig`. The digests are the manifest's (its files were checked
//! against it before any signature is made or read), so a 10 GB bundle is hashed once.
//!
//! The reference CLI checks the same folder: `model_signing verify key BUNDLE --signature
//! BUNDLE/model.sig --public_key PUB.pem` (it ignores `.gitattributes` and `model.sig`
//! itself, as this signature records in its `ignore_paths`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::manifest::{Manifest, SIGNATURE};
use super::reader;
use xtask_base::bad_input::BadInput;

/// A private key read from a PEM file and proven loadable, before anything is hashed.
pub struct SigningKey {
    path: PathBuf,
    pem: String,
    hint: String,
}

/// A public key read from a PEM file (`--key PUB.pem`).
pub struct VerifyingKey {
    path: PathBuf,
    pem: String,
    hint: String,
}

fn read_pem(path: &Path, what: &str) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| {
        BadInput(anyhow::anyhow!(
            "{what} {}: cannot be read ({e})",
            path.display()
        ))
        .into()
    })
}

impl SigningKey {
    /// Reads `path` (a PEM P-256 private key, PKCS#8 or SEC1); a key that does not load is
    /// refused (exit 2) naming the file and why.
    pub fn read(path: &Path) -> Result<Self> {
        let pem = read_pem(path, "--sign-key")?;
        let key = xtask_signing::PrivateKey::from_pem(&pem).map_err(|e| {
            BadInput(e.context(format!(
                "--sign-key {} is not a P-256 private key in PEM",
                path.display()
            )))
        })?;
        Ok(SigningKey {
            path: path.to_path_buf(),
            hint: key.public_key().hint(),
            pem,
        })
    }

    /// The public half, to verify what was just signed.
    pub fn verifying(&self) -> Result<VerifyingKey> {
        let key = xtask_signing::PrivateKey::from_pem(&self.pem)?;
        Ok(VerifyingKey {
            path: self.path.clone(),
            pem: key.public_key().to_pem()?,
            hint: self.hint.clone(),
        })
    }

    /// The key hint `model.sig` will carry (hex sha256 of the public key's PEM).
    pub fn hint(&self) -> &str {
        &self.hint
    }
}

impl VerifyingKey {
    /// The PEM file the key was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads `path` (a PEM P-256 public key, SubjectPublicKeyInfo); refused (exit 2) naming
    /// the file and why when it does not load.
    pub fn read(path: &Path) -> Result<Self> {
        let pem = read_pem(path, "--key")?;
        let key = xtask_signing::PublicKeyP256::from_pem(&pem).map_err(|e| {
            BadInput(e.context(format!(
                "--key {} is not a P-256 public key in PEM",
                path.display()
            )))
        })?;
        Ok(VerifyingKey {
            path: path.to_path_buf(),
            hint: key.hint(),
            pem,
        })
    }
}

/// What a bundle's signature was found to be.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Signed {
    /// No `model.sig`.
    Unsigned,
    /// `model.sig` well formed and over exactly the bundle's files, but no key was given to
    /// prove who signed it.
    NotVerified { key_hint: Option<String> },
    /// Signed by the given key, over exactly the bundle's files.
    Verified { key_hint: String, key: String },
    /// A Sigstore certificate (keyless) signature: this tool verifies the key method only.
    Keyless,
}

impl Signed {
    /// One line for people.
    pub fn describe(&self) -> String {
        match self {
            Signed::Unsigned => "unsigned (no model.sig)".into(),
            Signed::NotVerified { key_hint } => format!(
                "signed, not verified (model.sig is well formed and covers every file{}; pass --key PUB.pem to verify who signed it)",
                key_hint
                    .as_deref()
                    .map(|h| format!(", key hint {}", short(h)))
                    .unwrap_or_default()
            ),
            Signed::Keyless => "signed keyless (model.sig holds a Sigstore certificate), not verified: this tool verifies the key method only; verify it with `model_signing verify sigstore`".into(),
            Signed::Verified { key_hint, key } => format!(
                "signature verified: model.sig by {key} (key hint {}) covers exactly the bundle's files",
                short(key_hint)
            ),
        }
    }
}

fn short(hint: &str) -> &str {
    &hint[..hint.len().min(16)]
}

/// The digest of every file the signature covers: the manifest's entries, the manifest and
/// its sums (hashed here: they are the only files the manifest cannot list).
pub fn digests(dir: &Path, manifest: &Manifest) -> Result<BTreeMap<String, String>> {
    let mut out: BTreeMap<String, String> = manifest
        .files
        .iter()
        .map(|f| (f.path.clone(), f.sha256.clone()))
        .collect();
    for own in ["manifest.json", "SHA256SUMS"] {
        out.insert(own.to_string(), reader::sha256(dir, own)?);
    }
    Ok(out)
}

/// Signs the bundle assembled in `dir` (to be moved to `out`, whose folder name the statement
/// names) and writes `model.sig` into it.
pub fn sign(dir: &Path, out: &Path, manifest: &Manifest, key: &SigningKey) -> Result<()> {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| manifest.model.clone());
    let signature = xtask_signing::sign_digests(&name, &digests(dir, manifest)?, &key.pem)
        .with_context(|| format!("cannot sign the bundle with {}", key.path.display()))?;
    signature
        .write_into_folder(dir)
        .with_context(|| format!("cannot write {SIGNATURE}"))?;
    Ok(())
}

/// Checks `model.sig` of a bundle whose files already matched `manifest` (so the manifest's
/// digests are the files'): with `key`, it must be present and a valid signature by that key
/// over exactly the bundle's files; without, a present one must be well formed and over
/// exactly those files (who signed it is then unknown). Problems name `model.sig`.
pub fn check(
    dir: &Path,
    manifest: &Manifest,
    key: Option<&VerifyingKey>,
) -> Result<Signed, Vec<String>> {
    let present = std::fs::symlink_metadata(dir.join(SIGNATURE)).is_ok();
    if !present {
        return match key {
            None => Ok(Signed::Unsigned),
            Some(k) => Err(vec![format!(
                "{SIGNATURE}: the bundle is not signed, and --key {} asks for a signature by that key",
                k.path.display()
            )]),
        };
    }
    // Read only as a regular file inside the bundle, never through a link.
    let bytes = reader::read_small(dir, SIGNATURE).map_err(|e| vec![format!("{e:#}")])?;
    if key.is_none() && keyless(&bytes) {
        return Ok(Signed::Keyless);
    }
    let digests = digests(dir, manifest).map_err(|e| vec![format!("{e:#}")])?;
    let path = dir.join(SIGNATURE);
    match key {
        Some(k) => match xtask_signing::verify_with_digests(&path, &k.pem, &digests) {
            Ok(v) => Ok(Signed::Verified {
                key_hint: v.key_hint.unwrap_or_else(|| k.hint.clone()),
                key: k.path.display().to_string(),
            }),
            Err(e) => Err(vec![format!(
                "{SIGNATURE}: not a valid signature by --key {} over this bundle's files: {e:#}",
                k.path.display()
            )]),
        },
        None => unverified(&path, &digests),
    }
}

/// A signature checked without a key: its form, and that it lists exactly `digests`.
fn unverified(path: &Path, digests: &BTreeMap<String, String>) -> Result<Signed, Vec<String>> {
    let summary = xtask_signing::inspect_signature(path)
        .map_err(|e| vec![format!("{SIGNATURE}: not a model-signing signature: {e:#}")])?;
    let signed: BTreeMap<&str, &str> = summary
        .resources
        .iter()
        .map(|r| (r.name.as_str(), r.sha256.as_str()))
        .collect();
    let mut problems = Vec::new();
    for (name, sha) in digests {
        match signed.get(name.as_str()) {
            None => problems.push(format!("{SIGNATURE}: does not sign {name}")),
            Some(s) if *s != sha => problems.push(format!(
                "{SIGNATURE}: signs {name} with sha256 {s}, the bundle's is {sha}"
            )),
            Some(_) => {}
        }
    }
    for name in signed.keys().filter(|n| !digests.contains_key(**n)) {
        problems.push(format!(
            "{SIGNATURE}: signs {name}, which the bundle does not hold"
        ));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Signed::NotVerified {
        key_hint: summary.key_hint,
    })
}

/// Whether `model.sig` is a Sigstore bundle whose verification material is a certificate (the
/// reference's `sigstore` or `certificate` method) rather than a public key.
fn keyless(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes).is_ok_and(|v| {
        let material = &v["verificationMaterial"];
        material.get("certificate").is_some() || material.get("x509CertificateChain").is_some()
    })
}
