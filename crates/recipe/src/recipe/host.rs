//! `model.toml [host]` beyond component roles: how each action dimension is de-normalised
//! (`[host.denorm]`, or the older `gripper_dim`), which trace tensor names differ from ours
//! (`[host.trace_keys]`), and the checks of the whole section. A new model of the family is
//! described here, by recipe, not by code: every error names file, line and key.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use super::validate::{
    at, at_entry, check_cosine, check_norm_ratio_map, check_relative, check_tolerance,
};
use super::{HostSection, ModelSection};

/// The `norm_mode` values the chain implements.
pub const NORM_MODES: [&str; 1] = ["q01_q99"];

/// The trace tensors the chain takes as its inputs, by our name.
pub const HOST_INPUT_KEYS: [&str; 8] = [
    "prompt_embeds",
    "image_token_positions",
    "attention_bias",
    "encoder_attention_mask",
    "action_dim_is_pad",
    "initial_noise",
    "q01",
    "q99",
];

/// The trace tensors the chain compares against (references), by our name.
pub const REFERENCE_KEYS: [&str; 4] = ["hidden_states", "keys", "values", "actions"];

/// Every trace tensor the chain reads, by our name; `[host.trace_keys]` may map each to the
/// name a trace file uses. `STEP_OUT` stands for one tensor per Euler step.
pub fn trace_keys() -> impl Iterator<Item = &'static str> {
    HOST_INPUT_KEYS.into_iter().chain(REFERENCE_KEYS)
}

/// Our name of Euler step `{i}`'s output trajectory (the mapped name must hold `{i}` too).
pub const STEP_OUT: &str = "trajectory_step{i}_out";

/// A per-step name template (`{i}`, as in `STEP_OUT`) for Euler step `i`.
pub fn step_name(template: &str, i: usize) -> String {
    template.replace("{i}", &i.to_string())
}

/// `[host.denorm]`: the mode of every used action dim unless `dims` names it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DenormSection {
    #[serde(default = "default_mode")]
    pub default: String,
    /// Action dim (as written, e.g. `6`) → mode.
    #[serde(default)]
    pub dims: BTreeMap<String, String>,
}

fn default_mode() -> String {
    DimMode::ClipDenorm.name().into()
}

/// What happens to one action dimension after the last Euler step: whether it is clipped to
/// [-1, 1], and whether it is then mapped from [-1, 1] to [q01, q99].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DimMode {
    ClipDenorm,
    /// Clipped, not de-normalised (a gripper whose command is in [-1, 1]).
    Clip,
    /// De-normalised without clipping (extrapolates outside [q01, q99]).
    Denorm,
    /// Untouched.
    Pass,
}

impl DimMode {
    pub const ALL: [DimMode; 4] = [
        DimMode::ClipDenorm,
        DimMode::Clip,
        DimMode::Denorm,
        DimMode::Pass,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DimMode::ClipDenorm => "clip+denorm",
            DimMode::Clip => "clip",
            DimMode::Denorm => "denorm",
            DimMode::Pass => "pass",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == s)
    }

    pub fn clips(self) -> bool {
        matches!(self, DimMode::ClipDenorm | DimMode::Clip)
    }

    pub fn denormalizes(self) -> bool {
        matches!(self, DimMode::ClipDenorm | DimMode::Denorm)
    }
}

/// A host-section problem and the key it belongs to (placed at file:line by the loader). The
/// message starts with `= value …` or `: …`, to follow "table.key".
struct Misplaced {
    table: &'static str,
    key: String,
    message: String,
}

impl Misplaced {
    fn at(&self, where_: String) -> String {
        let sep = if self.message.starts_with(':') {
            ""
        } else {
            " "
        };
        format!("{where_}{sep}{}", self.message)
    }
}

fn misplaced<T>(table: &'static str, key: &str, message: String) -> Result<T, Misplaced> {
    Err(Misplaced {
        table,
        key: key.into(),
        message,
    })
}

