//! Diagnostics: bisect, fp16 lint, op conformance.
