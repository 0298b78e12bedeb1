//! What a model is: one `model.toml` and one `<component>.toml` per component, validated on load
//! (file, line, key), the golden tensors and chain trace they name, fp16 range checks and the HTP
//! target a component compiles for. It must not depend on the runtime, builds, parity or bundles.

pub mod fp16;
pub mod golden;
pub mod htp_target;
pub mod recipe;
