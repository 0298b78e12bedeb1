//! Exit codes say whose move it is: 2 for bad input or environment (a recipe value, a missing
//! or corrupt file, a graph that does not match its recipe: the user must fix something before
//! anything can run), 1 for a gate or a step that failed on good input. Errors are `anyhow`
//! errors; this marker travels inside them so `main` and the commands can tell the two apart
//! without matching on message text.

use std::fmt;

/// An error caused by the input (recipe, files, arguments), not by a tool or a gate.
pub struct BadInput(pub anyhow::Error);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl fmt::Debug for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for BadInput {}

/// Marks the error of a result as bad input.
pub trait MarkBadInput<T> {
    fn bad_input(self) -> anyhow::Result<T>;
}

impl<T> MarkBadInput<T> for anyhow::Result<T> {
    fn bad_input(self) -> anyhow::Result<T> {
        self.map_err(|e| anyhow::Error::new(BadInput(e)))
    }
}

/// Whether an error (anywhere in its chain) was caused by the input.
pub fn is_bad_input(err: &anyhow::Error) -> bool {
    err.chain().any(|c| c.is::<BadInput>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn the_mark_survives_context_and_keeps_the_message() {
        let e: anyhow::Result<()> = Err(anyhow::anyhow!("x.npz is not a zip"));
        let e = e.bad_input().context("golden of vision").unwrap_err();
        assert!(is_bad_input(&e));
        assert_eq!(format!("{e:#}"), "golden of vision: x.npz is not a zip");
        assert!(!is_bad_input(&anyhow::anyhow!("QNN refused the graph")));
    }
}
