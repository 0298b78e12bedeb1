//! The Hugging Face bundle: package, verify, manifest, card, and the `hf` CLI.

pub mod card;
pub mod hf;
