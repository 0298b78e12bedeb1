//! Tests of `[host]`: de-normalisation per dim, trace key mapping, and their refusals with
//! file:line: key.

use super::*;
use crate::recipe::{ModelFile, parse_toml};

/// A model.toml with a `[host]` table ending in `tail` (more host keys or tables).
fn model_toml(tail: &str) -> String {
    format!(
        "[model]\nname='m'\nfamily='molmoact2'\ncomponents=['v','l','a','s']\nseq_len=1\n\
         [target]\nqairt='2.47.0'\nsoc=77\nhtp_arch=73\n\
         [host]\ntrace='t.json'\nvision='v'\nllm_splits=['l']\naction_context='a'\n\
         action_step='s'\ntimesteps=[0.0, 0.25, 0.5]\naction_dim_used=4\n{tail}"
    )
}

/// The host section of `text`, checked as the loader checks it.
fn checked(text: &str) -> Result<HostSection> {
    let file: ModelFile = parse_toml(Path::new("m.toml"), text)?;
    let host = file.host.clone().unwrap();
    check_host(Path::new("m.toml"), text, &file.model, &host)?;
    Ok(host)
}

fn err(text: &str) -> String {
    format!("{:#}", checked(text).unwrap_err())
}

use DimMode::{Clip, ClipDenorm, Denorm, Pass};

#[test]
fn the_gripper_dim_form_and_the_denorm_table_mean_the_same() {
    let old = checked(&model_toml("gripper_dim=3\nnorm_mode='q01_q99'\n")).unwrap();
    let new = checked(&model_toml(
        "norm_mode='q01_q99'\n[host.denorm]\ndims = { 3 = 'pass' }\n",
    ))
    .unwrap();
    let want = vec![ClipDenorm, ClipDenorm, ClipDenorm, Pass];
    assert_eq!(old.denorm_modes().unwrap(), want);
    assert_eq!(new.denorm_modes().unwrap(), want);
    // Neither: every dim clipped and de-normalised.
    let none = checked(&model_toml("norm_mode='q01_q99'\n")).unwrap();
    assert_eq!(none.denorm_modes().unwrap(), vec![ClipDenorm; 4]);
}

#[test]
fn a_clipped_only_gripper_and_a_passed_dim_are_expressible() {
    let host = checked(&model_toml(
        "norm_mode='q01_q99'\n[host.denorm]\ndefault = 'denorm'\n[host.denorm.dims]\n2 = 'clip'\n3 = 'pass'\n0 = 'clip+denorm'\n",
    ))
    .unwrap();
    assert_eq!(
        host.denorm_modes().unwrap(),
        vec![ClipDenorm, Denorm, Clip, Pass]
    );
    assert!(Clip.clips() && !Clip.denormalizes());
    assert!(!Pass.clips() && !Pass.denormalizes());
    assert!(!Denorm.clips() && Denorm.denormalizes());
}

#[test]
fn an_unimplemented_norm_mode_is_refused_at_its_line() {
    let e = err(&model_toml("norm_mode='min_max'\n"));
    assert_eq!(
        e,
        "m.toml:18: host.norm_mode = \"min_max\" is not implemented (implemented: \"q01_q99\")"
    );
}

#[test]
fn bad_dim_specs_are_refused_at_their_line() {
    let base = "norm_mode='q01_q99'\n[host.denorm]\n";
    let cases = [
        (
            "dims = { 4 = 'pass' }\n",
            "m.toml:20: host.denorm.dims.4: not a used action dim: dims are numbered 0..3 (action_dim_used = 4)",
        ),
        (
            "dims = { gripper = 'pass' }\n",
            "m.toml:20: host.denorm.dims.gripper: not a used action dim",
        ),
        (
            "[host.denorm.dims]\n1 = 'clamp'\n",
            "m.toml:21: host.denorm.dims.1 = \"clamp\" is not a de-normalisation mode (known: \"clip+denorm\", \"clip\", \"denorm\", \"pass\")",
        ),
        (
            "default = 'none'\n",
            "m.toml:20: host.denorm.default = \"none\" is not a de-normalisation mode",
        ),
        (
            "dims = { 1 = 'pass', 01 = 'clip' }\n",
            "host.denorm.dims.1: dim 1 is given twice",
        ),
    ];
    assert_each_refused(base, &cases);
    let e = err(&model_toml(
        "gripper_dim = 3\nnorm_mode='q01_q99'\n[host.denorm]\ndims = { 3 = 'clip' }\n",
    ));
    assert!(
        e.starts_with("m.toml:18: host.gripper_dim = 3 and [host.denorm] both say"),
        "{e}"
    );
    let e = err(&model_toml("gripper_dim = 4\nnorm_mode='q01_q99'\n"));
    assert!(
        e.starts_with("m.toml:18: host.gripper_dim = 4 must be below action_dim_used (4)"),
        "{e}"
    );
}

