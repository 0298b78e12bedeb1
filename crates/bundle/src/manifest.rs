//! `manifest.json` and `SHA256SUMS`: the bundle's own list of files (path, size, sha256, role),
//! written by `package` and checked by `verify`, `fetch` and `release` through the hardened
//! reader (`bundle::reader`): listed paths must stay inside, entries must be plain files or
//! folders, links are never followed. Files the Hugging Face Hub manages itself are tolerated
//! beside the listed ones, and nothing else is. It is a closed type: an unknown field, role
//! or format is refused with its name (a hand-edited manifest says nothing the tool ignores).

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::reader::{self, Scan};
use xtask_base::record::Versioned;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestEntry {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
    pub role: Role,
}

/// What a bundle file is: the roles `package` writes, and no other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    ContextBinary,
    BuildRecord,
    EpcontextWrapper,
    Dlc,
    Onnx,
    OnnxExternalData,
    Golden,
    Trace,
    Report,
    ModelCard,
}

impl Role {
    /// The role as `manifest.json` spells it.
    pub fn label(self) -> &'static str {
        match self {
            Role::ContextBinary => "context-binary",
            Role::BuildRecord => "build-record",
            Role::EpcontextWrapper => "epcontext-wrapper",
            Role::Dlc => "dlc",
            Role::Onnx => "onnx",
            Role::OnnxExternalData => "onnx-external-data",
            Role::Golden => "golden",
            Role::Trace => "trace",
            Role::Report => "report",
            Role::ModelCard => "model-card",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// The bundle layout a manifest describes: one, so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Format {
    #[serde(rename = "xtask-bundle.v1")]
    V1,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// `Manifest::SCHEMA` (`record::Versioned`; 0 when read from a bundle packaged before).
    #[serde(default)]
    pub schema_version: u32,
    pub format: Format,
    pub model: String,
    pub files: Vec<ManifestEntry>,
}

/// v1: the first numbered schema. Manifests written before it (schema 0) hold the same fields
/// without the number and are read as they are: bundles already published on the Hub stay
/// fetchable and verifiable, and nothing a manifest lists changed meaning.
impl Versioned for Manifest {
    const KIND: &'static str = "bundle manifest";
    const SCHEMA: u32 = 1;
    const READS_OLDER: &'static [u32] = &[0];
}

impl Manifest {
    /// The manifest of a bundle of `model` listing `files`, in this build's schema.
    pub fn new(model: &str, files: Vec<ManifestEntry>) -> Self {
        Manifest {
            schema_version: <Self as Versioned>::SCHEMA,
            format: Format::V1,
            model: model.into(),
            files,
        }
    }

    /// The `SHA256SUMS` text of this manifest (`sha256sum -c` format).
    pub fn sha256sums(&self) -> String {
        self.files
            .iter()
            .map(|f| format!("{}  {}\n", f.sha256, f.path))
            .collect()
    }