impl HostSection {
    /// The mode of each used action dim (`action_dim_used` entries), from `[host.denorm]` or
    /// else `gripper_dim` (that dim passes, every other is clipped and de-normalised).
    pub fn denorm_modes(&self) -> Result<Vec<DimMode>> {
        self.resolve_denorm()
            .map_err(|m| anyhow::anyhow!(m.at(format!("{}.{}", m.table, m.key))))
    }

    fn resolve_denorm(&self) -> Result<Vec<DimMode>, Misplaced> {
        let used = self.action_dim_used;
        let Some(spec) = &self.denorm else {
            if let Some(g) = self.gripper_dim.filter(|g| *g >= used) {
                return misplaced(
                    "host",
                    "gripper_dim",
                    format!("= {g} must be below action_dim_used ({used})"),
                );
            }
            return Ok((0..used)
                .map(|d| match Some(d) == self.gripper_dim {
                    true => DimMode::Pass,
                    false => DimMode::ClipDenorm,
                })
                .collect());
        };
        if let Some(g) = self.gripper_dim {
            return misplaced(
                "host",
                "gripper_dim",
                format!(
                    "= {g} and [host.denorm] both say how dims are de-normalised: drop gripper_dim and write the gripper in [host.denorm], e.g. dims = {{ {g} = \"pass\" }}"
                ),
            );
        }
        let mode = |table, key: &str, value: &str| {
            DimMode::parse(value).ok_or_else(|| Misplaced {
                table,
                key: key.into(),
                message: format!(
                    "= {value:?} is not a de-normalisation mode (known: \"{}\")",
                    DimMode::ALL.map(DimMode::name).join("\", \"")
                ),
            })
        };
        let mut modes = vec![mode("host.denorm", "default", &spec.default)?; used];
        let mut seen = BTreeMap::new();
        for (key, value) in &spec.dims {
            let dim = key
                .bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| key.parse::<usize>().ok())
                .flatten();
            let Some(dim) = dim.filter(|d| *d < used) else {
                return misplaced(
                    "host.denorm.dims",
                    key,
                    format!(
                        ": not a used action dim: dims are numbered 0..{} (action_dim_used = {used})",
                        used.saturating_sub(1)
                    ),
                );
            };
            if let Some(first) = seen.insert(dim, key) {
                return misplaced(
                    "host.denorm.dims",
                    key,
                    format!(": dim {dim} is given twice ({first:?} and {key:?})"),
                );
            }
            modes[dim] = mode("host.denorm.dims", key, value)?;
        }
        Ok(modes)
    }

    /// The trace file's name of our trace tensor `ours` (for `STEP_OUT`, of step `step`).
    pub fn trace_key(&self, ours: &str, step: Option<usize>) -> String {
        let name = self.trace_keys.get(ours).map_or(ours, String::as_str);
        match step {
            Some(i) => step_name(name, i),
            None => name.to_string(),
        }
    }

    fn check_trace_keys(&self) -> Result<(), Misplaced> {
        for (ours, theirs) in &self.trace_keys {
            let known = trace_keys().any(|k| k == ours) || ours == STEP_OUT;
            if !known {
                let hint = if ours.starts_with("trajectory_step") {
                    format!(
                        " (the Euler steps' outputs are mapped together: \"{STEP_OUT}\" = \"name_with_{{i}}\")"
                    )
                } else {
                    String::new()
                };
                return misplaced(
                    "host.trace_keys",
                    ours,
                    format!(
                        ": not a trace tensor the chain reads{hint}; known: {}, \"{STEP_OUT}\"",
                        trace_keys().collect::<Vec<_>>().join(", ")
                    ),
                );
            }
            if theirs.trim().is_empty() {
                return misplaced(
                    "host.trace_keys",
                    ours,
                    format!("= {theirs:?}: a trace tensor needs a name"),
                );
            }
            if ours == STEP_OUT && !theirs.contains("{i}") {
                return misplaced(
                    "host.trace_keys",
                    ours,
                    format!(
                        "= {theirs:?} has no `{{i}}`: one name cannot hold every Euler step's output"
                    ),
                );
            }
        }
        Ok(())
    }
}

