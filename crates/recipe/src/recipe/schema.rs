//! The recipe files' schema: what `model.toml` and `<component>.toml` may say, with defaults.
//! Unknown keys, wrong types and missing fields are refused by serde (`deny_unknown_fields`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

use super::{ComponentEstimate, Gate};
use xtask_base::vocab::BackendKind;
use xtask_onnx::tensor::DType;

pub const DEFAULT_MIN_COSINE: f64 = 0.9999;

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFile {
    pub model: ModelSection,
    pub target: TargetSection,
    /// The host chain of the model family (`cargo xtask run`); absent for single-graph models.
    #[serde(default)]
    pub host: Option<HostSection>,
    #[serde(default)]
    pub parity: ModelParity,
    #[serde(default)]
    pub package: PackageSection,
    /// Per component (by name), what its CI job's duration is estimated from (`plan --json`).
    #[serde(default)]
    pub estimate: BTreeMap<String, ComponentEstimate>,
    /// The whole chain on the HTP as measured at the real size (`plan --chain`).
    #[serde(default)]
    pub chain_estimate: Option<super::estimate::ChainEstimate>,
}

/// What `cargo xtask package` puts in the bundle besides the context binaries.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct PackageSection {
    /// The DLC of each component (`ctx/<component>.dlc`).
    #[serde(default)]
    pub dlc: bool,
    /// The EPContext wrapper of each binary, so ONNX Runtime can load it.
    #[serde(default = "yes")]
    pub wrappers: bool,
}

impl Default for PackageSection {
    fn default() -> Self {
        PackageSection {
            dlc: false,
            wrappers: true,
        }
    }
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    pub name: String,
    pub family: String,
    #[serde(default)]
    pub description: String,
    /// Components in pipeline order; each has `<name>.toml` beside `model.toml`.
    pub components: Vec<String>,
    pub seq_len: usize,
    /// How to obtain files that are not in the repository (printed when they are missing).
    #[serde(default)]
    pub obtain: Option<String>,
    /// The Hugging Face repository (`OWNER/NAME`) of the published bundle `fetch` downloads
    /// when no `--repo` is given.
    #[serde(default)]
    pub source_repo: Option<String>,
    /// Its revision (branch, tag or commit) when no `--revision` is given.
    #[serde(default)]
    pub source_revision: Option<String>,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSection {
    pub qairt: String,
    pub soc: u32,
    pub htp_arch: u32,
}

/// Host pipeline parameters: which component plays which role in the chain, the flow-matching
/// timesteps, de-normalisation, and the chain's gates. Sizes come from the component recipes.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct HostSection {
    /// `trace.json` of one reference chain run; its `npz` key names the host tensors beside it.
    pub trace: PathBuf,
    pub vision: String,
    pub llm_splits: Vec<String>,
    pub action_context: String,
    pub action_step: String,
    /// One Euler step per entry (`dt` is applied inside `action_step`).
    pub timesteps: Vec<f32>,
    pub action_dim_used: usize,
    /// The older spelling of `[host.denorm]`: this dimension passes through unchanged, every
    /// other is clipped and de-normalised (refused together with `[host.denorm]`).
    #[serde(default)]
    pub gripper_dim: Option<usize>,
    /// How de-normalised dims are mapped from [-1, 1]; only `q01_q99` is implemented.
    pub norm_mode: String,
    /// Per action dim: clipped to [-1, 1] or not, de-normalised or not (`recipe::host`).
    #[serde(default)]
    pub denorm: Option<super::host::DenormSection>,
    /// Our trace tensor name → the trace file's, for traces written by another exporter.
    #[serde(default)]
    pub trace_keys: BTreeMap<String, String>,
    #[serde(default)]
    pub gate: ChainGate,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChainGate {
    /// Every boundary tensor of the chain against the golden.
    #[serde(default = "default_chain_cosine")]
    pub min_cosine: f64,
    /// Absolute tolerance of every boundary (`within_tol`, informational like a component's).
    #[serde(default = "default_atol")]
    pub atol: f64,
    /// Relative tolerance of every boundary (`within_tol`).
    #[serde(default = "default_rtol")]
    pub rtol: f64,
    /// Largest |action - expected| in action units, per backend.
    #[serde(default = "default_actions_max_abs_map")]
    pub actions_max_abs: BTreeMap<String, f64>,
    /// The scale gate of every boundary, per backend (as `[parity] max_norm_ratio_error`).
    #[serde(default)]
    pub max_norm_ratio_error: BTreeMap<String, f64>,
}

impl Default for ChainGate {
    fn default() -> Self {
        ChainGate {
            min_cosine: default_chain_cosine(),
            atol: default_atol(),
            rtol: default_rtol(),
            actions_max_abs: default_actions_max_abs_map(),
            max_norm_ratio_error: BTreeMap::new(),
        }
    }
}

impl ChainGate {
    /// The gate every boundary tensor of the chain is judged by on `backend` (the same
    /// `Gate` as a component output's, without waivers).
    pub fn boundary_gate(&self, backend: BackendKind) -> Gate {
        Gate {
            min_cosine: self.min_cosine,
            max_norm_ratio_error: norm_ratio_bound(&self.max_norm_ratio_error, backend),
            atol: self.atol,
            rtol: self.rtol,
            waiver: None,
            source: "model.toml [host.gate]".into(),
            replaced_min_cosine: None,
        }
    }

