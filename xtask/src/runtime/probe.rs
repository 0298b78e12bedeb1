//! A one-node probe model (Relu, [1,8]) run on each backend: proves a backend is usable here
//! and makes QNN report its build version.

use std::collections::BTreeMap;

use anyhow::{Result, bail};

use super::{Backend, Runtime};
use crate::tensor::Tensor;

const PROBE_ONNX: &[u8] = include_bytes!("probe_relu.onnx");

#[derive(Debug, Clone, serde::Serialize)]
pub struct ProbeResult {
    pub backend: String,
    pub usable: bool,
    pub detail: String,
    /// The QNN build version the backend logged (`v2.47.0.…`), for QNN backends.
    pub qnn_build: Option<String>,
}

pub fn probe_backend(rt: &Runtime, backend: &Backend) -> ProbeResult {
    match run_probe(rt, backend) {
        Ok((detail, qnn_build)) => ProbeResult {
            backend: backend.label().into(),
            usable: true,
            detail,
            qnn_build,
        },
        Err(e) => ProbeResult {
            backend: backend.label().into(),
            usable: false,
            detail: format!("{e:#}"),
            qnn_build: None,
        },
    }
}

fn run_probe(rt: &Runtime, backend: &Backend) -> Result<(String, Option<String>)> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("probe.onnx");
    std::fs::write(&path, PROBE_ONNX)?;
    let mut session = rt.open(&path, backend)?;
    let x: Vec<f32> = (0..8).map(|i| i as f32 - 4.0).collect();
    let input = ndarray::ArrayD::from_shape_vec(vec![1, 8], x.clone())?;
    let out = session.run(&BTreeMap::from([("x".to_string(), Tensor::F32(input))]))?;
    let Some(Tensor::F32(y)) = out.get("y") else {
        bail!("probe produced no f32 output `y`")
    };
    let expected: Vec<f32> = x.iter().map(|v| v.max(0.0)).collect();
    let max_err = y
        .iter()
        .zip(&expected)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    if max_err > 1e-2 {
        bail!("probe Relu is wrong on this backend (max abs err {max_err})");
    }
    let qnn_build = super::version::qnn_build_version_from_log(&session.log);
    let placed: Vec<String> = session
        .placement
        .nodes_per_ep
        .iter()
        .map(|(ep, n)| format!("{n} node(s) on {ep}"))
        .collect();
    Ok((placed.join(", "), qnn_build))
}

/// On x86_64 the HTP library is Qualcomm's emulator; on aarch64 it drives the real NPU.
pub fn htp_is_emulated() -> bool {
    cfg!(target_arch = "x86_64")
}
