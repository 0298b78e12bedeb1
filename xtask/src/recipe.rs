//! Recipes: one `model.toml` per model and one `<component>.toml` per component, the single
//! source of every name, path, shape, option and gate. Unknown keys, wrong types and missing
//! fields are errors naming file, line and key (serde's `deny_unknown_fields` + toml spans).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use toml::Spanned;

use crate::tensor::DType;

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
    /// The gripper dimension passes through de-normalisation unchanged.
    #[serde(default)]
    pub gripper_dim: Option<usize>,
    pub norm_mode: String,
    #[serde(default)]
    pub gate: ChainGate,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChainGate {
    /// Every boundary tensor of the chain against the golden.
    #[serde(default = "default_chain_cosine")]
    pub min_cosine: f64,
    /// Largest |action - expected| in action units, per backend.
    #[serde(default = "default_actions_max_abs")]
    pub actions_max_abs: BTreeMap<String, f64>,
}

impl Default for ChainGate {
    fn default() -> Self {
        ChainGate {
            min_cosine: default_chain_cosine(),
            actions_max_abs: default_actions_max_abs(),
        }
    }
}

fn default_chain_cosine() -> f64 {
    0.999
}

fn default_actions_max_abs() -> BTreeMap<String, f64> {
    BTreeMap::from([
        ("ort".into(), 1e-4),
        ("cpu".into(), 1e-4),
        ("htp".into(), 1e-2),
    ])
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
    #[serde(default, rename = "override")]
    pub overrides: Vec<GateOverride>,
}

