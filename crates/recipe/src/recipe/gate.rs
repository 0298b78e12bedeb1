//! The thresholds a recipe sets for one tensor. The recipe says them (`[parity]`, overrides);
//! `parity::gate` judges by them. The type lives here so that the recipe layer does not import
//! the parity engine.

use serde::{Deserialize, Deserializer, Serialize};

/// The thresholds one tensor is judged by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    pub min_cosine: f64,
    /// Largest accepted | |y| / |golden| - 1 | (the scale gate); NaN in reports written before
    /// it existed.
    #[serde(default = "unknown", deserialize_with = "f64_or_nan")]
    pub max_norm_ratio_error: f64,
    pub atol: f64,
    pub rtol: f64,
    /// The written reason of an override, when one applies.
    pub waiver: Option<String>,
    /// Where the gate comes from, as reports print it: the recipe file and table
    /// (`recipes/tiny/vision.toml [parity]`), an override with what it lowered, a precision's
    /// default, the chain's `[host.gate]`. Empty in reports written before it existed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// The cosine gate the override replaced (the component's `[parity] min_cosine`); absent
    /// without an override and in reports written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced_min_cosine: Option<f64>,
}

impl Gate {
    /// What an override did to the cosine gate, as every report says it: `gate lowered from
    /// 0.9999 to 0.999` (or raised; `gate 0.999 set by an override` when the gate it replaced
    /// is not recorded or the same). None without an override.
    pub fn override_words(&self) -> Option<String> {
        self.waiver.as_ref()?;
        let to = self.min_cosine;
        Some(match self.replaced_min_cosine {
            Some(from) if from > to => format!("gate lowered from {from} to {to}"),
            Some(from) if from < to => format!("gate raised from {from} to {to}"),
            _ => format!("gate {to} set by an override"),
        })
    }
}

fn unknown() -> f64 {
    f64::NAN
}

/// JSON has no NaN: serde_json writes it as `null`, so `null` reads back as NaN (shared by
/// every report with figures that can be NaN).
pub fn f64_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// `f64_or_nan` for a list (per-layer cosines can be NaN, written as `null`).
pub fn vec_f64_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    Ok(Vec::<Option<f64>>::deserialize(d)?
        .into_iter()
        .map(|v| v.unwrap_or(f64::NAN))
        .collect())
}

/// `f64_or_nan` for the values of a map (per-output cosines).
pub fn map_f64_or_nan<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<std::collections::BTreeMap<String, f64>, D::Error> {
    Ok(
        std::collections::BTreeMap::<String, Option<f64>>::deserialize(d)?
            .into_iter()
            .map(|(k, v)| (k, v.unwrap_or(f64::NAN)))
            .collect(),
    )
}

/// `f64_or_nan` for the lists of a map (per-component load times).
pub fn map_vec_f64_or_nan<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<std::collections::BTreeMap<String, Vec<f64>>, D::Error> {
    Ok(
        std::collections::BTreeMap::<String, Vec<Option<f64>>>::deserialize(d)?
            .into_iter()
            .map(|(k, v)| (k, v.into_iter().map(|x| x.unwrap_or(f64::NAN)).collect()))
            .collect(),
    )
}
