//! Which build of this tool made a record or a report: the crate version plus the first 16 hex
//! digits of a sha256 over the tool's sources (every crate's `src/`, the Python scripts it runs,
//! the manifests and the workspace lock), computed by the CLI crate's `build.rs`. It changes
//! whenever the tool's code changes (so a card, `bundle.json` or a step key never claims an
//! older tool made it) and stays the same across commits that leave the tool alone.
//!
//! The CLI sets it once at start (`set`) rather than every crate reading it at compile time:
//! a value compiled into this bottom crate would recompile the whole workspace on any one-file
//! change. Code run without the CLI (unit tests, the test doubles) sees `UNSET_SOURCE`.

use std::sync::OnceLock;

/// The source hash reported when no binary set one (unit tests of the library crates).
pub const UNSET_SOURCE: &str = "unset";

static ID: OnceLock<(String, String)> = OnceLock::new();

/// Sets the tool's identity for this process (the first call wins): `version` is the CLI's
/// crate version, `source_sha256` the full hex sha256 of its sources.
pub fn set(version: &str, source_sha256: &str) {
    let short = source_sha256.get(..16).unwrap_or(source_sha256);
    let _ = ID.set((format!("{version}+src.{short}"), source_sha256.to_string()));
}

/// `0.1.0+src.1a2b3c4d5e6f7a8b`: the tool's identity as records and reports spell it.
pub fn xtask_id() -> &'static str {
    static UNSET: OnceLock<String> = OnceLock::new();
    match ID.get() {
        Some((id, _)) => id,
        None => UNSET.get_or_init(|| format!("{}+src.{UNSET_SOURCE}", env!("CARGO_PKG_VERSION"))),
    }
}

/// The full sha256 of the tool's sources, when a binary set it.
pub fn source_sha256() -> Option<&'static str> {
    ID.get().map(|(_, full)| full.as_str())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_identity_names_the_version_and_a_source_hash() {
        // Unset in a library test: said so, never a made-up hash.
        assert!(super::xtask_id().ends_with("+src.unset"));
        super::set("0.1.0", &"ab".repeat(32));
        let (version, hash) = super::xtask_id().split_once("+src.").unwrap();
        assert_eq!(version, "0.1.0");
        assert_eq!(hash, "abababababababab");
        assert_eq!(super::source_sha256().unwrap(), "ab".repeat(32));
    }
}