impl Default for ParitySection {
    fn default() -> Self {
        ParitySection {
            min_cosine: default_min_cosine(),
            atol: default_atol(),
            rtol: default_rtol(),
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
    pub reason: String,
}

/// A model's recipes, loaded and checked for internal consistency (not yet against files).
#[derive(Debug, Clone)]
pub struct Model {
    pub file: ModelFile,
    pub components: Vec<Component>,
}

#[derive(Debug, Clone)]
pub struct Component {
    pub recipe_path: PathBuf,
    /// The raw text of the recipe, kept for fingerprints and line numbers.
    pub recipe_text: String,
    pub file: ComponentFile,
}

impl Component {
    pub fn name(&self) -> &str {
        &self.file.component.name
    }

    /// 1-based line of a byte offset in the recipe text.
    pub fn line_of(&self, offset: usize) -> usize {
        self.recipe_text[..offset.min(self.recipe_text.len())]
            .matches('\n')
            .count()
            + 1
    }

    /// "file:line" of a tensor's `name` key, for error messages.
    pub fn where_tensor(&self, spec: &TensorSpec) -> String {
        format!(
            "{}:{}",
            self.recipe_path.display(),
            self.line_of(spec.name.span().start)
        )
    }

    /// The gate for one output on one backend: the most specific override wins.
    pub fn gate(&self, model: &ModelFile, output: &str, backend: &str) -> Gate {
        let all = self
            .file
            .parity
            .overrides
            .iter()
            .chain(model.parity.overrides.iter());
        let matching = all.filter(|o| {
            o.output.as_deref().is_none_or(|x| x == output)
                && o.backend.as_deref().is_none_or(|x| x == backend)
        });
        let best = matching
            .max_by_key(|o| u8::from(o.output.is_some()) * 2 + u8::from(o.backend.is_some()));
        match best {
            Some(o) => Gate {
                min_cosine: o.min_cosine,
                atol: self.file.parity.atol,
                rtol: self.file.parity.rtol,
                waiver: Some(o.reason.clone()),
            },
            None => Gate {
                min_cosine: self.file.parity.min_cosine,
                atol: self.file.parity.atol,
                rtol: self.file.parity.rtol,
                waiver: None,
            },
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Gate {
    pub min_cosine: f64,
    pub atol: f64,
    pub rtol: f64,
    /// The written reason of an override, when one applies.
    pub waiver: Option<String>,
}

/// Parses TOML into `T`, turning serde/toml errors into "file:line:col: message".
pub fn parse_toml<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T> {
    toml::from_str(text).map_err(|e| {
        let line_col = e.span().map(|s| {
            let line = text[..s.start].matches('\n').count() + 1;
            let col = s.start - text[..s.start].rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("{line}:{col}")
        });
        anyhow::anyhow!(
            "{}:{}: {}",
            path.display(),
            line_col.unwrap_or_else(|| "?".into()),
            e.message()
        )
    })
}

pub fn known_models(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(root.join("recipes"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("model.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

pub fn load_model(root: &Path, name: &str) -> Result<Model> {
    let model_path = Path::new("recipes").join(name).join("model.toml");
    let text = fs::read_to_string(root.join(&model_path)).with_context(|| {
        format!(
            "no recipe for model `{name}` ({} missing); known models: {}",
            model_path.display(),
            known_models(root).join(", ")
        )
    })?;
    let file: ModelFile = parse_toml(&model_path, &text)?;
    if file.model.name != name {
        bail!(
            "{}: model.name = {:?} but the folder is `{name}`",
            model_path.display(),
            file.model.name
        );
    }
    check_overrides(&model_path, &file.parity.overrides, None)?;
    if let Some(host) = &file.host {
        check_host(&model_path, &file.model, host)?;
    }
    let mut components = Vec::new();
    for comp in &file.model.components {
        components.push(load_component(root, name, comp)?);
    }
    Ok(Model { file, components })
}

/// Recipe paths are kept relative to the project root: that is how errors and reports show them.
fn load_component(root: &Path, model: &str, name: &str) -> Result<Component> {
    let recipe_path = Path::new("recipes")
        .join(model)
        .join(format!("{name}.toml"));
    let recipe_text = fs::read_to_string(root.join(&recipe_path)).with_context(|| {
        format!(
            "component `{name}` is listed in model.toml but {} is missing",
            recipe_path.display()
        )
    })?;
    let file: ComponentFile = parse_toml(&recipe_path, &recipe_text)?;
    let comp = Component {
        recipe_path,
        recipe_text,
        file,
    };
    check_component(&comp, name)?;
    Ok(comp)
}

fn check_component(comp: &Component, expected_name: &str) -> Result<()> {
    let path = comp.recipe_path.display();
    if comp.name() != expected_name {
        bail!(
            "{path}: component.name = {:?}, expected {expected_name:?} (the file name)",
            comp.name()
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    for spec in comp.file.inputs.iter().chain(&comp.file.outputs) {
        if !seen.insert(spec.name.get_ref().clone()) {
            bail!(
                "{}: tensor `{}` is declared twice",
                comp.where_tensor(spec),
                spec.name.get_ref()
            );
        }
        if spec.shape.contains(&0) {
            bail!(
                "{}: tensor `{}` has a zero dimension in {:?}",
                comp.where_tensor(spec),
                spec.name.get_ref(),
                spec.shape
            );
        }
    }
    let cv = &comp.file.convert;
    if ![16, 32].contains(&cv.float_bitwidth) {
        bail!(
            "{path}: convert.float_bitwidth must be 16 or 32, got {}",
            cv.float_bitwidth
        );
    }
    let ctx = &comp.file.context;
    if !(1..=3).contains(&ctx.optimization_level) {
        bail!(
            "{path}: context.optimization_level must be 1, 2 or 3, got {}",
            ctx.optimization_level
        );
    }
    let outputs: Vec<&str> = comp
        .file
        .outputs
        .iter()
        .map(|o| o.name.get_ref().as_str())
        .collect();
    check_overrides(
        &comp.recipe_path,
        &comp.file.parity.overrides,
        Some(&outputs),
    )
}

fn check_host(path: &Path, model: &ModelSection, host: &HostSection) -> Result<()> {
    let p = path.display();
    let roles = [&host.vision, &host.action_context, &host.action_step]
        .into_iter()
        .chain(&host.llm_splits);
    for role in roles {
        if !model.components.contains(role) {
            bail!(
                "{p}: [host] names component `{role}`, which is not among [model] components {:?}",
                model.components
            );
        }
    }
    if host.llm_splits.is_empty() || host.timesteps.is_empty() {
        bail!("{p}: [host] needs at least one entry in llm_splits and in timesteps");
    }
    if host.norm_mode != "q01_q99" {
        bail!(
            "{p}: [host] norm_mode {:?} is not supported (known: \"q01_q99\")",
            host.norm_mode
        );
    }
    if host.gripper_dim.is_some_and(|g| g >= host.action_dim_used) {
        bail!(
            "{p}: [host] gripper_dim must be below action_dim_used ({})",
            host.action_dim_used
        );
    }
    for key in host.gate.actions_max_abs.keys() {
        if !["ort", "cpu", "htp"].contains(&key.as_str()) {
            bail!("{p}: [host.gate] actions_max_abs key {key:?} is not one of ort, cpu, htp");
        }
    }
    Ok(())
}

fn check_overrides(
    path: &Path,
    overrides: &[GateOverride],
    outputs: Option<&[&str]>,
) -> Result<()> {
    for o in overrides {
        if o.reason.trim().len() < 10 {
            bail!(
                "{}: a parity override needs a written `reason` (got {:?})",
                path.display(),
                o.reason
            );
        }
        if let Some(b) = &o.backend
            && !["ort", "cpu", "htp"].contains(&b.as_str())
        {
            bail!(
                "{}: parity override backend {b:?} is not one of ort, cpu, htp",
                path.display()
            );
        }
        if let (Some(out), Some(outputs)) = (&o.output, outputs)
            && !outputs.contains(&out.as_str())
        {
            bail!(
                "{}: parity override names output {out:?}, which is not among {outputs:?}",
                path.display()
            );
        }
        if !(o.min_cosine > -1.0 && o.min_cosine <= 1.0) {
            bail!(
                "{}: min_cosine {} is outside (-1, 1]",
                path.display(),
                o.min_cosine
            );
        }
    }
    Ok(())
}

/// Files a component needs that are absent, with the key that names each.
pub fn missing_files(root: &Path, comp: &Component) -> Vec<PathBuf> {
    [&comp.file.component.onnx, &comp.file.golden.file]
        .into_iter()
        .filter(|p| !root.join(p).is_file())
        .cloned()
        .collect()
}

/// Checks that the golden file holds every declared tensor with the declared shape and dtype.
pub fn check_golden(
    comp: &Component,
    golden: &BTreeMap<String, crate::tensor::Tensor>,
    golden_path: &Path,
) -> Result<()> {
    for spec in comp.file.inputs.iter().chain(&comp.file.outputs) {
        let name = spec.name.get_ref();
        let Some(t) = golden.get(&spec.golden_key) else {
            let keys: Vec<&String> = golden.keys().collect();
            bail!(
                "{}: tensor `{name}` maps to golden key `{}`, which {} does not hold (keys: {keys:?})",
                comp.where_tensor(spec),
                spec.golden_key,
                golden_path.display()
            );
        };
        if t.shape() != spec.shape || t.dtype() != spec.dtype {
            bail!(
                "{}: tensor `{name}` is {} {:?} in the recipe but {} {:?} in {} (key `{}`)",
                comp.where_tensor(spec),
                spec.dtype,
                spec.shape,
                t.dtype(),
                t.shape(),
                golden_path.display(),
                spec.golden_key
            );
        }
    }
    Ok(())
}

/// Checks the recipe's I/O contract against the ONNX graph as the session reports it.
pub fn check_graph_contract(
    comp: &Component,
    graph_inputs: &[(String, Option<DType>, Vec<i64>)],
    graph_outputs: &[(String, Option<DType>, Vec<i64>)],
) -> Result<()> {
    for (kind, specs, graph) in [
        ("input", &comp.file.inputs, graph_inputs),
        ("output", &comp.file.outputs, graph_outputs),
    ] {
        let graph_names: Vec<&str> = graph.iter().map(|g| g.0.as_str()).collect();
        for spec in specs {
            let name = spec.name.get_ref();
            let Some((_, dtype, shape)) = graph.iter().find(|g| &g.0 == name) else {
                bail!(
                    "{}: {kind} `{name}` is not a graph {kind} of {} (graph {kind}s: {graph_names:?})",
                    comp.where_tensor(spec),
                    comp.file.component.onnx.display()
                );
            };
            let want: Vec<i64> = spec.shape.iter().map(|&d| d as i64).collect();
            if *shape != want || *dtype != Some(spec.dtype) {
                bail!(
                    "{}: {kind} `{name}` is {} {:?} in the recipe but {} {:?} in {}",
                    comp.where_tensor(spec),
                    spec.dtype,
                    spec.shape,
                    dtype.map_or("unsupported".into(), |d| d.to_string()),
                    shape,
                    comp.file.component.onnx.display()
                );
            }
        }
        for g in graph {
            if !specs.iter().any(|s| s.name.get_ref() == &g.0) {
                bail!(
                    "{}: graph {kind} `{}` of {} is not declared in the recipe",
                    comp.recipe_path.display(),
                    g.0,
                    comp.file.component.onnx.display()
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[component]
name = "c"
onnx = "onnx/m/c.onnx"
[golden]
file = "golden/m/c_io.npz"
[[inputs]]
name = "x"
shape = [1, 4]
dtype = "f32"
golden_key = "x"
[[outputs]]
name = "y"
shape = [1, 4]
dtype = "f32"
golden_key = "y"
[convert]
float_bitwidth = 32
preserve_io_datatype = true
[context]
graph_name = "c"
optimization_level = 3
fp16 = true
"#;

    #[test]
    fn unknown_key_names_file_and_line() {
        let text = GOOD.replace("fp16 = true", "fp16 = true\nturbo = 1");
        let err = parse_toml::<ComponentFile>(Path::new("r/c.toml"), &text)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("r/c.toml:24:"), "{err}");
        assert!(err.contains("turbo"), "{err}");
    }

    #[test]
    fn wrong_type_names_the_line() {
        let text = GOOD.replace("optimization_level = 3", "optimization_level = \"high\"");
        let err = parse_toml::<ComponentFile>(Path::new("c.toml"), &text)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("c.toml:22:"), "{err}");
    }

    #[test]
    fn override_without_reason_is_refused() {
        let o = GateOverride {
            output: None,
            backend: None,
            min_cosine: 0.9,
            reason: "".into(),
        };
        assert!(check_overrides(Path::new("m.toml"), &[o], None).is_err());
    }

    #[test]
    fn most_specific_override_wins() {
        let text = format!(
            "{GOOD}\n[parity]\n[[parity.override]]\nbackend = \"htp\"\nmin_cosine = 0.999\nreason = \"fp16 on the HTP\"\n\
             [[parity.override]]\noutput = \"y\"\nbackend = \"htp\"\nmin_cosine = 0.99\nreason = \"y is the worst output\"\n"
        );
        let file: ComponentFile = parse_toml(Path::new("c.toml"), &text).unwrap();
        let comp = Component {
            recipe_path: "c.toml".into(),
            recipe_text: text,
            file,
        };
        let model: ModelFile = toml::from_str(
            "[model]\nname='m'\nfamily='f'\ncomponents=['c']\nseq_len=1\n[target]\nqairt='2.47.0'\nsoc=77\nhtp_arch=73\n",
        )
        .unwrap();
        assert_eq!(comp.gate(&model, "y", "htp").min_cosine, 0.99);
        assert_eq!(comp.gate(&model, "y", "cpu").min_cosine, DEFAULT_MIN_COSINE);
        assert!(comp.gate(&model, "y", "cpu").waiver.is_none());
    }
}
