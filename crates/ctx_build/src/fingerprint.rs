//! Fingerprints and freshness, after cargo's: a step's key hashes everything it depends on
//! (content, rendered options and commands, recipe sections, tool versions, the previous step's key), so dirtiness
//! propagates down the chain. Records are written only after a step succeeded; the record of
//! a step is cleared before it re-runs, so an interrupted build never looks fresh. Why a step
//! is dirty is a `DirtyReason`, structured for `--dry-run --json` and printable for people.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::facts::{RECORD_SCHEMA, StepFacts};
use xtask_base::hashing::{HashMemo, sha256_bytes};

/// The key of one step plus its named parts, kept to explain *why* a step is dirty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepKey {
    pub key: String,
    pub parts: BTreeMap<String, String>,
}

impl StepKey {
    pub fn new(step: &str, parts: BTreeMap<String, String>) -> Self {
        let mut text = format!("xtask-step-v1\n{step}\n");
        for (k, v) in &parts {
            text.push_str(&format!("{k}={v}\n"));
        }
        StepKey {
            key: sha256_bytes(text.as_bytes()),
            parts,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepRecord {
    pub key: StepKey,
    /// Outputs (paths relative to the project root) and their sha256.
    pub outputs: BTreeMap<String, String>,
    pub finished_unix: u64,
    pub seconds: f64,
    /// What the step did, typed: the one source of the card's and the dry run's facts.
    pub facts: StepFacts,
    /// The cache key this step was restored under (None: it ran here).
    pub restored_from_cache: Option<String>,
    /// Step-specific run details for reports (memory, compiler stages, timings); never read
    /// back as facts.
    #[serde(default)]
    pub detail: crate::detail::StepDetail,
}

/// All step records of one component, in `ctx/<model>/<component>.record.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentRecord {
    pub schema_version: u32,
    pub steps: BTreeMap<String, StepRecord>,
    /// Why the record file on disk was not read (another schema, a missing field): its steps
    /// are dirty and nothing is taken from it.
    #[serde(skip)]
    pub refused: Option<String>,
}

/// v2: typed facts per step (v1 held a hand-written JSON copy of recipe fields: refused, its
/// steps rebuild).
impl xtask_base::record::Versioned for ComponentRecord {
    const KIND: &'static str = "build record";
    const SCHEMA: u32 = RECORD_SCHEMA;
}

impl Default for ComponentRecord {
    fn default() -> Self {
        ComponentRecord::new()
    }
}

impl ComponentRecord {
    /// A missing record is an empty one (everything dirty); an unreadable one, or one of
    /// another schema, is empty too and says why in `refused` (never an error: a build
    /// rewrites it).
    pub fn load(path: &Path) -> Self {
        let Ok(bytes) = std::fs::read(path) else {
            return ComponentRecord::new();
        };
        match xtask_base::record::from_slice::<ComponentRecord>(
            &bytes,
            &format!("build record {}", path.display()),
            "cargo xtask build-ctx",
        ) {
            Ok(record) => record,
            Err(e) => ComponentRecord {
                refused: Some(format!("{e:#}")),
                ..ComponentRecord::new()
            },
        }
    }

    pub fn new() -> Self {
        ComponentRecord {
            schema_version: RECORD_SCHEMA,
            steps: BTreeMap::new(),
            refused: None,
        }
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let mut out = self.clone();
        out.schema_version = RECORD_SCHEMA;
        xtask_base::record::write(path, &out)
            .with_context(|| format!("cannot write build record {}", path.display()))
    }

    /// The record of step `name`, or why there is none (with the rebuild advice).
    pub fn step(&self, name: &str) -> Result<&StepRecord> {
        match (self.steps.get(name), &self.refused) {
            (Some(r), _) => Ok(r),
            (None, Some(why)) => anyhow::bail!("{why}"),
            (None, None) => anyhow::bail!(
                "no `{name}` step in the build record: build it (`cargo xtask build-ctx`)"
            ),
        }
    }
}

/// Why a step must run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum DirtyReason {
    /// The step has no record: it never completed.
    NeverBuilt,
    /// The record file was refused (another schema, a missing field): rebuild.
    RecordRefused {
        why: String,
    },
    /// An input file is missing, so the step has no key.
    InputMissing,
    /// A named key part (an input's content, a rendered option set, a version...) changed.
    PartChanged {
        part: String,
        old: String,
        new: String,
    },
    PartNew {
        part: String,
    },
    PartRemoved {
        part: String,
    },
    /// The keys differ but no part does: the key's format changed.
    FingerprintFormatChanged,
    OutputModified {
        path: String,
    },
    OutputMissing {
        path: String,
    },
    /// An earlier step of the component ran, so its outputs are new.
    EarlierStepRan,
    /// `--force`.
    Forced,
}

impl std::fmt::Display for DirtyReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DirtyReason::NeverBuilt => write!(f, "never built"),
            DirtyReason::InputMissing => write!(f, "an input file is missing"),
            DirtyReason::RecordRefused { why } => write!(f, "{why}"),
            DirtyReason::PartChanged { part, old, new } => {
                write!(f, "{}", super::change::describe(part, old, new))
            }
            DirtyReason::PartNew { part } => write!(f, "{part} is new"),
            DirtyReason::PartRemoved { part } => write!(f, "{part} was removed"),
            DirtyReason::FingerprintFormatChanged => write!(f, "fingerprint format changed"),
            DirtyReason::OutputModified { path } => write!(f, "output {path} was modified"),
            DirtyReason::OutputMissing { path } => write!(f, "output {path} is missing"),
            DirtyReason::EarlierStepRan => write!(f, "an earlier step of this component re-ran"),
            DirtyReason::Forced => write!(f, "--force"),
        }
    }
}

