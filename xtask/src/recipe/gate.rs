//! The thresholds a recipe sets for one tensor. The recipe says them (`[parity]`, overrides);
//! `parity::gate` judges by them. The type lives here so that the recipe layer does not import
//! the parity engine.

use serde::{Deserialize, Serialize};

/// The thresholds one tensor is judged by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    pub min_cosine: f64,
    pub atol: f64,
    pub rtol: f64,
    /// The written reason of an override, when one applies.
    pub waiver: Option<String>,
}
