//! Family-wide tensor names of the MolmoAct2 I/O contract (the model card's table).
//! They live with the recipes (the single source of names) so every layer can use them.

pub const PIXEL_VALUES: &str = "pixel_values";
pub const IMAGE_EMBEDS: &str = "image_embeds";
pub const HIDDEN_STATES: &str = "hidden_states";
pub const ATTENTION_BIAS: &str = "attention_bias";
pub const HIDDEN_OUT: &str = "hidden_out";
pub const KEYS: &str = "keys";
pub const VALUES: &str = "values";
pub const K_CTX: &str = "k_ctx";
pub const V_CTX: &str = "v_ctx";
pub const TRAJECTORY: &str = "trajectory";
pub const TIMESTEP: &str = "timestep";
pub const ENCODER_MASK: &str = "encoder_attention_mask";
pub const ACTION_DIM_IS_PAD: &str = "action_dim_is_pad";
pub const NEXT_TRAJECTORY: &str = "next_trajectory";
