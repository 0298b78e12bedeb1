//! The embedded QNN 2.47 runtime (fetched, checked and loaded through ORT), the quantizer's Python
//! environment and what every report shares (tool versions, provenance, Markdown and HTML helpers).
//! It must not depend on parity, builds, the chain or bundles.

pub mod quantize;
pub mod report;
pub mod runtime;
