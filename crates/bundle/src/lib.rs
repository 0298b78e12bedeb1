//! The Hugging Face bundle: package, the manifest and card, verify, fetch and release through the
//! `hf` CLI: the bundle bound to itself. It must not depend on the CLI.
//!
//! The Hugging Face bundle: package (assemble, manifest, card), verify, and the `hf` CLI that
//! releases and fetches it.

pub mod assemble;
pub mod bound;
pub mod card;
mod card_build;
pub mod card_figures;
pub mod card_reports;
pub mod checks;
pub mod component;
pub mod cross_refs;
pub mod destination;
pub mod fetch;
pub mod fetch_patterns;
pub mod fetch_request;
pub mod fetch_scratch;
pub mod hf;
pub mod info;
pub mod intact;
pub mod manifest;
pub mod package;
pub mod package_request;
pub mod reader;
pub mod records;
pub mod release;
pub mod release_publish;
pub mod release_target;
pub mod signature;
pub mod verify;
pub use xtask_runtime::report::provenance;
