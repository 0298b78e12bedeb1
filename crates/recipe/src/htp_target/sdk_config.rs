//! The QAIRT SDK's HTP config files, typed: the HTP backend-extension config (`graphs`,
//! `devices`) that `qnn-context-binary-generator` reads through `--config_file`'s
//! `backend_extensions.config_file_path`, and that outer `--config_file` itself. Field names
//! and value kinds are those of the QNN HTP backend-extension docs (`O`,
//! `fp16_relaxed_precision` as 0/1, `vtcm_mb`, `soc_model`, `dsp_arch` as `"v73"`); fields are
//! declared in the order serde_json's maps sort them, so the files' bytes (whose sha256 enters
//! a step's key) are those the untyped rendering wrote.

use serde::{Deserialize, Serialize};

/// One graph's options in the HTP backend-extension config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphConfig {
    /// The finalization optimization level (QNN's `O`: 1, 2 or 3).
    #[serde(rename = "O")]
    pub optimization_level: u8,
    /// 1: compute in fp16 where the graph holds fp32.
    pub fp16_relaxed_precision: u8,
    pub graph_names: Vec<String>,
    /// Absent: the backend's default VTCM size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vtcm_mb: Option<u32>,
}

/// The device a context is compiled for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceConfig {
    /// `v73`.
    pub dsp_arch: String,
    pub soc_model: u32,
}

/// The HTP backend-extension config file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HtpBackendConfig {
    pub devices: Vec<DeviceConfig>,
    /// Absent when a built context is only loaded (no graph is compiled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graphs: Option<Vec<GraphConfig>>,
}

/// Where the HTP extension library and its config are (`backend_extensions`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendExtensions {
    pub config_file_path: String,
    pub shared_library_path: String,
}

/// The `--config_file` of `qnn-context-binary-generator` / `qnn-net-run`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendExtensionsConfig {
    pub backend_extensions: BackendExtensions,
}

/// A config file a step writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SdkConfigFile {
    Htp(HtpBackendConfig),
    Extensions(BackendExtensionsConfig),
}

impl SdkConfigFile {
    /// The file's bytes as written (pretty JSON).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }
}
