//! Signing a folder (or digests already computed) into a `model.sig` bundle.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

use crate::SIGNATURE_FILE_NAME;
use crate::bundle::write_bundle;
use crate::dsse::sign_payload;
use crate::folder::{DEFAULT_IGNORE_PATHS, IgnoreList, hash_folder_with};
use crate::keys::PrivateKey;
use crate::statement::{Resource, Statement};

/// A signature made in memory: the bundle JSON and the statement it signs.
#[derive(Clone, Debug)]
pub struct SignatureFile {
    json: String,
    statement: Statement,
    key_hint: String,
}

impl SignatureFile {
    /// The bundle JSON, exactly the bytes to write (compact, no trailing newline,
    /// as the reference writes it).
    pub fn json(&self) -> &str {
        &self.json
    }

    /// The signed statement: model name, subject digest, resources in signed order.
    pub fn statement(&self) -> &Statement {
        &self.statement
    }

    /// The key hint written into the bundle (hex SHA-256 of the public key's PEM).
    pub fn key_hint(&self) -> &str {
        &self.key_hint
    }

    /// Writes the bundle to `path` atomically: a temporary file in the same folder,
    /// flushed to disk, then renamed over `path`, so a reader never sees half a
    /// signature and an old one stays whole if writing fails.
    pub fn write_to(&self, path: &Path) -> Result<()> {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let file_name = path
            .file_name()
            .with_context(|| format!("{} names no file", path.display()))?
            .to_string_lossy();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let temp = dir.join(format!(".{file_name}.tmp-{}-{nanos}", std::process::id()));
        let written = (|| -> Result<()> {
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&temp)
                .with_context(|| format!("creating {}", temp.display()))?;
            file.write_all(self.json.as_bytes())
                .with_context(|| format!("writing {}", temp.display()))?;
            file.sync_all()
                .with_context(|| format!("flushing {}", temp.display()))?;
            std::fs::rename(&temp, path)
                .with_context(|| format!("renaming {} to {}", temp.display(), path.display()))
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        written
    }

    /// Writes the bundle as `folder/model.sig` (atomically, see [`Self::write_to`]).
    pub fn write_into_folder(&self, folder: &Path) -> Result<PathBuf> {
        let path = folder.join(SIGNATURE_FILE_NAME);
        self.write_to(&path)?;
        Ok(path)
    }
}

/// Hashes every file of `folder` as the reference signer does: sorted walk, the
/// default ignore list ([`DEFAULT_IGNORE_PATHS`]), symlinks and special files
/// refused with their path. Returns relative `/` name → lowercase hex SHA-256.
pub fn hash_folder(folder: &Path) -> Result<BTreeMap<String, String>> {
    hash_folder_with(folder, &IgnoreList::new(DEFAULT_IGNORE_PATHS))
}

/// Signs `folder` with a PEM P-256 private key (PKCS#8 or SEC1). The statement
/// names the folder, lists every file not ignored with its SHA-256, and records
/// [`DEFAULT_IGNORE_PATHS`] so that verifiers skip the same paths. Nothing is
/// written: call [`SignatureFile::write_into_folder`].
pub fn sign_folder(folder: &Path, private_key_pem: &str) -> Result<SignatureFile> {
    let key = PrivateKey::from_pem(private_key_pem).context("loading the signing key")?;
    let model_name = model_name(folder)?;
    let digests = hash_folder(folder)?;
    sign_with_key(&model_name, &digests, &key)
        .with_context(|| format!("signing {}", folder.display()))
}

/// Signs digests the caller already computed (relative `/` name → SHA-256 hex of
/// every file of the folder, ignored paths left out), so a folder streamed once
/// for another purpose need not be hashed again. `model_name` is the folder's name.
pub fn sign_digests(
    model_name: &str,
    digests: &BTreeMap<String, String>,
    private_key_pem: &str,
) -> Result<SignatureFile> {
    let key = PrivateKey::from_pem(private_key_pem).context("loading the signing key")?;
    sign_with_key(model_name, digests, &key)
}

fn sign_with_key(
    model_name: &str,
    digests: &BTreeMap<String, String>,
    key: &PrivateKey,
) -> Result<SignatureFile> {
    let resources = digests
        .iter()
        .map(|(name, sha256)| Resource {
            name: name.clone(),
            sha256: sha256.clone(),
        })
        .collect();
    let statement = Statement::new(model_name, resources, &DEFAULT_IGNORE_PATHS)?;
    let payload = statement.to_payload();
    let signature = sign_payload(key, &payload);
    let key_hint = key.public_key().hint();
    Ok(SignatureFile {
        json: write_bundle(&key_hint, &payload, &signature),
        statement,
        key_hint,
    })
}

/// The subject name: the folder's last component, or, for `.` and the like, the
/// resolved folder's (`model_path.name`, else `basename(resolve())`, in
/// `model_signing/_serialization/file.py`).
fn model_name(folder: &Path) -> Result<String> {
    let name = match folder.file_name() {
        Some(name) => name.to_owned(),
        None => {
            let resolved = folder
                .canonicalize()
                .with_context(|| format!("resolving {}", folder.display()))?;
            resolved.file_name().unwrap_or_default().to_owned()
        }
    };
    name.into_string()
        .map_err(|n| anyhow::anyhow!("the folder name {n:?} is not UTF-8"))
}
