//! OpenSSF model signing, the `key` method of `model_signing` 1.1.x, in Rust.
//!
//! A bundle folder is signed into `model.sig`: a Sigstore bundle (JSON) whose DSSE
//! envelope holds an in-toto statement listing every file of the folder with its
//! SHA-256, signed with an ECDSA P-256 key. The Python reference
//! (`model_signing verify key DIR --signature DIR/model.sig --public_key PUB.pem`)
//! accepts what [`sign_folder`] writes, and [`verify_folder`] accepts what the
//! reference's `model_signing sign key` writes; the integration tests hold both
//! directions against the pinned reference. Files are hashed streaming, so
//! multi-gigabyte context binaries are never read into memory.
//!
//! This crate must not depend on any other crate of the workspace: it is the
//! format, usable (and testable) on its own; the xtask commands call into it.
//!
//! Modules: [`keys`] (PEM keys and the key hint), `dsse` (PAE and the ECDSA
//! signature), `statement` (the in-toto statement and its global digest), `bundle`
//! (the Sigstore bundle JSON), `folder` (walking and hashing), `sign` and `verify`
//! (the operations below).

mod bundle;
mod dsse;
mod folder;
pub mod keys;
mod sign;
mod statement;
#[cfg(test)]
mod tests;
mod verify;

pub use bundle::BUNDLE_MEDIA_TYPE;
pub use dsse::{IN_TOTO_PAYLOAD_TYPE, pae};
pub use folder::{DEFAULT_IGNORE_PATHS, sha256_file};
pub use keys::{PrivateKey, PublicKeyP256};
pub use sign::{SignatureFile, hash_folder, sign_digests, sign_folder};
pub use statement::{PREDICATE_TYPE, Resource, STATEMENT_TYPE, Statement};
pub use verify::{
    SignatureSummary, Verified, inspect_signature, verify_folder, verify_with_digests,
};

/// The signature's file name inside the signed folder, the reference's default.
pub const SIGNATURE_FILE_NAME: &str = "model.sig";
