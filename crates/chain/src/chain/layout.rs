//! The chain's shape as the recipes give it: LLM layers per split, the Euler steps, and what
//! happens to each action dim. Shown at the top of every run report, because a model added by
//! recipe alone (uneven splits, another step count, its own de-normalisation) is checked there
//! first: the report says what was run, not what the tiny model would have run.

use serde::{Deserialize, Serialize};

use xtask_recipe::recipe::host::DimMode;
use xtask_recipe::recipe::tensor_names as names;
use xtask_recipe::recipe::{HostSection, Model};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChainLayout {
    pub llm_splits: Vec<SplitLayers>,
    /// Sum of the splits' layers (None when a split's recipe declares no `keys` output).
    pub llm_layers: Option<usize>,
    /// One Euler step per entry.
    pub timesteps: Vec<f32>,
    /// Per used action dim: `clip+denorm`, `clip`, `denorm` or `pass`.
    pub denorm: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SplitLayers {
    pub component: String,
    /// Layers of the split: axis 0 of its `keys` output in its recipe.
    pub layers: Option<usize>,
}

impl ChainLayout {
    pub fn of(model: &Model, host: &HostSection, denorm: &[DimMode]) -> Self {
        let layers_of = |split: &str| {
            let comp = model.components.iter().find(|c| c.name() == split)?;
            let keys = comp
                .file
                .outputs
                .iter()
                .find(|o| o.name.get_ref() == names::KEYS)?;
            keys.shape.first().copied()
        };
        let llm_splits: Vec<SplitLayers> = host
            .llm_splits
            .iter()
            .map(|s| SplitLayers {
                component: s.clone(),
                layers: layers_of(s),
            })
            .collect();
        ChainLayout {
            llm_layers: llm_splits.iter().map(|s| s.layers).sum(),
            llm_splits,
            timesteps: host.timesteps.clone(),
            denorm: denorm.iter().map(|m| m.name().to_string()).collect(),
        }
    }

    /// One line: "4 LLM splits of 1+3+2+2 = 8 layers · 3 Euler steps (t = 0, 0.33333334,
    /// 0.6666667) · action dims 0..3 clip+denorm, 4 denorm, 5 clip, 6 pass".
    pub fn summary(&self) -> String {
        let show = |l: Option<usize>| l.map_or("?".to_string(), |l| l.to_string());
        let per_split: Vec<String> = self.llm_splits.iter().map(|s| show(s.layers)).collect();
        let times: Vec<String> = self.timesteps.iter().map(|t| t.to_string()).collect();
        format!(
            "{} LLM splits of {} = {} layers · {} Euler steps (t = {}) · action dims {}",
            self.llm_splits.len(),
            per_split.join("+"),
            show(self.llm_layers),
            self.timesteps.len(),
            times.join(", "),
            runs_of(&self.denorm).join(", ")
        )
    }
}

/// Consecutive dims with the same mode as one entry: "0..3 clip+denorm".
fn runs_of(modes: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = 0;
    for end in 1..=modes.len() {
        if end == modes.len() || modes[end] != modes[start] {
            let dims = match end - 1 - start {
                0 => start.to_string(),
                _ => format!("{start}..{}", end - 1),
            };
            out.push(format!("{dims} {}", modes[start]));
            start = end;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_says_splits_steps_and_dims() {
        let layout = ChainLayout {
            llm_splits: [1, 3, 2]
                .iter()
                .enumerate()
                .map(|(i, l)| SplitLayers {
                    component: format!("s{i}"),
                    layers: Some(*l),
                })
                .collect(),
            llm_layers: Some(6),
            timesteps: vec![0.0, 0.5],
            denorm: ["clip+denorm", "clip+denorm", "clip", "pass", "pass"]
                .map(String::from)
                .to_vec(),
        };
        assert_eq!(
            layout.summary(),
            "3 LLM splits of 1+3+2 = 6 layers · 2 Euler steps (t = 0, 0.5) · action dims 0..1 clip+denorm, 2 clip, 3..4 pass"
        );
    }
}