    /// The largest accepted |action - expected| on `backend`: the recipe's, else the default.
    /// The one source of the actions' gate for every chain runner (host and device).
    pub fn actions_gate(&self, backend: BackendKind) -> f64 {
        self.actions_max_abs
            .get(backend.label())
            .copied()
            .unwrap_or_else(|| default_actions_max_abs(backend))
    }
}

/// The default scale gate, | |y| / |golden| - 1 |, per backend, from the tiny model's
/// measured figures (every output of `parity`, every boundary of `run`). The fp32 backends
/// (ORT's CPU EP, QNN's CPU backend) land within 6e-8 of the golden's norm: 1e-3 keeps four
/// orders of margin for deeper graphs and still fails a 0.1 % scale error. The HTP runs fp16
/// (rounding 2^-11 = 4.9e-4 per value, compounding through the layers) and lands within
/// 9.0e-4 per component and 1.5e-3 along the chain: 2e-2 keeps 13x margin for the real
/// model's 36 layers, while a lost 1/sqrt(d) (x8 at d = 64), a unit error or a 1e6 scale fails.
pub fn default_max_norm_ratio_error(backend: BackendKind) -> f64 {
    match backend {
        BackendKind::Ort | BackendKind::Cpu => 1e-3,
        BackendKind::Htp => 2e-2,
    }
}

/// The scale bound a recipe map gives `backend`, else the default.
pub fn norm_ratio_bound(written: &BTreeMap<String, f64>, backend: BackendKind) -> f64 {
    written
        .get(backend.label())
        .copied()
        .unwrap_or_else(|| default_max_norm_ratio_error(backend))
}

fn default_chain_cosine() -> f64 {
    0.999
}

/// The actions' max-abs gate of a backend a recipe does not name: fp32 backends land within
/// 1e-6 of the golden actions on the tiny model, the fp16 HTP within 2.5e-3.
pub fn default_actions_max_abs(backend: BackendKind) -> f64 {
    match backend {
        BackendKind::Ort | BackendKind::Cpu => 1e-4,
        BackendKind::Htp => 1e-2,
    }
}

fn default_actions_max_abs_map() -> BTreeMap<String, f64> {
    BackendKind::ALL
        .iter()
        .map(|b| (b.label().to_string(), default_actions_max_abs(*b)))
        .collect()
}

/// Model-wide gate overrides (for example a looser HTP gate for fp16), each with a reason.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ModelParity {
    #[serde(default, rename = "override")]
    pub overrides: Vec<GateOverride>,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentFile {
    pub component: ComponentSection,
    pub golden: GoldenSection,
    pub inputs: Vec<TensorSpec>,
    pub outputs: Vec<TensorSpec>,
    pub convert: ConvertSection,
    pub context: ContextSection,
    #[serde(default)]
    pub parity: ParitySection,
    #[serde(default)]
    pub rewrite: RewriteSection,
    /// Absent: float (fp16 on the HTP), as the card's bundle.
    #[serde(default)]
    pub quantize: Option<super::quantize::QuantizeSection>,
}

/// Graph rewrites (`onnx::decompose`) applied, in order, to a copy of the ONNX before any QNN
/// step sees it; the ONNX itself is never edited and `parity --backend ort` still judges it.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct RewriteSection {
    #[serde(default)]
    pub apply: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentSection {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// ONNX graph, relative to the project root. External data is found from the graph itself.
    pub onnx: PathBuf,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct GoldenSection {
    pub file: PathBuf,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct TensorSpec {
    pub name: Spanned<String>,
    pub shape: Vec<usize>,
    pub dtype: DType,
    /// Key of this tensor in the golden npz.
    pub golden_key: String,
    /// An additive attention mask: values below fp16's -65504 are clamped to -65504 before
    /// the HTP sees them (fp16 cannot hold them; the HTP then inverts the mask).
    #[serde(default)]
    pub mask: bool,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ConvertSection {
    /// 32 = float DLC (the bundle's choice); 16 = fp16 weights in the DLC.
    pub float_bitwidth: u8,
    #[serde(default)]
    pub float_bias_bitwidth: Option<u8>,
    pub preserve_io_datatype: bool,
    /// `qairt-converter --onnx_skip_simplification`. Unset: on when the ONNX's external data
    /// exceeds 2 GiB (protobuf's message limit; Qualcomm's LLM flows pass it for multi-GB
    /// graphs), off otherwise. `true`/`false` force it.
    #[serde(default)]
    pub onnx_skip_simplification: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ContextSection {
    pub graph_name: String,
    pub optimization_level: u8,
    pub fp16: bool,
    #[serde(default)]
    pub vtcm_mb: u32,
    #[serde(default)]
    pub weight_sharing_group: Option<String>,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ParitySection {
    #[serde(default = "default_min_cosine")]
    pub min_cosine: f64,
    #[serde(default = "default_atol")]
    pub atol: f64,
    #[serde(default = "default_rtol")]
    pub rtol: f64,
    /// The scale gate per backend (`{ htp = 0.05 }`); unnamed backends take
    /// `DEFAULT_MAX_NORM_RATIO_ERROR`.
    #[serde(default)]
    pub max_norm_ratio_error: BTreeMap<String, f64>,
    #[serde(default, rename = "override")]
    pub overrides: Vec<GateOverride>,
}

impl Default for ParitySection {
    fn default() -> Self {
        ParitySection {
            min_cosine: default_min_cosine(),
            atol: default_atol(),
            rtol: default_rtol(),
            max_norm_ratio_error: BTreeMap::new(),
            overrides: Vec::new(),
        }
    }
}

fn default_min_cosine() -> f64 {
    DEFAULT_MIN_COSINE
}
fn default_atol() -> f64 {
    1e-4
}
fn default_rtol() -> f64 {
    1e-3
}

/// A gate that differs from the default; a written `reason` is mandatory and shown in reports.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct GateOverride {
    /// Output name; absent = every output.
    #[serde(default)]
    pub output: Option<String>,
    /// `ort`, `cpu` or `htp`; absent = every backend.
    #[serde(default)]
    pub backend: Option<String>,
    pub min_cosine: f64,
    /// A looser (or tighter) scale gate for what the override covers.
    #[serde(default)]
    pub max_norm_ratio_error: Option<f64>,
    pub reason: String,
}