    /// Writes `manifest.json` (through `record`) and `SHA256SUMS` into the bundle folder.
    pub fn write(&self, dir: &Path) -> Result<()> {
        xtask_base::record::write(&dir.join("manifest.json"), self)?;
        xtask_base::atomic::write_atomic(&dir.join("SHA256SUMS"), self.sha256sums().as_bytes())
            .with_context(|| format!("cannot write {}", dir.join("SHA256SUMS").display()))
    }
}

/// The command that writes a bundle's manifest again (its model may be unknown when the
/// manifest is what could not be read).
fn repackage(dir: &Path) -> String {
    format!("cargo xtask package --model MODEL --out {}", dir.display())
}

/// Files the Hub adds to every repository or download folder and no manifest lists:
/// `.gitattributes` (written with the repository, fetched by `hf download`) and the
/// `.cache/huggingface/` metadata of `hf download --local-dir` (huggingface_hub's
/// `hf_api.py` / `_local_folder.py`).
pub fn hub_managed(rel: &str) -> bool {
    rel == ".gitattributes" || rel.starts_with(".cache/huggingface/")
}

/// The bundle's own files, never listed in the manifest: the manifest, its sums and the
/// signature over all of them (`model.sig`, the OpenSSF model-signing file).
pub fn own_file(rel: &str) -> bool {
    rel == "manifest.json" || rel == "SHA256SUMS" || rel == SIGNATURE
}

/// The signature's file at the bundle root (`model_signing`'s default name).
pub const SIGNATURE: &str = "model.sig";

/// Reads `manifest.json` (a regular file in the bundle, never through a link) and refuses it
/// when a listed path is unsafe or listed twice: nothing it lists is opened before that.
pub fn read_manifest(dir: &Path) -> Result<Manifest> {
    if std::fs::symlink_metadata(dir.join("manifest.json")).is_err() {
        bail!("{} has no manifest.json: not a bundle", dir.display());
    }
    let bytes = reader::read_small(dir, "manifest.json")?;
    let manifest: Manifest = xtask_base::record::from_slice(
        &bytes,
        &dir.join("manifest.json").display().to_string(),
        &repackage(dir),
    )?;
    let mut seen = BTreeSet::new();
    let mut unsafe_paths = Vec::new();
    for f in &manifest.files {
        if let Some(why) = reader::unsafe_path(&f.path) {
            unsafe_paths.push(format!("{:?}: {why}", f.path));
        } else if own_file(&f.path) || !seen.insert(f.path.as_str()) {
            unsafe_paths.push(format!(
                "{:?}: listed twice, or the manifest's own file",
                f.path
            ));
        }
    }
    if !unsafe_paths.is_empty() {
        bail!(
            "manifest.json of {} lists path(s) that do not name a file inside the bundle (nothing was read from them):\n  {}",
            dir.display(),
            unsafe_paths.join("\n  ")
        );
    }
    Ok(manifest)
}

/// Changed, missing, extra and non-regular files, each named (every file is re-hashed in
/// full, opened without following links).
pub fn check_files(dir: &Path) -> Result<Vec<String>> {
    check_files_matching(dir, &|_| true)
}

/// `check_files` for a partial download: only the listed files `selected` accepts must be
/// present and intact; any file present must still be listed (or be the Hub's own), and every
/// entry, selected or not, must be a regular file or a folder.
pub fn check_files_matching(dir: &Path, selected: &dyn Fn(&str) -> bool) -> Result<Vec<String>> {
    let manifest = read_manifest(dir)?;
    let scan = reader::scan(dir)?;
    let mut problems = scan.refusals();
    problems.extend(listed_problems(dir, &manifest, &scan, selected));
    let listed: BTreeSet<&str> = manifest.files.iter().map(|f| f.path.as_str()).collect();
    for rel in scan.files.keys() {
        if !own_file(rel) && !hub_managed(rel) && !listed.contains(rel.as_str()) {
            problems.push(format!("extra: {rel} (not in manifest.json)"));
        }
    }
    let sums_ok = scan.files.contains_key("SHA256SUMS")
        && reader::read_small(dir, "SHA256SUMS").ok().as_deref()
            == Some(manifest.sha256sums().as_bytes());
    if !sums_ok {
        problems.push("SHA256SUMS does not match manifest.json".into());
    }
    Ok(problems)
}

/// Every selected listed file: present as a regular file, of its size, of its sha256.
fn listed_problems(
    dir: &Path,
    manifest: &Manifest,
    scan: &Scan,
    selected: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let mut problems = Vec::new();
    let listed: Vec<_> = manifest
        .files
        .iter()
        .filter(|f| selected(&f.path))
        .collect();
    let task = xtask_base::ui::progress::Task::new("checking sha256", listed.len());
    for f in listed {
        task.working_on(&f.path);
        task.step_done(&f.path, false);
        if scan.refused.contains_key(&f.path) {
            continue; // already named with what it is
        }
        match scan.files.get(&f.path) {
            None => problems.push(format!("missing: {}", f.path)),
            Some(&len) if len != f.bytes => problems.push(format!(
                "changed: {} ({len} bytes, manifest says {})",
                f.path, f.bytes
            )),
            Some(_) => match reader::sha256(dir, &f.path) {
                Err(e) => problems.push(format!("{e:#}")),
                Ok(sha) if sha != f.sha256 => problems.push(format!(
                    "changed: {} (sha256 {sha}, manifest says {})",
                    f.path, f.sha256
                )),
                Ok(_) => {}
            },
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        Manifest::new(
            "tiny",
            vec![ManifestEntry {
                path: "ctx/vision_socid77_archv73.bin".into(),
                bytes: 3,
                sha256: "ab".repeat(32),
                role: Role::ContextBinary,
            }],
        )
    }

    #[test]
    fn a_manifest_round_trips_through_its_record_with_its_checksums() {
        let dir = tempfile::tempdir().unwrap();
        let written = sample();
        written.write(dir.path()).unwrap();
        let read = read_manifest(dir.path()).unwrap();
        assert_eq!(read, written);
        assert_eq!(read.schema_version, Manifest::SCHEMA);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("SHA256SUMS")).unwrap(),
            written.sha256sums()
        );
    }

    /// Bundles published before manifests carried a number stay readable (same fields); a
    /// manifest of a newer schema is refused with the file and the command that repackages.
    #[test]
    fn an_unnumbered_manifest_is_read_and_a_newer_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest.json");
        let mut old = serde_json::to_value(sample()).unwrap();
        old.as_object_mut().unwrap().remove("schema_version");
        std::fs::write(&path, serde_json::to_vec(&old).unwrap()).unwrap();
        let read = read_manifest(dir.path()).unwrap();
        assert_eq!(read.schema_version, 0);
        assert_eq!(read.files, sample().files);

        old["schema_version"] = 7.into();
        std::fs::write(&path, serde_json::to_vec(&old).unwrap()).unwrap();
        let err = format!("{:#}", read_manifest(dir.path()).unwrap_err());
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(
            err.contains("schema 7, newer than this tool reads"),
            "{err}"
        );
        assert!(
            err.contains(&format!(
                "`cargo xtask package --model MODEL --out {}` writes it again",
                dir.path().display()
            )),
            "{err}"
        );
    }

    /// A closed type: an unknown role, format or field is refused with its name and the file.
    #[test]
    fn unknown_roles_formats_and_fields_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest.json");
        let good = serde_json::to_value(sample()).unwrap();
        type Edit = fn(&mut serde_json::Value);
        let cases: [(&str, Edit); 4] = [
            ("evil", |m| m["files"][0]["role"] = "evil".into()),
            ("other.v9", |m| m["format"] = "other.v9".into()),
            ("signer", |m| m["signer"] = "me".into()),
            ("note", |m| m["files"][0]["note"] = "x".into()),
        ];
        for (name, edit) in cases {
            let mut m = good.clone();
            edit(&mut m);
            std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
            let err = format!("{:#}", read_manifest(dir.path()).unwrap_err());
            assert!(err.contains(&format!("`{name}`")), "{name}: {err}");
            assert!(err.contains(&path.display().to_string()), "{err}");
        }
        let listed = |rel: &str| {
            let mut m = good.clone();
            m["files"][0]["path"] = rel.into();
            std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
            format!("{:#}", read_manifest(dir.path()).unwrap_err())
        };
        assert!(listed("model.sig").contains("the manifest's own file"));
    }
}
