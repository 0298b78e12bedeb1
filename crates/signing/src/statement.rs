//! The in-toto Statement v1 that `model_signing` signs, and its global (subject) digest.
//!
//! Layout (from `Payload` in `model_signing/_signing/signing.py` and
//! `_FileSerialization.serialization_parameters` in `model_signing/manifest.py`):
//! one subject named after the model folder whose `sha256` is the SHA-256 of the
//! raw 32-byte digests of the resources concatenated in the order they are listed;
//! predicate type `https://model_signing/signature/v1.0`; predicate
//! `{"serialization": {"method": "files", "hash_type": "sha256",
//! "allow_symlinks": false, "ignore_paths": [...]}, "resources": [{"name",
//! "algorithm": "sha256", "digest": hex}]}`. The reference signer lists resources
//! sorted as `PurePosixPath`s, i.e. component by component (`a/b` before `a-b/c`),
//! which is not plain string order.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::keys::hex;

/// The in-toto statement type.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// The model-signing predicate type, v1.0 (what `model_signing` 1.x writes).
pub const PREDICATE_TYPE: &str = "https://model_signing/signature/v1.0";
/// The experimental v0.2 predicate type, which `model_signing` still reads but this crate refuses.
const PREDICATE_TYPE_V0_1: &str = "https://model_signing/Digests/v0.1";

/// One signed file: its path relative to the model folder (`/` separated) and the
/// lowercase hex SHA-256 of its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    pub name: String,
    pub sha256: String,
}

/// What a model-signing statement says, checked for form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    /// The subject's name: the model folder's own name (informative only; not checked on verify).
    pub model_name: String,
    /// The subject's `sha256`: SHA-256 over the resources' raw digests, in listed order.
    pub subject_sha256: String,
    /// The resources, in the order the statement lists them.
    pub resources: Vec<Resource>,
    /// `serialization.ignore_paths`: paths (relative to the folder) that a verifier also ignores.
    pub ignore_paths: Vec<String>,
    /// `serialization.allow_symlinks` as written (this crate refuses symlinks either way).
    pub allow_symlinks: bool,
}

impl Statement {
    /// Builds the statement for `resources` (any order: they are sorted here the
    /// way the reference sorts them) and computes the subject digest.
    pub fn new(
        model_name: &str,
        mut resources: Vec<Resource>,
        ignore_paths: &[&str],
    ) -> Result<Self> {
        for r in &resources {
            check_resource_name(&r.name)?;
            decode_sha256(&r.sha256).with_context(|| format!("resource `{}`", r.name))?;
        }
        resources.sort_by(|a, b| path_order(&a.name, &b.name));
        if let Some(pair) = resources.windows(2).find(|w| w[0].name == w[1].name) {
            bail!("resource `{}` is listed twice", pair[0].name);
        }
        let resources: Vec<Resource> = resources
            .into_iter()
            .map(|r| Resource {
                sha256: r.sha256.to_ascii_lowercase(),
                name: r.name,
            })
            .collect();
        let subject_sha256 = global_digest(&resources)?;
        Ok(Self {
            model_name: model_name.to_string(),
            subject_sha256,
            resources,
            ignore_paths: ignore_paths.iter().map(|s| s.to_string()).collect(),
            allow_symlinks: false,
        })
    }

    /// The payload bytes: JSON indented by 2 with `": "` separators and no trailing
    /// newline, the shape protobuf's `MessageToJson` gives the reference's payload
    /// (keys here in the order the reference builds them; verifiers parse the JSON,
    /// so key order carries no meaning).
    pub fn to_payload(&self) -> Vec<u8> {
        let resources: Vec<Value> = self
            .resources
            .iter()
            .map(|r| json!({"name": r.name, "algorithm": "sha256", "digest": r.sha256}))
            .collect();
        let mut serialization = Map::new();
        serialization.insert("method".into(), json!("files"));
        serialization.insert("hash_type".into(), json!("sha256"));
        serialization.insert("allow_symlinks".into(), json!(self.allow_symlinks));
        if !self.ignore_paths.is_empty() {
            serialization.insert("ignore_paths".into(), json!(self.ignore_paths));
        }
        let statement = json!({
            "_type": STATEMENT_TYPE,
            "subject": [{"name": self.model_name, "digest": {"sha256": self.subject_sha256}}],
            "predicateType": PREDICATE_TYPE,
            "predicate": {"serialization": serialization, "resources": resources},
        });
        serde_json::to_vec_pretty(&statement).expect("a JSON value always serializes")
    }

