//! The HTP target of a build: the SoC table and the options rendered from a recipe.

pub mod soc;
