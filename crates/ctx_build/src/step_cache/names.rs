//! The names and paths of the build that stored an entry, and their mapping onto the build
//! that restores it. Keys hold content only, so an entry stored by model `a` at
//! `ctx/a/vision.dlc` serves model `b` whose step writes `ctx/b/vision.dlc`: its files are
//! placed by role (the i-th output of the step) and every path its record names is rewritten.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who a step is, by name: everything about a build that is not content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepNames {
    pub model: String,
    pub component: String,
    /// The step's record name (`convert`, `cpu_parity`, `context@soc77`).
    pub step: String,
    /// The step's input files, project-relative, in the plan's order.
    pub inputs: Vec<String>,
    /// The step's outputs, project-relative, in the plan's order (their roles).
    pub outputs: Vec<String>,
}

impl StepNames {
    /// The (old, new) strings that map `from`'s names onto `self`'s: whole paths first
    /// (outputs, then inputs when both lists have the same length), then the model's folders.
    fn pairs(&self, from: &StepNames) -> Vec<(String, String)> {
        let mut pairs: Vec<(String, String)> = from
            .outputs
            .iter()
            .cloned()
            .zip(self.outputs.iter().cloned())
            .collect();
        if from.inputs.len() == self.inputs.len() {
            pairs.extend(from.inputs.iter().cloned().zip(self.inputs.iter().cloned()));
        }
        pairs.retain(|(a, b)| a != b);
        pairs
    }

    /// `value` (a record, as JSON) with `from`'s paths replaced by `self`'s: whole strings
    /// equal to a path, and strings under `ctx/<from model>/` moved to `ctx/<model>/`.
    pub fn map_onto(&self, from: &StepNames, value: Value) -> Value {
        let pairs = self.pairs(from);
        let prefix = (
            format!("ctx/{}/", from.model),
            format!("ctx/{}/", self.model),
        );
        map_strings(value, &|s: &str| {
            if let Some((_, new)) = pairs.iter().find(|(old, _)| old == s) {
                return new.clone();
            }
            match s.strip_prefix(&prefix.0) {
                Some(rest) if prefix.0 != prefix.1 => format!("{}{rest}", prefix.1),
                _ => s.to_string(),
            }
        })
    }
}

fn map_strings(value: Value, f: &dyn Fn(&str) -> String) -> Value {
    match value {
        Value::String(s) => Value::String(f(&s)),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| map_strings(v, f)).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (f(&k), map_strings(v, f)))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(model: &str, onnx: &str) -> StepNames {
        StepNames {
            model: model.into(),
            component: "vision".into(),
            step: "convert".into(),
            inputs: vec![format!("onnx/{onnx}/vision.onnx")],
            outputs: vec![format!("ctx/{model}/vision.candidate.dlc")],
        }
    }

    #[test]
    fn paths_of_the_storing_build_become_the_restoring_builds() {
        let a = names("a", "shared-a");
        let b = names("b", "shared-b");
        let record = serde_json::json!({
            "outputs": {"ctx/a/vision.candidate.dlc": "00"},
            "facts": {"qnn_onnx": {"path": "onnx/shared-a/vision.onnx"},
                      "log": "ctx/a/logs/x.txt", "other": "ctx/ab/y"},
        });
        let mapped = b.map_onto(&a, record);
        assert_eq!(
            mapped,
            serde_json::json!({
                "outputs": {"ctx/b/vision.candidate.dlc": "00"},
                "facts": {"qnn_onnx": {"path": "onnx/shared-b/vision.onnx"},
                          "log": "ctx/b/logs/x.txt", "other": "ctx/ab/y"},
            })
        );
        // The same names map onto themselves unchanged.
        let same = a.map_onto(&a, serde_json::json!({"p": "ctx/a/x"}));
        assert_eq!(same, serde_json::json!({"p": "ctx/a/x"}));
    }
}