    /// Parses and checks a payload the way `Verifier.verify` and
    /// `dsse_payload_to_manifest` in `model_signing/_signing/signing.py` do, refusing
    /// with the reason: statement type, predicate type, one subject, the `files`
    /// serialization with `sha256`, well-formed resources (relative names without
    /// `..`, no duplicates, `sha256` digests of 64 hex digits) and a subject digest
    /// equal to the one recomputed over the resources in listed order.
    pub fn from_payload(payload: &[u8]) -> Result<Self> {
        let value: Value =
            serde_json::from_slice(payload).context("the DSSE payload is not JSON")?;
        let obj = value
            .as_object()
            .context("the DSSE payload is not a JSON object")?;
        let statement_type = str_field(obj, "_type", "statement")?;
        if statement_type != STATEMENT_TYPE {
            bail!("the statement `_type` is `{statement_type}`, expected `{STATEMENT_TYPE}`");
        }
        let predicate_type = str_field(obj, "predicateType", "statement")?;
        if predicate_type == PREDICATE_TYPE_V0_1 {
            bail!(
                "the statement uses the pre-1.0 predicate `{PREDICATE_TYPE_V0_1}` (model_signing 0.2); re-sign with model_signing 1.x or this tool"
            );
        }
        if predicate_type != PREDICATE_TYPE {
            bail!(
                "the statement `predicateType` is `{predicate_type}`, expected `{PREDICATE_TYPE}`"
            );
        }
        let subjects = obj
            .get("subject")
            .and_then(Value::as_array)
            .context("the statement has no `subject` list")?;
        let [subject] = subjects.as_slice() else {
            bail!(
                "the statement has {} subjects, expected exactly one",
                subjects.len()
            );
        };
        let subject = subject
            .as_object()
            .context("the statement's subject is not an object")?;
        let model_name = str_field(subject, "name", "subject")?.to_string();
        let subject_sha256 = subject
            .get("digest")
            .and_then(Value::as_object)
            .and_then(|d| d.get("sha256"))
            .and_then(Value::as_str)
            .context("the statement's subject has no `digest.sha256`")?
            .to_string();

        let predicate = obj
            .get("predicate")
            .and_then(Value::as_object)
            .context("the statement has no `predicate` object")?;
        let serialization = predicate
            .get("serialization")
            .and_then(Value::as_object)
            .context("the predicate has no `serialization` object")?;
        let method = str_field(serialization, "method", "serialization")?;
        if method != "files" {
            bail!(
                "the serialization method is `{method}`: only `files` (one digest per file) is supported"
            );
        }
        let hash_type = str_field(serialization, "hash_type", "serialization")?;
        if hash_type != "sha256" {
            bail!("the serialization hash_type is `{hash_type}`: only `sha256` is supported");
        }
        let allow_symlinks = serialization
            .get("allow_symlinks")
            .and_then(Value::as_bool)
            .context("the serialization has no boolean `allow_symlinks`")?;
        let ignore_paths = match serialization.get("ignore_paths") {
            None => Vec::new(),
            Some(v) => v
                .as_array()
                .and_then(|a| a.iter().map(|p| p.as_str().map(str::to_string)).collect())
                .context("the serialization's `ignore_paths` is not a list of strings")?,
        };

        let listed = predicate
            .get("resources")
            .and_then(Value::as_array)
            .context("the predicate has no `resources` list")?;
        let mut resources = Vec::with_capacity(listed.len());
        let mut seen = BTreeSet::new();
        for (i, item) in listed.iter().enumerate() {
            let item = item
                .as_object()
                .with_context(|| format!("resource #{i} is not an object"))?;
            let name = str_field(item, "name", "resource")?;
            check_resource_name(name)?;
            let algorithm = str_field(item, "algorithm", "resource")?;
            if algorithm != "sha256" {
                bail!("resource `{name}` has algorithm `{algorithm}`, expected `sha256`");
            }
            let digest = str_field(item, "digest", "resource")?;
            decode_sha256(digest).with_context(|| format!("resource `{name}`"))?;
            if !seen.insert(name.to_string()) {
                bail!("resource `{name}` is listed twice");
            }
            resources.push(Resource {
                name: name.to_string(),
                sha256: digest.to_ascii_lowercase(),
            });
        }
        let recomputed = global_digest(&resources)?;
        if recomputed != subject_sha256 {
            bail!(
                "the statement is inconsistent: its subject digest is {subject_sha256} but its resources hash to {recomputed}"
            );
        }
        Ok(Self {
            model_name,
            subject_sha256,
            resources,
            ignore_paths,
            allow_symlinks,
        })
    }
}

/// SHA-256 over the raw digests of `resources`, in the given order, as lowercase hex.
pub fn global_digest(resources: &[Resource]) -> Result<String> {
    let mut hasher = Sha256::new();
    for r in resources {
        hasher.update(decode_sha256(&r.sha256).with_context(|| format!("resource `{}`", r.name))?);
    }
    Ok(hex(&hasher.finalize()))
}