/// The reasons a step is dirty, in the order found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DirtyReasons(pub Vec<DirtyReason>);

impl DirtyReasons {
    /// The reasons as text, separated by `sep` (how reports and errors show them).
    pub fn join(&self, sep: &str) -> String {
        self.texts().join(sep)
    }

    pub fn texts(&self) -> Vec<String> {
        self.0.iter().map(ToString::to_string).collect()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, DirtyReason> {
        self.0.iter()
    }
}

impl From<Vec<DirtyReason>> for DirtyReasons {
    fn from(v: Vec<DirtyReason>) -> Self {
        DirtyReasons(v)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Freshness {
    Fresh,
    Dirty(DirtyReasons),
}

impl Freshness {
    pub fn dirty(reason: DirtyReason) -> Self {
        Freshness::Dirty(DirtyReasons(vec![reason]))
    }
}

/// Compares a step's current key and outputs with its record; the reasons say why it is dirty.
pub fn freshness(
    root: &Path,
    record: Option<&StepRecord>,
    key: &StepKey,
    memo: &mut HashMemo,
) -> Freshness {
    let Some(record) = record else {
        return Freshness::dirty(DirtyReason::NeverBuilt);
    };
    freshness_of(root, record, key, memo)
}

/// `freshness` of a step whose record is in `component`, saying so when the file was refused.
pub fn step_freshness(
    root: &Path,
    component: &ComponentRecord,
    name: &str,
    key: &StepKey,
    memo: &mut HashMemo,
) -> Freshness {
    match (component.steps.get(name), &component.refused) {
        (Some(r), _) => freshness_of(root, r, key, memo),
        (None, Some(why)) => Freshness::dirty(DirtyReason::RecordRefused { why: why.clone() }),
        (None, None) => Freshness::dirty(DirtyReason::NeverBuilt),
    }
}

fn freshness_of(root: &Path, record: &StepRecord, key: &StepKey, memo: &mut HashMemo) -> Freshness {
    let mut reasons = explain_key_change(&record.key, key);
    for (rel, sha) in &record.outputs {
        let path = rel.clone();
        match memo.sha256(&root.join(rel)) {
            Ok(actual) if &actual == sha => {}
            Ok(_) => reasons.push(DirtyReason::OutputModified { path }),
            Err(_) => reasons.push(DirtyReason::OutputMissing { path }),
        }
    }
    if reasons.is_empty() {
        Freshness::Fresh
    } else {
        Freshness::Dirty(DirtyReasons(reasons))
    }
}

/// What a dry run puts after a version it took from the pins because the runtime is not
/// fetched yet: the recorded version is then judged against the pin (see `pinned_matches`).
pub const NOT_FETCHED_MARK: &str = " (pinned; runtime not fetched yet)";

/// The libraries' hash a dry run puts in keys when the runtime is not fetched yet: only the
/// fetched files can tell it, so it is not told as a change either.
pub const LIBRARIES_NOT_FETCHED: &str = "(pinned wheels; runtime not fetched yet)";

/// Whether the recorded version `old` is the one the pin `new` (`<pin>` + `NOT_FETCHED_MARK`)
/// names: the same release (`1.24.4`), or a QNN build of it (`v2.47.0.260601114230` for the
/// pin `2.47.0`), whose build number only the fetched runtime can tell.
fn pinned_matches(old: &str, new: &str) -> bool {
    if new == LIBRARIES_NOT_FETCHED {
        return true;
    }
    let Some(pin) = new.strip_suffix(NOT_FETCHED_MARK) else {
        return false;
    };
    let old = old.trim_start_matches('v');
    old == pin
        || old
            .strip_prefix(pin)
            .is_some_and(|rest| rest.starts_with('.'))
}

fn explain_key_change(old: &StepKey, new: &StepKey) -> Vec<DirtyReason> {
    if old.key == new.key {
        return Vec::new();
    }
    let mut reasons = Vec::new();
    let mut pinned_only = false;
    for (name, value) in &new.parts {
        let part = name.clone();
        match old.parts.get(name) {
            None => reasons.push(DirtyReason::PartNew { part }),
            Some(v) if pinned_matches(v, value) => pinned_only = true,
            Some(v) if v != value => reasons.push(DirtyReason::PartChanged {
                part,
                old: v.clone(),
                new: value.clone(),
            }),
            Some(_) => {}
        }
    }
    for name in old.parts.keys().filter(|n| !new.parts.contains_key(*n)) {
        reasons.push(DirtyReason::PartRemoved { part: name.clone() });
    }
    // The keys differ only by the versions a dry run took from the pins: as fresh as it can tell.
    if reasons.is_empty() && !pinned_only {
        reasons.push(DirtyReason::FingerprintFormatChanged);
    }
    reasons
}

#[cfg(test)]
#[path = "fingerprint_tests.rs"]
mod tests;

#[cfg(test)]
pub use tests::test_facts;
