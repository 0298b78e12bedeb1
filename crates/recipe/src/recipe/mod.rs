//! Recipes: one `model.toml` per model and one `<component>.toml` per component, the single
//! source of every name, path, shape, option and gate. The schema lives in `schema`, loading
//! and validation in `load`, the checks against golden files and graphs in `contract`; every
//! item is re-exported here, so callers write `crate::recipe::...`.

mod contract;
mod estimate;
pub mod host;
pub mod hub_names;
pub mod limits;
mod load;
pub mod missing;
pub mod names;
pub mod paths;
pub mod placeholder;
mod schema;
pub mod target;
pub mod validate;

use std::path::PathBuf;

use xtask_base::vocab::BackendKind;

pub mod gate;
pub mod quantize;
pub mod tensor_names;
pub use contract::{check_golden, check_graph_contract, check_rewrites_match};
pub use estimate::{ChainEstimate, ComponentEstimate, MeasuredAtRealSize};
pub use gate::Gate;
pub use host::{DenormSection, DimMode};
pub use load::{known_models, load_model, missing_files, parse_toml};
pub use schema::*;

/// A model's recipes, loaded and checked for internal consistency (not yet against files).
#[derive(Debug, Clone)]
pub struct Model {
    pub file: ModelFile,
    pub components: Vec<Component>,
    /// `recipes/<model>/model.toml`, relative to the project root, and its text: errors
    /// found after loading (a trace key the trace lacks) still name its file and line.
    pub recipe_path: PathBuf,
    pub recipe_text: String,
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

    /// The precision the component is built at on the HTP (`[quantize] precision`, else fp16).
    pub fn precision(&self) -> xtask_base::vocab::Precision {
        self.file
            .quantize
            .as_ref()
            .map_or(xtask_base::vocab::Precision::Fp16, |q| q.precision)
    }

    /// The gate for one output on one backend: the most specific override wins. A quantized
    /// component on a QNN backend (its QDQ simulation, its quantized binary) is held to its
    /// precision's gate against the float golden instead (`[quantize.gates.<precision>]`, else
    /// the measured default); the fp16 overrides do not apply to it. Every command that judges
    /// a component (`parity`, `run`, `build-ctx`, `package`, `verify`, the card) asks this one
    /// function, and the gate says where it came from (`source`).
    pub fn gate(&self, model: &ModelFile, output: &str, backend: BackendKind) -> Gate {
        let recipe = self.recipe_path.display();
        if let Some(q) = &self.file.quantize
            && q.precision.is_quantized()
            && backend.is_qnn()
        {
            let (min_cosine, max_norm_ratio_error) = q.gate(q.precision);
            let p = q.precision;
            let (default_cosine, _) = quantize::default_gate(p);
            let source = match q.gates.get(p.label()) {
                Some(_) if min_cosine < default_cosine => format!(
                    "{recipe} [quantize.gates.{p}], lowered from {default_cosine} to {min_cosine}"
                ),
                Some(_) => format!("{recipe} [quantize.gates.{p}]"),
                None => format!("the {p} default, docs/quantization.md"),
            };
            return Gate {
                min_cosine,
                max_norm_ratio_error,
                atol: self.file.parity.atol,
                rtol: self.file.parity.rtol,
                waiver: q.gate_reason(p),
                source,
                replaced_min_cosine: q.gate_reason(p).map(|_| default_cosine),
            };
        }
        let all = self
            .file
            .parity
            .overrides
            .iter()
            .map(|o| (o, recipe.to_string()))
            .chain(
                model
                    .parity
                    .overrides
                    .iter()
                    .map(|o| (o, format!("recipes/{}/model.toml", model.model.name))),
            );
        let matching = all.filter(|(o, _)| {
            o.output.as_deref().is_none_or(|x| x == output)
                && o.backend.as_deref().is_none_or(|x| x == backend.label())
        });
        let best = matching
            .max_by_key(|(o, _)| u8::from(o.output.is_some()) * 2 + u8::from(o.backend.is_some()));
        let scale = norm_ratio_bound(&self.file.parity.max_norm_ratio_error, backend);
        match best {
            Some((o, file)) => Gate {
                min_cosine: o.min_cosine,
                max_norm_ratio_error: o.max_norm_ratio_error.unwrap_or(scale),
                atol: self.file.parity.atol,
                rtol: self.file.parity.rtol,
                waiver: Some(o.reason.clone()),
                source: format!(
                    "{file} [[parity.override]], lowered from {} to {}",
                    self.file.parity.min_cosine, o.min_cosine
                ),
                replaced_min_cosine: Some(self.file.parity.min_cosine),
            },
            None => Gate {
                min_cosine: self.file.parity.min_cosine,
                max_norm_ratio_error: scale,
                atol: self.file.parity.atol,
                rtol: self.file.parity.rtol,
                waiver: None,
                source: format!("{recipe} [parity]"),
                replaced_min_cosine: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) const GOOD: &str = r#"
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
    fn most_specific_override_wins() {
        let text = format!(
            "{GOOD}\n[parity]\n[[parity.override]]\nbackend = \"htp\"\nmin_cosine = 0.999\nreason = \"fp16 on the HTP\"\n\
             [[parity.override]]\noutput = \"y\"\nbackend = \"htp\"\nmin_cosine = 0.99\nreason = \"y is the worst output\"\n"
        );
        let file: ComponentFile = parse_toml(std::path::Path::new("c.toml"), &text).unwrap();
        let comp = Component {
            recipe_path: "c.toml".into(),
            recipe_text: text,
            file,
        };
        let model: ModelFile = toml::from_str(
            "[model]\nname='m'\nfamily='molmoact2'\ncomponents=['c']\nseq_len=1\n[target]\nqairt='2.47.0'\nsoc=77\nhtp_arch=73\n",
        )
        .unwrap();
        assert_eq!(comp.gate(&model, "y", BackendKind::Htp).min_cosine, 0.99);
        assert_eq!(
            comp.gate(&model, "y", BackendKind::Cpu).min_cosine,
            DEFAULT_MIN_COSINE
        );
        assert!(comp.gate(&model, "y", BackendKind::Cpu).waiver.is_none());
        // Reports say what the override did to the recipe's gate, not that it was "waived".
        assert_eq!(
            comp.gate(&model, "y", BackendKind::Htp)
                .override_words()
                .as_deref(),
            Some(format!("gate lowered from {DEFAULT_MIN_COSINE} to 0.99").as_str())
        );
        assert_eq!(
            comp.gate(&model, "y", BackendKind::Cpu).override_words(),
            None
        );
    }
}
