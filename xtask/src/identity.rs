//! Which build of this tool made a record or a report. `XTASK_ID` is the crate version plus
//! the first 16 hex digits of a sha256 over the tool's sources, computed by `build.rs` at
//! build time: it changes whenever the tool's code changes (so a card, `bundle.json` or a step
//! key never claims an older tool made it) and stays the same across commits that leave the
//! tool alone.

/// The full sha256 of the tool's sources (`build.rs`).
pub const SOURCE_SHA256: &str = env!("XTASK_SOURCE_SHA256");

/// `0.1.0+src.1a2b3c4d5e6f7a8b`: the tool's identity as records and reports spell it.
pub const XTASK_ID: &str = const_str_id();

const fn const_str_id() -> &'static str {
    // `concat!` needs literals; the prefix is cut from the env value at compile time.
    const FULL: &str = concat!(
        env!("CARGO_PKG_VERSION"),
        "+src.",
        env!("XTASK_SOURCE_SHA256")
    );
    const LEN: usize = env!("CARGO_PKG_VERSION").len() + "+src.".len() + 16;
    let (head, _) = FULL.as_bytes().split_at(LEN);
    match std::str::from_utf8(head) {
        Ok(s) => s,
        Err(_) => FULL,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_identity_names_the_version_and_a_source_hash() {
        let id = super::XTASK_ID;
        let (version, hash) = id.split_once("+src.").unwrap();
        assert_eq!(version, env!("CARGO_PKG_VERSION"));
        assert_eq!(hash.len(), 16);
        assert!(hash.chars().all(|c| c.is_ascii_hexdigit()));
        assert!(super::SOURCE_SHA256.starts_with(hash));
    }
}
