//! One measured tensor of a bisect: the report holds them and its tables render them.

use serde::{Deserialize, Serialize};

use xtask_recipe::recipe::gate::f64_or_nan;

/// One measured tensor, in topological order (NaN figures are written as null).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TensorPoint {
    pub index: usize,
    pub tensor: String,
    pub node: String,
    pub op_type: String,
    #[serde(deserialize_with = "f64_or_nan")]
    pub cosine: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub max_abs_err: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub rel_l2_err: f64,
}