#[test]
fn trace_keys_map_our_names_to_the_files() {
    let host = checked(&model_toml(
        "norm_mode='q01_q99'\n[host.trace_keys]\nq01 = 'norm_low'\n\"trajectory_step{i}_out\" = 'flow/{i}/x'\n",
    ))
    .unwrap();
    assert_eq!(host.trace_key("q01", None), "norm_low");
    assert_eq!(host.trace_key("q99", None), "q99");
    assert_eq!(host.trace_key(STEP_OUT, Some(2)), "flow/2/x");
    let plain = checked(&model_toml("norm_mode='q01_q99'\n")).unwrap();
    assert_eq!(plain.trace_key(STEP_OUT, Some(1)), "trajectory_step1_out");
}

#[test]
fn bad_trace_keys_are_refused_at_their_line() {
    let base = "norm_mode='q01_q99'\n[host.trace_keys]\n";
    let cases = [
        (
            "image_embeds = 'vis'\n",
            "m.toml:20: host.trace_keys.image_embeds: not a trace tensor the chain reads; known: prompt_embeds,",
        ),
        (
            "trajectory_step0_out = 'x0'\n",
            "the Euler steps' outputs are mapped together",
        ),
        (
            "\"trajectory_step{i}_out\" = 'flow_out'\n",
            "m.toml:20: host.trace_keys.trajectory_step{i}_out = \"flow_out\" has no `{i}`",
        ),
        (
            "q01 = ' '\n",
            "m.toml:20: host.trace_keys.q01 = \" \": a trace tensor needs a name",
        ),
    ];
    assert_each_refused(base, &cases);
}

/// Each `base + tail` model is refused with an error containing its `want`.
fn assert_each_refused(base: &str, cases: &[(&str, &str)]) {
    for (tail, want) in cases {
        let e = err(&model_toml(&format!("{base}{tail}")));
        assert!(e.contains(want), "{tail}: {e}");
    }
}

/// The strings of the Python tuple `name = (...)` (or the one string of `name = "..."`) in the
/// generator's mirror of the host trace keys.
fn python_strings(source: &str, name: &str) -> Vec<String> {
    let start = source
        .find(&format!("\n{name} = "))
        .unwrap_or_else(|| panic!("host_keys.py has no `{name} = ...`"))
        + name.len()
        + 4;
    let rest = &source[start..];
    let value = if rest.starts_with('(') {
        &rest[..rest.find(')').expect("an unclosed tuple")]
    } else {
        rest.lines().next().unwrap()
    };
    value
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The Rust lists are the source; the generator (xtask/scripts/tinygen/host_keys.py) writes
/// recipes' `[host.trace_keys]` from its mirror of them, so the two must stay equal.
#[test]
fn the_generator_mirrors_the_host_trace_keys() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../xtask/scripts/tinygen/host_keys.py");
    let source = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        python_strings(&source, "HOST_INPUT_KEYS"),
        HOST_INPUT_KEYS,
        "HOST_INPUT_KEYS"
    );
    assert_eq!(
        python_strings(&source, "REFERENCE_KEYS"),
        REFERENCE_KEYS,
        "REFERENCE_KEYS"
    );
    assert_eq!(python_strings(&source, "STEP_OUT"), [STEP_OUT], "STEP_OUT");
}

/// Timesteps strictly increasing in [0, 1), and each component in one role once, refused at
/// load with the line and key.
#[test]
fn timesteps_out_of_order_or_range_and_components_in_two_roles_are_refused_at_load() {
    let with = |from: &str, to: &str| err(&model_toml("norm_mode='q01_q99'\n").replace(from, to));
    let e = with("timesteps=[0.0, 0.25, 0.5]", "timesteps=[0.5, 0.25]");
    assert!(
        e.starts_with("m.toml:16: host.timesteps = [0.5, 0.25]: timesteps[1] = 0.25 does not come after timesteps[0] = 0.5"),
        "{e}"
    );
    let e = with("timesteps=[0.0, 0.25, 0.5]", "timesteps=[0.0, 0.0]");
    assert!(e.contains("they must increase strictly"), "{e}");
    let e = with("timesteps=[0.0, 0.25, 0.5]", "timesteps=[0.0, 1.0]");
    assert!(e.contains("timesteps[1] = 1 is outside [0, 1)"), "{e}");
    let e = with("llm_splits=['l']", "llm_splits=['l', 'l']");
    assert!(
        e.starts_with("m.toml:13: host.llm_splits lists component `l` twice"),
        "{e}"
    );
    let e = with("action_step='s'", "action_step='a'");
    assert!(
        e.contains("host.action_step names component `a` in action_context and in action_step"),
        "{e}"
    );
}
