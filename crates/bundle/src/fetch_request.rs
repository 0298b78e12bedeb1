//! What `fetch` is asked to do: its own module because the download and its scratch folder
//! both read it.

use std::path::Path;

use xtask_recipe::recipe::{Component, Model};

/// One `fetch`: which repository, revision and components, and how strictly.
pub struct FetchRequest<'a> {
    pub root: &'a Path,
    pub repo: &'a str,
    pub revision: Option<&'a str>,
    pub model: &'a Model,
    /// `Some`: only these components' files (`--only`); `None`: the whole bundle.
    pub only: Option<Vec<&'a Component>>,
    /// Only the build inputs (ONNX + external data, golden, trace), no context binaries.
    pub inputs_only: bool,
    /// Lay out a download without `manifest.json` (recorded as unverified).
    pub unverified: bool,
    /// `--key PUB.pem`: the download must hold a valid signature by this key over exactly
    /// the bundle's files.
    pub key: Option<&'a super::signature::VerifyingKey>,
}
