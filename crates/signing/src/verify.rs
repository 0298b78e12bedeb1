//! Reading, checking and verifying a `model.sig` against a key and a folder.
//!
//! The order follows `model_signing` (`verifying.py`, `sign_ec_key.py`,
//! `signing.py`): bundle form, key hint against the given key, the DSSE
//! signature, the statement (types, resources, subject digest), and only then the
//! files, so a bad signature fails before gigabytes are hashed. The files on disk
//! must be exactly the statement's resources: the reference's default (without
//! `--ignore_unsigned_files`) refuses extra files as well as missing or changed ones.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::bundle::{ParsedBundle, parse_bundle};
use crate::dsse::verify_payload;
use crate::folder::{GIT_IGNORE_PATHS, IgnoreList, hash_folder_with, relative_name};
use crate::keys::PublicKeyP256;
use crate::statement::{Resource, Statement};

/// What a signature file says, checked for form only (no key, no files).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignatureSummary {
    /// The bundle's key hint (hex SHA-256 of the signer's public key PEM), if any.
    pub key_hint: Option<String>,
    /// The subject name (the signed folder's name; informative).
    pub model_name: String,
    /// The subject digest, consistent with the resources (checked).
    pub subject_sha256: String,
    /// The signed files in statement order.
    pub resources: Vec<Resource>,
    /// Paths the signer excluded, which verification ignores too.
    pub ignore_paths: Vec<String>,
}

/// A successful verification: signed by the given key, folder matching.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    pub model_name: String,
    /// The bundle's key hint; `None` for an old bundle without one (the reference
    /// accepts those with a warning).
    pub key_hint: Option<String>,
    pub subject_sha256: String,
    /// Every file verified, (relative path, sha256), in statement order.
    pub files: Vec<Resource>,
}

struct Checked {
    bundle: ParsedBundle,
    statement: Statement,
}

fn read_and_check(signature: &Path) -> Result<Checked> {
    let text = std::fs::read_to_string(signature)
        .with_context(|| format!("reading the signature {}", signature.display()))?;
    let bundle = parse_bundle(&text)
        .with_context(|| format!("the signature {} is malformed", signature.display()))?;
    let statement = Statement::from_payload(&bundle.payload).with_context(|| {
        format!(
            "the signature {} holds a malformed statement",
            signature.display()
        )
    })?;
    Ok(Checked { bundle, statement })
}

/// Checks a signature file's form only: it parses as a key-method bundle, the
/// types are right, the resources are well formed (relative names without `..`,
/// 64-hex `sha256` digests) and agree with the subject digest. Proves nothing about
/// who signed: a caller without a public key reports "signed, not verified".
pub fn inspect_signature(signature: &Path) -> Result<SignatureSummary> {
    let Checked { bundle, statement } = read_and_check(signature)?;
    Ok(SignatureSummary {
        key_hint: bundle.key_hint,
        model_name: statement.model_name,
        subject_sha256: statement.subject_sha256,
        resources: statement.resources,
        ignore_paths: statement.ignore_paths,
    })
}

/// Verifies `signature` with `public_key_pem` (SubjectPublicKeyInfo PEM) and checks
/// that `folder` holds exactly the signed files with their SHA-256: a file on disk
/// not in the signature, a signed file missing, or a changed file is refused with
/// its path. Ignored: the git paths, the statement's `ignore_paths`, and the
/// signature file itself when it lies inside the folder (as the reference CLI does).
/// Symlinks anywhere in the folder are refused.
pub fn verify_folder(folder: &Path, signature: &Path, public_key_pem: &str) -> Result<Verified> {
    let checked = verify_signature(signature, public_key_pem)?;
    let mut ignore = ignore_list(&checked.statement);
    if let (Ok(root), Ok(sig)) = (folder.canonicalize(), signature.canonicalize())
        && sig.starts_with(&root)
        && let Ok(name) = relative_name(&root, &sig)
    {
        ignore.add(&name);
    }
    let on_disk = hash_folder_with(folder, &ignore)?;
    compare(&checked.statement, &on_disk).with_context(|| {
        format!(
            "the folder {} does not match the signature {}",
            folder.display(),
            signature.display()
        )
    })?;
    Ok(verified(checked))
}

/// As [`verify_folder`], for a caller that already streamed the folder's hashes:
/// `digests` maps the relative `/` path of every regular file of the folder to its
/// SHA-256 hex. Entries under the git paths and the statement's `ignore_paths`
/// (which include `model.sig`) are dropped here, as the reference drops them; any
/// other entry must be a signed file with the signed digest.
pub fn verify_with_digests(
    signature: &Path,
    public_key_pem: &str,
    digests: &BTreeMap<String, String>,
) -> Result<Verified> {
    let checked = verify_signature(signature, public_key_pem)?;
    let ignore = ignore_list(&checked.statement);
    let on_disk: BTreeMap<String, String> = digests
        .iter()
        .filter(|(name, _)| !ignore.ignores(name))
        .map(|(name, digest)| (name.clone(), digest.to_ascii_lowercase()))
        .collect();
    compare(&checked.statement, &on_disk).with_context(|| {
        format!(
            "the files do not match the signature {}",
            signature.display()
        )
    })?;
    Ok(verified(checked))
}

/// Form, key hint and DSSE signature.
fn verify_signature(signature: &Path, public_key_pem: &str) -> Result<Checked> {
    let key = PublicKeyP256::from_pem(public_key_pem).context("loading the public key")?;
    let checked = read_and_check(signature)?;
    let given = key.hint();
    if let Some(hint) = &checked.bundle.key_hint
        && *hint != given
    {
        bail!(
            "the signature {} was made with another key: its key hint is {hint}, the given public key's is {given}",
            signature.display()
        );
    }
    verify_payload(&key, &checked.bundle.payload, &checked.bundle.signature_der)
        .with_context(|| format!("the signature {} is not valid", signature.display()))?;
    Ok(checked)
}

fn ignore_list(statement: &Statement) -> IgnoreList {
    let mut ignore = IgnoreList::new(GIT_IGNORE_PATHS);
    for path in &statement.ignore_paths {
        ignore.add(path);
    }
    ignore
}

/// Compares the files found with the statement, naming every difference.
fn compare(statement: &Statement, on_disk: &BTreeMap<String, String>) -> Result<()> {
    let signed: BTreeMap<&str, &str> = statement
        .resources
        .iter()
        .map(|r| (r.name.as_str(), r.sha256.as_str()))
        .collect();
    let mut problems = Vec::new();
    for name in on_disk.keys() {
        if !signed.contains_key(name.as_str()) {
            problems.push(format!("file not in the signature: {name}"));
        }
    }
    for (name, digest) in &signed {
        match on_disk.get(*name) {
            None => problems.push(format!("signed file missing: {name}")),
            Some(actual) if actual != digest => problems.push(format!(
                "sha256 differs for {name}: signed {digest}, on disk {actual}"
            )),
            Some(_) => {}
        }
    }
    if !problems.is_empty() {
        bail!("{}", problems.join("; "));
    }
    Ok(())
}

fn verified(checked: Checked) -> Verified {
    Verified {
        model_name: checked.statement.model_name,
        key_hint: checked.bundle.key_hint,
        subject_sha256: checked.statement.subject_sha256,
        files: checked.statement.resources,
    }
}
