//! Diagnostics that find a cause: `bisect` (the first divergent operator) and the operator
//! conformance sweep with the lint that reads it. It stands beside the build layer and must not
//! depend on builds, the chain or bundles.

pub mod conformance;
pub mod diagnose;
