//! Building a component's artifacts: plan (pure), fingerprints, the steps, their execution,
//! and the freshness checks that parity, package and verify share.

pub mod fingerprint;
pub mod fresh;
pub mod plan;
pub mod progress;
pub mod report;
