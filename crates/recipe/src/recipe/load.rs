//! Loading recipes from `recipes/<model>/` and checking them for internal consistency (names,
//! roles, overrides, host section); errors name file, line and key (toml spans).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::host::check_host;
use super::names::check_recipe_name;
use super::paths::require_inside;
use super::validate::{at, check_cosine, check_norm_ratio_map, check_relative, check_tolerance};
use super::{Component, ComponentFile, GateOverride, Model, ModelFile};
use xtask_base::vocab::BackendKind;

/// Parses TOML into `T`, turning serde/toml errors into "file:line:col: message".
pub fn parse_toml<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T> {
    toml::from_str(text).map_err(|e| {
        let line_col = e.span().map(|s| {
            let line = text[..s.start].matches('\n').count() + 1;
            let col = s.start - text[..s.start].rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("{line}:{col}")
        });
        anyhow::anyhow!(
            "{}:{}: {}",
            path.display(),
            line_col.unwrap_or_else(|| "?".into()),
            e.message()
        )
    })
}

pub fn known_models(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(root.join("recipes"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("model.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

pub fn load_model(root: &Path, name: &str) -> Result<Model> {
    super::names::check_model_name(name)?;
    let model_path = Path::new("recipes").join(name).join("model.toml");
    if !root.join(&model_path).is_file() {
        let known = known_models(root);
        bail!(
            "no recipe for model `{name}`{} ({} not found); known models: {}",
            xtask_base::ui::suggest::did_you_mean(name, known.iter().map(String::as_str)),
            model_path.display(),
            known.join(", ")
        );
    }
    // A recipe reached through a link is held to the rule of every path a recipe names.
    require_inside(root, &model_path, "recipe")?;
    let text = fs::read_to_string(root.join(&model_path))
        .with_context(|| format!("cannot read {}", model_path.display()))?;
    let file: ModelFile = parse_toml(&model_path, &text)?;
    if file.model.name != name {
        bail!(
            "{}: model.name = {:?} but the folder is `{name}`",
            model_path.display(),
            file.model.name
        );
    }
    check_overrides(&model_path, &text, &file.parity.overrides, None)?;
    check_target_arch(&model_path, &text, file.target.soc, file.target.htp_arch)?;
    let mut seen = std::collections::BTreeSet::new();
    for comp in &file.model.components {
        check_recipe_name(&model_path, &text, "model", "components", comp)?;
        if !seen.insert(comp) {
            bail!(
                "{} lists component `{comp}` twice: each component is built and checked once",
                at(&model_path, &text, "model", "components", 0)
            );
        }
    }
    if let Some(host) = &file.host {
        check_host(&model_path, &text, &file.model, host)?;
        require_inside(
            root,
            &host.trace,
            &at(&model_path, &text, "host", "trace", 0),
        )?;
    }
    super::target::check_model_section(&model_path, &text, &file)?;
    super::limits::check_family_and_qairt(&model_path, &text, &file)?;
    super::limits::check_source(&model_path, &text, &file)?;
    let mut components = Vec::new();
    for comp in &file.model.components {
        let comp = load_component(root, name, comp)?;
        super::limits::check_context(&comp, file.target.htp_arch)?;
        components.push(comp);
    }
    super::limits::check_seq_len(&model_path, &text, &file, &components)?;
    if let Some(host) = &file.host {
        super::target::check_action_dims(&model_path, &text, host, &components)?;
    }
    Ok(Model {
        file,
        components,
        recipe_path: model_path,
        recipe_text: text,
    })
}

/// `[target] htp_arch` must be the SoC table's arch of `[target] soc` (both name one device;
/// a disagreement would build for one and load for the other).
fn check_target_arch(path: &Path, text: &str, soc: u32, htp_arch: u32) -> Result<()> {
    let known = xtask_base::soc::KNOWN_SOCS.iter().find(|s| s.id == soc);
    if let Some(s) = known
        && s.htp_arch != htp_arch
    {
        bail!(
            "{}: htp_arch = {htp_arch}, but soc {soc} ({}) is Hexagon v{} in the SoC table; \
             set htp_arch = {} (or the soc of a v{htp_arch} device)",
            at(path, text, "target", "htp_arch", 0),
            s.chips.join(" / "),
            s.htp_arch,
            s.htp_arch
        );
    }
    Ok(())
}

/// Recipe paths are kept relative to the project root: that is how errors and reports show them.
fn load_component(root: &Path, model: &str, name: &str) -> Result<Component> {
    let recipe_path = Path::new("recipes")
        .join(model)
        .join(format!("{name}.toml"));
    if root.join(&recipe_path).exists() {
        require_inside(root, &recipe_path, "recipe")?;
    }
    let recipe_text = fs::read_to_string(root.join(&recipe_path)).with_context(|| {
        format!(
            "component `{name}` is listed in model.toml but {} is missing",
            recipe_path.display()
        )
    })?;
    let file: ComponentFile = parse_toml(&recipe_path, &recipe_text)?;
    let comp = Component {
        recipe_path,
        recipe_text,
        file,
    };
    check_component(&comp, name)?;
    let text = &comp.recipe_text;
    require_inside(
        root,
        &comp.file.component.onnx,
        &at(&comp.recipe_path, text, "component", "onnx", 0),
    )?;
    require_inside(
        root,
        &comp.file.golden.file,
        &at(&comp.recipe_path, text, "golden", "file", 0),
    )?;
    check_quantize(root, &comp)?;
    Ok(comp)
}

fn check_component(comp: &Component, expected_name: &str) -> Result<()> {
    let path = comp.recipe_path.display();
    if comp.name() != expected_name {
        bail!(
            "{path}: component.name = {:?}, expected {expected_name:?} (the file name)",
            comp.name()
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    for spec in comp.file.inputs.iter().chain(&comp.file.outputs) {
        if !seen.insert(spec.name.get_ref().clone()) {
            bail!(
                "{}: tensor `{}` is declared twice",
                comp.where_tensor(spec),
                spec.name.get_ref()
            );
        }
        if spec.shape.contains(&0) {
            bail!(
                "{}: tensor `{}` has a zero dimension in {:?}",
                comp.where_tensor(spec),
                spec.name.get_ref(),
                spec.shape
            );
        }
    }
    check_recipe_name(
        &comp.recipe_path,
        &comp.recipe_text,
        "context",
        "graph_name",
        &comp.file.context.graph_name,
    )?;
    let cv = &comp.file.convert;
    if ![16, 32].contains(&cv.float_bitwidth) {
        bail!(
            "{path}: convert.float_bitwidth must be 16 or 32, got {}",
            cv.float_bitwidth
        );
    }
    let ctx = &comp.file.context;
    if !(1..=3).contains(&ctx.optimization_level) {
        bail!(
            "{path}: context.optimization_level must be 1, 2 or 3, got {}",
            ctx.optimization_level
        );
    }
    let outputs: Vec<&str> = comp
        .file
        .outputs
        .iter()
        .map(|o| o.name.get_ref().as_str())
        .collect();
    let text = &comp.recipe_text;
    let parity = &comp.file.parity;
    check_cosine(
        &at(&comp.recipe_path, text, "parity", "min_cosine", 0),
        parity.min_cosine,
    )?;
    check_tolerance(
        &at(&comp.recipe_path, text, "parity", "atol", 0),
        parity.atol,
    )?;
    check_relative(
        &at(&comp.recipe_path, text, "parity", "rtol", 0),
        parity.rtol,
    )?;
    check_norm_ratio_map(
        &comp.recipe_path,
        text,
        "parity.max_norm_ratio_error",
        &parity.max_norm_ratio_error,
    )?;
    check_overrides(&comp.recipe_path, text, &parity.overrides, Some(&outputs))?;
    check_rewrites(comp)
}

/// `[quantize]`, when present (paths need the project root).
fn check_quantize(root: &Path, comp: &Component) -> Result<()> {
    match &comp.file.quantize {
        Some(q) => super::quantize::check_quantize(root, &comp.recipe_path, &comp.recipe_text, q),
        None => Ok(()),
    }
}

/// Every `[rewrite] apply` name is a known rewrite, named once.
fn check_rewrites(comp: &Component) -> Result<()> {
    let names = &comp.file.rewrite.apply;
    let where_ = || at(&comp.recipe_path, &comp.recipe_text, "rewrite", "apply", 0);
    for (i, name) in names.iter().enumerate() {
        if xtask_onnx::onnx::decompose::find(name).is_none() {
            bail!(
                "{}: unknown rewrite {name:?}; known rewrites: {}",
                where_(),
                xtask_onnx::onnx::decompose::known_list()
            );
        }
        if names[..i].contains(name) {
            bail!("{}: rewrite {name:?} is listed twice", where_());
        }
    }
    Ok(())
}

fn check_overrides(
    path: &Path,
    text: &str,
    overrides: &[GateOverride],
    outputs: Option<&[&str]>,
) -> Result<()> {
    for (i, o) in overrides.iter().enumerate() {
        if !super::validate::is_a_reason(&o.reason) {
            bail!(
                "{}: a parity override needs a written `reason` of a few words saying why (got {:?})",
                at(path, text, "parity.override", "reason", i),
                o.reason
            );
        }
        check_cosine(
            &at(path, text, "parity.override", "min_cosine", i),
            o.min_cosine,
        )?;
        if let Some(v) = o.max_norm_ratio_error {
            check_relative(
                &at(path, text, "parity.override", "max_norm_ratio_error", i),
                v,
            )?;
        }
        if let Some(b) = &o.backend
            && let Err(e) = b.parse::<BackendKind>()
        {
            bail!(
                "{}: parity override backend {e}",
                at(path, text, "parity.override", "backend", i)
            );
        }
        if let (Some(out), Some(outputs)) = (&o.output, outputs)
            && !outputs.contains(&out.as_str())
        {
            bail!(
                "{}: parity override names output {out:?}, which is not among {outputs:?}",
                path.display()
            );
        }
    }
    Ok(())
}

/// Files a component needs that are absent, with the key that names each.
pub fn missing_files(root: &Path, comp: &Component) -> Vec<PathBuf> {
    [&comp.file.component.onnx, &comp.file.golden.file]
        .into_iter()
        .filter(|p| !root.join(p).is_file())
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipe::tests::GOOD;

    #[test]
    fn an_htp_arch_the_soc_table_disagrees_with_is_refused_with_its_line() {
        let text = "[model]\nname = \"x\"\n[target]\nsoc = 77\nhtp_arch = 75\n";
        let err = check_target_arch(Path::new("recipes/x/model.toml"), text, 77, 75)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("recipes/x/model.toml:5: target.htp_arch: htp_arch = 75"),
            "{err}"
        );
        assert!(err.contains("v73"), "{err}");
        check_target_arch(Path::new("m.toml"), text, 77, 73).unwrap();
    }

    #[test]
    fn unknown_key_names_file_and_line() {
        let text = GOOD.replace("fp16 = true", "fp16 = true\nturbo = 1");
        let err = parse_toml::<ComponentFile>(Path::new("r/c.toml"), &text)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("r/c.toml:24:"), "{err}");
        assert!(err.contains("turbo"), "{err}");
    }

    #[test]
    fn wrong_type_names_the_line() {
        let text = GOOD.replace("optimization_level = 3", "optimization_level = \"high\"");
        let err = parse_toml::<ComponentFile>(Path::new("c.toml"), &text)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("c.toml:22:"), "{err}");
    }

    #[test]
    fn override_without_reason_is_refused() {
        let o = GateOverride {
            output: None,
            backend: None,
            min_cosine: 0.9,
            max_norm_ratio_error: None,
            reason: "".into(),
        };
        assert!(check_overrides(Path::new("m.toml"), "", &[o], None).is_err());
    }

    #[test]
    fn chain_gate_tolerances_default_and_are_checked() {
        let model = "[model]\nname='m'\nfamily='molmoact2'\ncomponents=['v','l','a','s']\nseq_len=1\n\
            [target]\nqairt='2.47.0'\nsoc=77\nhtp_arch=73\n\
            [host]\ntrace='t.json'\nvision='v'\nllm_splits=['l']\naction_context='a'\n\
            action_step='s'\ntimesteps=[0.0]\naction_dim_used=2\nnorm_mode='q01_q99'\n";
        let file: ModelFile = parse_toml(Path::new("m.toml"), model).unwrap();
        let host = file.host.as_ref().unwrap();
        assert_eq!((host.gate.atol, host.gate.rtol), (1e-4, 1e-3));
        check_host(Path::new("m.toml"), model, &file.model, host).unwrap();

        let text = format!("{model}[host.gate]\natol = 0.5\nrtol = -1.0\n");
        let file: ModelFile = parse_toml(Path::new("m.toml"), &text).unwrap();
        let host = file.host.as_ref().unwrap();
        assert_eq!(host.gate.boundary_gate(BackendKind::Ort).atol, 0.5);
        let err = check_host(Path::new("m.toml"), &text, &file.model, host)
            .unwrap_err()
            .to_string();
        assert!(err.contains("[host.gate] rtol must be"), "{err}");
    }
}
