//! What `package` is asked to do: its own module because the package step and the card's
//! report finder both read it.

use std::path::{Path, PathBuf};

use xtask_base::soc::Soc;
use xtask_recipe::recipe::{Component, Model};

/// What to package: the model's selected components for one SoC, into `out`.
pub struct PackageRequest<'a> {
    pub root: &'a Path,
    pub model: &'a Model,
    pub comps: &'a [&'a Component],
    pub soc: Soc,
    /// The bundle folder (absolute); it must not exist or be empty.
    pub out: PathBuf,
    pub allow_stale: bool,
    /// Package binaries HTP parity never measured (said on stderr and in the card).
    pub allow_unmeasured: bool,
    /// Sign the bundle with this P-256 private key (`model.sig` at its root, the OpenSSF
    /// model-signing format), read and checked before anything is hashed.
    pub sign_key: Option<super::signature::SigningKey>,
}

impl PackageRequest<'_> {
    pub fn model_name(&self) -> &str {
        &self.model.file.model.name
    }
}
