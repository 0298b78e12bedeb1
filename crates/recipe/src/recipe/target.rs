//! `model.toml` values that describe the target and the chain's sizes, checked when the recipe
//! loads (file, line, key): `[model] seq_len` within a real model's range, `[target] qairt` a
//! version number and `soc` a known SoC, `[host] action_dim_used` within the action tensor;
//! and, once a QNN runtime is loaded, `qairt` against that runtime's version.

use std::path::Path;

use anyhow::{Result, bail};

use super::validate::at;
use super::{Component, HostSection, Model, ModelFile};

/// The longest sequence a recipe may declare: above every released context length (1M
/// tokens); a larger value is a typo (`2^40`), not a model.
pub const MAX_SEQ_LEN: usize = 1 << 20;

/// `[model] seq_len`, `[target] qairt` and `[target] soc`.
pub fn check_model_section(path: &Path, text: &str, file: &ModelFile) -> Result<()> {
    let seq = file.model.seq_len;
    if !(1..=MAX_SEQ_LEN).contains(&seq) {
        bail!(
            "{} = {seq} is not a sequence length: it must be between 1 and {MAX_SEQ_LEN}",
            at(path, text, "model", "seq_len", 0)
        );
    }
    let qairt = &file.target.qairt;
    let parts: Vec<&str> = qairt.split('.').collect();
    let numeric =
        |p: &&str| !p.is_empty() && p.len() <= 12 && p.bytes().all(|b| b.is_ascii_digit());
    if !(3..=4).contains(&parts.len()) || !parts.iter().all(numeric) {
        bail!(
            "{} = {qairt:?} is not a QAIRT version: write MAJOR.MINOR.PATCH, e.g. \"2.47.0\"",
            at(path, text, "target", "qairt", 0)
        );
    }
    if let Err(e) = xtask_base::soc::parse_soc(&file.target.soc.to_string()) {
        bail!("{}: {e:#}", at(path, text, "target", "soc", 0));
    }
    Ok(())
}

/// `[host] action_dim_used`: at least one dim, and no more than the action tensor holds (the
/// last dim of `action_step`'s trajectory output); a wider value would slice past its end.
pub fn check_action_dims(
    path: &Path,
    text: &str,
    host: &HostSection,
    components: &[Component],
) -> Result<()> {
    let used = host.action_dim_used;
    let width = components
        .iter()
        .find(|c| c.name() == host.action_step)
        .and_then(|c| {
            c.file
                .outputs
                .iter()
                .find(|o| o.name.get_ref() == crate::recipe::tensor_names::NEXT_TRAJECTORY)
        })
        .and_then(|o| o.shape.last().copied());
    let key = || at(path, text, "host", "action_dim_used", 0);
    if used == 0 {
        bail!("{} = 0: at least one action dim must be used", key());
    }
    if let Some(width) = width
        && used > width
    {
        bail!(
            "{} = {used} is wider than the action tensor: `{}` outputs {} dims per step",
            key(),
            host.action_step,
            width
        );
    }
    Ok(())
}

/// Whether the QNN build a runtime reports (`v2.47.0.260601114230`) is the recipe's QAIRT
/// version (`2.47.0`).
pub fn qairt_matches(want: &str, qnn_build: &str) -> bool {
    let have = qnn_build.trim().trim_start_matches('v');
    have == want || have.starts_with(&format!("{want}."))
}

/// Refuses a model whose `[target] qairt` is not the version of the QNN runtime loaded here:
/// its binaries would be built by (or judged on) another QAIRT than the bundle claims.
/// `qnn_build` None means QNN was not loaded (nothing to compare).
pub fn check_qairt(model: &Model, qnn_build: Option<&str>) -> Result<()> {
    let want = &model.file.target.qairt;
    match qnn_build {
        Some(have) if !qairt_matches(want, have) => bail!(
            "{} = {want:?}, but the QNN runtime here is {have}: build and check with a runtime of \
             that version (QNN_LIB_DIR, or `--toolchain sdk` with that SDK), or set qairt to the runtime's",
            at(&model.recipe_path, &model.recipe_text, "target", "qairt", 0)
        ),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(extra: &str, target: &str) -> (String, ModelFile) {
        let text = format!(
            "[model]\nname='m'\nfamily='molmoact2'\ncomponents=['c']\n{extra}\n[target]\n{target}\n"
        );
        let file = toml::from_str(&text).unwrap();
        (text, file)
    }

    #[test]
    fn seq_len_qairt_and_soc_are_checked_with_their_line() {
        let p = Path::new("m.toml");
        let good = "qairt='2.47.0'\nsoc=77\nhtp_arch=73";
        let (t, f) = model("seq_len=130", good);
        check_model_section(p, &t, &f).unwrap();
        for (extra, target, says) in [
            ("seq_len=0", good, "m.toml:5: model.seq_len = 0"),
            (
                "seq_len=1099511627776",
                good,
                "model.seq_len = 1099511627776",
            ),
            (
                "seq_len=1",
                "qairt='2.47'\nsoc=77\nhtp_arch=73",
                "m.toml:7: target.qairt",
            ),
            (
                "seq_len=1",
                "qairt='x;id'\nsoc=77\nhtp_arch=73",
                "target.qairt",
            ),
            (
                "seq_len=1",
                "qairt='2.47.0'\nsoc=999999\nhtp_arch=73",
                "m.toml:8: target.soc",
            ),
        ] {
            let (t, f) = model(extra, target);
            let err = format!("{:#}", check_model_section(p, &t, &f).unwrap_err());
            assert!(err.contains(says), "{says}: {err}");
        }
    }

    #[test]
    fn the_runtime_version_must_be_the_recipes() {
        assert!(qairt_matches("2.47.0", "v2.47.0.260601114230"));
        assert!(qairt_matches("2.47.0", "2.47.0"));
        assert!(!qairt_matches("2.47.0", "v2.47.01.1"));
        assert!(!qairt_matches("9.99.0", "v2.47.0.260601114230"));
    }
}