/// Checks `[host]`: roles name listed components, steps and splits exist, the norm mode is
/// implemented, every dim's de-normalisation and every trace key mapping is valid, gates are
/// sane. Errors read "file:line: key ...".
pub(super) fn check_host(
    path: &Path,
    text: &str,
    model: &ModelSection,
    host: &HostSection,
) -> Result<()> {
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
    if let Some(t) = host.timesteps.iter().find(|t| !t.is_finite()) {
        bail!(
            "{} holds {t}: every timestep must be a finite number",
            at(path, text, "host", "timesteps", 0)
        );
    }
    check_timesteps(path, text, &host.timesteps)?;
    check_roles_once(path, text, host)?;
    if !NORM_MODES.contains(&host.norm_mode.as_str()) {
        bail!(
            "{} = {:?} is not implemented (implemented: {})",
            at(path, text, "host", "norm_mode", 0),
            host.norm_mode,
            NORM_MODES.map(|m| format!("{m:?}")).join(", ")
        );
    }
    host.resolve_denorm()
        .and_then(|_| host.check_trace_keys())
        .map_err(|m| anyhow::anyhow!(m.at(at_entry(path, text, m.table, &m.key))))?;
    let gate = &host.gate;
    check_cosine(
        &at(path, text, "host.gate", "min_cosine", 0),
        gate.min_cosine,
    )?;
    check_tolerance(&at(path, text, "host.gate", "atol", 0), gate.atol).map_err(|e| {
        anyhow::anyhow!("{e} ([host.gate] atol must be a finite number in [0, 1000])")
    })?;
    check_relative(&at(path, text, "host.gate", "rtol", 0), gate.rtol)
        .map_err(|e| anyhow::anyhow!("{e} ([host.gate] rtol must be a finite number in [0, 1])"))?;
    check_norm_ratio_map(
        path,
        text,
        "host.gate.max_norm_ratio_error",
        &gate.max_norm_ratio_error,
    )?;
    for (key, value) in &host.gate.actions_max_abs {
        if let Err(e) = key.parse::<xtask_base::vocab::BackendKind>() {
            bail!("{p}: [host.gate] actions_max_abs key {e}");
        }
        check_tolerance(
            &at_entry(path, text, "host.gate.actions_max_abs", key),
            *value,
        )?;
    }
    Ok(())
}

/// The flow's timesteps: each in [0, 1) (t = 1 is the data end, never a step's start) and
/// strictly increasing (each Euler step moves forward by `t[i+1] - t[i]`).
fn check_timesteps(path: &Path, text: &str, timesteps: &[f32]) -> Result<()> {
    let where_ = || at(path, text, "host", "timesteps", 0);
    if let Some((i, t)) = timesteps
        .iter()
        .enumerate()
        .find(|(_, t)| !(0.0..1.0).contains(*t))
    {
        bail!(
            "{} = {timesteps:?}: timesteps[{i}] = {t} is outside [0, 1)",
            where_()
        );
    }
    if let Some(i) = (1..timesteps.len()).find(|&i| timesteps[i] <= timesteps[i - 1]) {
        bail!(
            "{} = {timesteps:?}: timesteps[{i}] = {} does not come after timesteps[{}] = {}: they must increase strictly",
            where_(),
            timesteps[i],
            i - 1,
            timesteps[i - 1]
        );
    }
    Ok(())
}

/// Each component plays one role in the chain: an LLM split listed twice, or a component in
/// two roles, would run twice.
fn check_roles_once(path: &Path, text: &str, host: &HostSection) -> Result<()> {
    let roles = [
        ("vision", &host.vision),
        ("action_context", &host.action_context),
        ("action_step", &host.action_step),
    ]
    .into_iter()
    .chain(host.llm_splits.iter().map(|s| ("llm_splits", s)));
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for (key, comp) in roles {
        if let Some(first) = seen.insert(comp, key) {
            let twice = match first == key {
                true => format!("lists component `{comp}` twice"),
                false => format!("names component `{comp}` in {first} and in {key}"),
            };
            bail!(
                "{} {twice}: each component plays one role in the chain, once",
                at(path, text, "host", key, 0)
            );
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "host_tests.rs"]
mod tests;
