//! Versioned JSON records: every JSON file the tool writes and later reads (build records,
//! parity / run / bisect / conformance reports, `bundle.json`, the manifest, cache entries) is
//! a Rust type that implements `Versioned`, carries a `schema_version` field, and is read back
//! through `read`, never picked apart as untyped JSON.
//!
//! A file of another schema is either read (its number is in `READS_OLDER`: the newer type
//! still describes it, every added field having a default) or refused with a message that
//! names the file, both schema numbers and the command that writes it again. A file of a
//! newer schema than this build knows is refused the same way (this tool is older than what
//! wrote it).

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A JSON record with a schema number.
pub trait Versioned: Serialize + DeserializeOwned {
    /// What the file is, as messages name it ("parity report").
    const KIND: &'static str;
    /// The schema this build writes.
    const SCHEMA: u32;
    /// Older schemas this build still reads as they are (0: written before records carried a
    /// number). Anything else is refused.
    const READS_OLDER: &'static [u32] = &[];
}

/// Only the schema number of a record (every other field ignored).
#[derive(serde::Deserialize)]
struct SchemaOnly {
    #[serde(default)]
    schema_version: u32,
}

/// Why a record was not read: the file names itself in the message either way.
#[derive(Debug)]
pub enum Unreadable {
    /// No file at the path.
    Missing,
    /// The file is there but is not a readable record of this kind and schema.
    Refused(anyhow::Error),
}

/// Reads `path` as a `T`, refusing another schema with `rebuild` (the command that writes the
/// file again) in the message.
pub fn read<T: Versioned>(path: &Path, rebuild: &str) -> Result<T> {
    match read_or_missing(path, rebuild) {
        Ok(r) => Ok(r),
        Err(Unreadable::Missing) => bail!(
            "{} does not exist (no {} was written there); `{rebuild}` writes it",
            path.display(),
            T::KIND
        ),
        Err(Unreadable::Refused(e)) => Err(e),
    }
}

/// `read`, telling a missing file apart from an unreadable one.
pub fn read_or_missing<T: Versioned>(path: &Path, rebuild: &str) -> Result<T, Unreadable> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Unreadable::Missing),
        Err(e) => {
            return Err(Unreadable::Refused(anyhow::Error::new(e).context(format!(
                "cannot read the {} {}",
                T::KIND,
                path.display()
            ))));
        }
    };
    from_slice(&bytes, &path.display().to_string(), rebuild).map_err(Unreadable::Refused)
}

/// Parses a record held in memory (`origin` names it in messages: a path, or a bundle's
/// member).
pub fn from_slice<T: Versioned>(bytes: &[u8], origin: &str, rebuild: &str) -> Result<T> {
    let found = serde_json::from_slice::<SchemaOnly>(bytes)
        .with_context(|| {
            format!(
                "{origin} is not a JSON {}; `{rebuild}` writes it again",
                T::KIND
            )
        })?
        .schema_version;
    check_schema::<T>(found, origin, rebuild)?;
    serde_json::from_slice(bytes).with_context(|| {
        format!(
            "{origin} is not a schema {found} record ({}); `{rebuild}` writes it again",
            T::KIND
        )
    })
}

/// Whether a record of schema `found` can be read as a `T`.
pub fn check_schema<T: Versioned>(found: u32, origin: &str, rebuild: &str) -> Result<()> {
    if found == T::SCHEMA || T::READS_OLDER.contains(&found) {
        return Ok(());
    }
    let written = match found {
        0 => "was written before its kind carried a schema number".to_string(),
        n if n > T::SCHEMA => format!("has schema {n}, newer than this tool reads"),
        n => format!("has schema {n}"),
    };
    bail!(
        "{origin}: this {} {written}; this tool reads schema {}: `{rebuild}` writes it again",
        T::KIND,
        T::SCHEMA
    )
}

/// The record as the pretty JSON it is written as.
pub fn to_json<T: Versioned>(record: &T) -> Result<Vec<u8>> {
    serde_json::to_vec_pretty(record).with_context(|| format!("cannot serialise a {}", T::KIND))
}

/// Writes the record atomically (temporary file, then rename).
pub fn write<T: Versioned>(path: &Path, record: &T) -> Result<()> {
    crate::atomic::write_atomic(path, &to_json(record)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, serde::Deserialize)]
    struct Thing {
        schema_version: u32,
        figure: f64,
    }

    impl Versioned for Thing {
        const KIND: &'static str = "thing report";
        const SCHEMA: u32 = 2;
        const READS_OLDER: &'static [u32] = &[1];
    }

    #[test]
    fn a_record_round_trips_and_older_schemas_are_read_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        let t = Thing {
            schema_version: 2,
            figure: 0.5,
        };
        write(&path, &t).unwrap();
        assert_eq!(read::<Thing>(&path, "cargo xtask thing").unwrap(), t);

        std::fs::write(&path, r#"{"schema_version": 1, "figure": 1.0}"#).unwrap();
        assert_eq!(read::<Thing>(&path, "x").unwrap().figure, 1.0);

        std::fs::write(&path, r#"{"figure": 1.0}"#).unwrap();
        let err = format!(
            "{:#}",
            read::<Thing>(&path, "cargo xtask thing").unwrap_err()
        );
        assert!(err.contains("t.json") && err.contains("before its kind carried a schema"));
        assert!(err.contains("`cargo xtask thing` writes it again"), "{err}");

        std::fs::write(&path, r#"{"schema_version": 9, "figure": 1.0}"#).unwrap();
        let err = format!("{:#}", read::<Thing>(&path, "x").unwrap_err());
        assert!(
            err.contains("schema 9, newer than this tool reads"),
            "{err}"
        );

        std::fs::write(&path, "not json").unwrap();
        let err = format!("{:#}", read::<Thing>(&path, "x").unwrap_err());
        assert!(err.contains("is not a JSON thing report"), "{err}");

        let err = format!(
            "{:#}",
            read::<Thing>(&dir.path().join("no.json"), "x").unwrap_err()
        );
        assert!(err.contains("does not exist"), "{err}");
    }
}
