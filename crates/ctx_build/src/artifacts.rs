//! The words of a build below its plan: the step kinds, a component's artifact files, the tool
//! versions every key holds, and how a recipe section or an ONNX's external data enter a key.
//! Its own module so that the plan, the steps and the toolchains all import it and none of
//! them imports another for these.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use xtask_base::hashing::sha256_bytes;
use xtask_base::soc::Soc;

/// Tool versions that enter every fingerprint (and every step's facts).
pub type Versions = crate::facts::ToolVersions;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// Float ONNX -> QDQ ONNX + encodings, calibrated (quantized components only).
    Quantize,
    Convert,
    CpuParity,
    Context,
}

impl StepKind {
    /// The steps of a float component, in the order they run.
    pub const FLOAT: [StepKind; 3] = [StepKind::Convert, StepKind::CpuParity, StepKind::Context];

    /// The steps of `comp`, in the order they run: a quantized component starts with its
    /// quantize step; a float one has the three steps it always had (and their keys).
    pub fn of(comp: &xtask_recipe::recipe::Component) -> Vec<StepKind> {
        let mut kinds = Vec::with_capacity(4);
        if comp.precision().is_quantized() {
            kinds.push(StepKind::Quantize);
        }
        kinds.extend(Self::FLOAT);
        kinds
    }

    pub fn label(self) -> &'static str {
        match self {
            StepKind::Quantize => "quantize",
            StepKind::Convert => "convert",
            StepKind::CpuParity => "cpu parity",
            StepKind::Context => "context binary",
        }
    }

    /// The step's entry in the component's record (`context` is per SoC).
    pub fn record_name(self, soc: &Soc) -> String {
        match self {
            StepKind::Quantize => "quantize".into(),
            StepKind::Convert => "convert".into(),
            StepKind::CpuParity => "cpu_parity".into(),
            StepKind::Context => format!("context@soc{}", soc.id),
        }
    }
}

/// File names of a component's artifacts in `ctx/<model>/` (relative to the project root).
#[derive(Debug, Clone, Serialize)]
pub struct Artifacts {
    /// The current DLC: the last one whose CPU parity passed.
    pub dlc: PathBuf,
    /// The convert step's DLC until its CPU parity passes (a failing one never replaces `dlc`).
    pub dlc_candidate: PathBuf,
    pub bin: PathBuf,
    pub wrapper: PathBuf,
    pub record: PathBuf,
    /// A quantized component's QDQ ONNX (what every QNN step of it gets), its external data
    /// (when the float ONNX has external data), and its AIMET encodings.
    pub qdq: PathBuf,
    pub qdq_data: PathBuf,
    pub encodings: PathBuf,
}

impl Artifacts {
    /// `<component>_socid<N>_archv<A>.bin`
    pub fn bin_name(&self) -> String {
        file_name(&self.bin)
    }

    /// `<component>_socid<N>_archv<A>_ctx` (the wrapper without `.onnx`).
    pub fn wrapper_stem(&self) -> String {
        file_name(&self.wrapper)
            .trim_end_matches(".onnx")
            .to_string()
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A quantized component's QDQ ONNX (the same for every SoC).
pub fn qdq_path(model: &str, component: &str) -> PathBuf {
    PathBuf::from("ctx")
        .join(model)
        .join(format!("{component}.qdq.onnx"))
}

pub fn artifacts(model: &str, component: &str, soc: &Soc) -> Artifacts {
    let dir = PathBuf::from("ctx").join(model);
    let stem = format!("{component}_socid{}_archv{}", soc.id, soc.htp_arch);
    Artifacts {
        dlc: dir.join(format!("{component}.dlc")),
        dlc_candidate: dir.join(format!("{component}.candidate.dlc")),
        bin: dir.join(format!("{stem}.bin")),
        wrapper: dir.join(format!("{stem}_ctx.onnx")),
        record: dir.join(format!("{component}.record.json")),
        qdq: qdq_path(model, component),
        qdq_data: dir.join(format!("{component}.qdq.onnx.data")),
        encodings: dir.join(format!("{component}.encodings.json")),
    }
}

/// External-data files the ONNX graph refers to (relative to the project root).
pub fn external_data(root: &Path, onnx_rel: &Path) -> Result<Vec<PathBuf>> {
    let summary = xtask_onnx::onnx::proto::read_summary(&root.join(onnx_rel))?;
    let dir = onnx_rel.parent().unwrap_or(Path::new(""));
    Ok(summary
        .external_data
        .iter()
        .map(|loc| dir.join(loc))
        .collect())
}

/// The hash of a recipe section as it was parsed (a key part).
pub fn section_hash<T: Serialize>(section: &T) -> String {
    sha256_bytes(&serde_json::to_vec(section).unwrap_or_default())
}