/// Orders `/`-separated relative paths as Python's `PurePosixPath` does: by components.
pub fn path_order(a: &str, b: &str) -> Ordering {
    a.split('/').cmp(b.split('/'))
}

/// A resource name must be a canonical relative path: no leading `/`, no empty,
/// `.` or `..` component, no NUL. (The reference would read `./a` as `a`; its
/// signer never writes such names, and refusing them keeps one spelling per file.)
pub fn check_resource_name(name: &str) -> Result<()> {
    if name.is_empty() {
        bail!("a resource has an empty name");
    }
    if name.starts_with('/') {
        bail!("resource `{name}` is an absolute path; names must be relative to the model folder");
    }
    if name.contains('\0') {
        bail!("resource `{name}` contains a NUL byte");
    }
    for part in name.split('/') {
        match part {
            ".." => {
                bail!("resource `{name}` contains `..`; names must stay inside the model folder")
            }
            "" | "." => {
                bail!("resource `{name}` is not a canonical relative path (empty or `.` component)")
            }
            _ => {}
        }
    }
    Ok(())
}

/// Decodes a 64-digit hex SHA-256 (either case, as Python's `bytes.fromhex`).
pub fn decode_sha256(digest: &str) -> Result<[u8; 32]> {
    let bytes = digest.as_bytes();
    if bytes.len() != 64 {
        bail!(
            "the sha256 digest `{digest}` has {} characters, expected 64 hex digits",
            bytes.len()
        );
    }
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks(2).enumerate() {
        let hi = hex_value(pair[0]);
        let lo = hex_value(pair[1]);
        match (hi, lo) {
            (Some(hi), Some(lo)) => out[i] = hi << 4 | lo,
            _ => bail!("the sha256 digest `{digest}` is not hexadecimal"),
        }
    }
    Ok(out)
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

fn str_field<'a>(obj: &'a Map<String, Value>, key: &str, what: &str) -> Result<&'a str> {
    obj.get(key)
        .and_then(Value::as_str)
        .with_context(|| format!("the {what} has no string field `{key}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(name: &str, fill: char) -> Resource {
        Resource {
            name: name.into(),
            sha256: fill.to_string().repeat(64),
        }
    }

    #[test]
    fn sorted_by_components_not_by_string() {
        let s = Statement::new(
            "m",
            vec![res("a-b/c", '1'), res("a/b", '2'), res("a.txt", '3')],
            &[],
        )
        .unwrap();
        let names: Vec<&str> = s.resources.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["a/b", "a-b/c", "a.txt"]);
    }

    #[test]
    fn subject_digest_is_sha256_of_raw_digests() {
        let s = Statement::new("m", vec![res("x", 'a'), res("y", 'b')], &[]).unwrap();
        let mut raw = vec![0xaa_u8; 32];
        raw.extend([0xbb_u8; 32]);
        assert_eq!(s.subject_sha256, hex(&Sha256::digest(&raw)));
        // Empty folder: digest of nothing.
        let empty = Statement::new("m", vec![], &[]).unwrap();
        assert_eq!(
            empty.subject_sha256,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn payload_round_trips() {
        let s = Statement::new(
            "m",
            vec![res("sub/b", 'c'), res("a", 'd')],
            &[".git", "model.sig"],
        )
        .unwrap();
        let payload = s.to_payload();
        assert!(payload.starts_with(b"{\n  \"_type\": \"https://in-toto.io/Statement/v1\",\n"));
        assert_eq!(Statement::from_payload(&payload).unwrap(), s);
    }

    #[test]
    fn inconsistent_or_malformed_statements_are_refused() {
        let s = Statement::new("m", vec![res("a", 'd')], &[]).unwrap();
        let text = String::from_utf8(s.to_payload()).unwrap();
        let cases = [
            (
                text.replace(&"d".repeat(64), &"e".repeat(64)),
                "inconsistent",
            ),
            (text.replace("\"a\"", "\"../a\""), "`..`"),
            (text.replace("\"a\"", "\"/a\""), "absolute"),
            (text.replace(&"d".repeat(64), &"d".repeat(62)), "64 hex"),
            (
                text.replace("signature/v1.0", "signature/v9"),
                "predicateType",
            ),
            (text.replace("Statement/v1", "Statement/v0.1"), "_type"),
            (text.replace("\"files\"", "\"shards\""), "only `files`"),
        ];
        for (payload, reason) in cases {
            let err = format!(
                "{:#}",
                Statement::from_payload(payload.as_bytes()).unwrap_err()
            );
            assert!(err.contains(reason), "expected `{reason}` in: {err}");
        }
    }
}
