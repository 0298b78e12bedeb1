//! `model.toml` and component values no type can refuse, checked when the recipes load (file,
//! line, key): the family is one whose chain this tool runs, the pinned QAIRT is one this tool
//! drives, `seq_len` is the sequence the LLM graphs take, a weight-sharing group is a plain
//! name, and `vtcm_mb` fits the SoC's VTCM.

use std::path::Path;

use anyhow::{Result, bail};

use super::validate::at;
use super::{Component, ModelFile};
use crate::recipe::tensor_names::{ATTENTION_BIAS, HIDDEN_STATES};

/// The model families this tool knows: `molmoact2` (the vision → LLM splits → action chain
/// `cargo xtask run` drives, `[host]`) and `graphs` (components built and checked one by one,
/// no chain: fixtures, benchmarks, a model brought graph by graph).
pub const KNOWN_FAMILIES: &[&str] = &["molmoact2", "graphs"];

/// The QAIRT release this tool drives: the pinned runtime's (`PINNED_QNN_VERSION`), whose
/// tools, options and binary format every step is written and tested against.
pub const DRIVEN_QAIRT: &str = "2.47";

/// VTCM per Hexagon architecture, in MB (Qualcomm's published figures: 4 MB on v68, 8 MB from
/// v69 on). A `vtcm_mb` above it asks the backend for memory the chip does not have.
pub fn vtcm_limit_mb(htp_arch: u32) -> u32 {
    if htp_arch <= 68 { 4 } else { 8 }
}

/// `[model] family` and `[target] qairt` against what the tool knows and drives.
pub fn check_family_and_qairt(path: &Path, text: &str, file: &ModelFile) -> Result<()> {
    let family = file.model.family.as_str();
    if !KNOWN_FAMILIES.contains(&family) {
        bail!(
            "{} = {family:?} is not a family this tool knows: {} (`molmoact2` for the vision → LLM → action chain, `graphs` for components without a chain)",
            at(path, text, "model", "family", 0),
            KNOWN_FAMILIES.join(", ")
        );
    }
    if file.host.is_some() && family != "molmoact2" {
        bail!(
            "{} = {family:?}, but [host] describes the molmoact2 chain: set family = \"molmoact2\" or remove [host]",
            at(path, text, "model", "family", 0)
        );
    }
    let qairt = &file.target.qairt;
    let release = qairt.splitn(3, '.').take(2).collect::<Vec<_>>().join(".");
    if release != DRIVEN_QAIRT {
        bail!(
            "{} = {qairt:?}: this tool drives QAIRT {DRIVEN_QAIRT} (its pinned runtime is {}); another release's tools, options and binaries are not what it was built and tested against",
            at(path, text, "target", "qairt", 0),
            xtask_base::vocab::PINNED_QNN_VERSION
        );
    }
    Ok(())
}

/// `[model] source_repo` and `source_revision` become `hf` arguments when `fetch` uses them:
/// each is held to the repository-id and revision rules when the recipe loads, so a bad value
/// is named with its file and line, not as a flag nobody typed.
pub fn check_source(path: &Path, text: &str, file: &ModelFile) -> Result<()> {
    if let Some(repo) = &file.model.source_repo
        && let Err(e) = super::hub_names::validate_repo_id(repo)
    {
        bail!("{}: {e:#}", at(path, text, "model", "source_repo", 0));
    }
    if let Some(rev) = &file.model.source_revision
        && let Err(e) = super::hub_names::validate_revision(rev)
    {
        bail!("{}: {e:#}", at(path, text, "model", "source_revision", 0));
    }
    Ok(())
}

/// `[model] seq_len` is the sequence every LLM split takes: `hidden_states` [1, seq, hidden]
/// and `attention_bias` [1, 1, seq, seq] (a chain with another length would build the
/// attention mask for the wrong size).
pub fn check_seq_len(
    path: &Path,
    text: &str,
    file: &ModelFile,
    components: &[Component],
) -> Result<()> {
    let Some(host) = &file.host else {
        return Ok(());
    };
    let seq = file.model.seq_len;
    for comp in components
        .iter()
        .filter(|c| host.llm_splits.iter().any(|s| s == c.name()))
    {
        for spec in &comp.file.inputs {
            let dims: &[usize] = match spec.name.get_ref().as_str() {
                HIDDEN_STATES => spec.shape.get(1..2).unwrap_or_default(),
                ATTENTION_BIAS => spec.shape.get(2..4).unwrap_or_default(),
                _ => continue,
            };
            if dims.iter().any(|&d| d != seq) {
                bail!(
                    "{} = {seq}, but {} declares `{}` with shape {:?}: the LLM graphs take another sequence length",
                    at(path, text, "model", "seq_len", 0),
                    comp.where_tensor(spec),
                    spec.name.get_ref(),
                    spec.shape
                );
            }
        }
    }
    Ok(())
}

/// `[context] weight_sharing_group` is a plain name (it names files and tool arguments, as a
/// component name does) and `vtcm_mb` fits the target's VTCM.
pub fn check_context(comp: &Component, htp_arch: u32) -> Result<()> {
    let ctx = &comp.file.context;
    if let Some(group) = &ctx.weight_sharing_group {
        super::names::check_recipe_name(
            &comp.recipe_path,
            &comp.recipe_text,
            "context",
            "weight_sharing_group",
            group,
        )?;
    }
    let limit = vtcm_limit_mb(htp_arch);
    if ctx.vtcm_mb > limit {
        bail!(
            "{} = {} MB is more VTCM than HTP v{htp_arch} has ({limit} MB): use 0 for the backend's maximum",
            at(
                &comp.recipe_path,
                &comp.recipe_text,
                "context",
                "vtcm_mb",
                0
            ),
            ctx.vtcm_mb
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(family: &str, qairt: &str) -> (String, ModelFile) {
        let text = format!(
            "[model]\nname='m'\nfamily='{family}'\ncomponents=['c']\nseq_len=1\n[target]\nqairt='{qairt}'\nsoc=77\nhtp_arch=73\n"
        );
        let file = toml::from_str(&text).unwrap();
        (text, file)
    }

    #[test]
    fn the_family_must_be_known_and_qairt_the_driven_release() {
        let p = Path::new("m.toml");
        for (family, qairt) in [("molmoact2", "2.47.0"), ("graphs", "2.47.1.250101")] {
            let (t, f) = model(family, qairt);
            check_family_and_qairt(p, &t, &f).unwrap();
        }
        for (family, qairt, says) in [
            ("llama", "2.47.0", "m.toml:3: model.family = \"llama\""),
            ("molmoact2", "2.46.0", "m.toml:7: target.qairt = \"2.46.0\""),
            ("molmoact2", "2.470.0", "this tool drives QAIRT 2.47"),
        ] {
            let (t, f) = model(family, qairt);
            let err = format!("{:#}", check_family_and_qairt(p, &t, &f).unwrap_err());
            assert!(err.contains(says), "{says}: {err}");
        }
    }

    #[test]
    fn vtcm_limits_follow_the_arch() {
        assert_eq!(vtcm_limit_mb(68), 4);
        assert_eq!(vtcm_limit_mb(73), 8);
    }
}
