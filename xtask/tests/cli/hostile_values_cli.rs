//! The hostile suite, part five: `model.toml` and recipe values no type refuses (an unknown
//! family, a QAIRT this tool does not drive, a `seq_len` the graphs do not take, a group name
//! that climbs out, more VTCM than the chip has, a waiver without a reason, a recipe that is a
//! link out of the project) and the files behind them (a truncated external-data file, a graph
//! input of an element type the tool does not handle). Each: exit 2 naming the file, the line
//! and the key (or the file and the tensor), nothing built, nothing outside touched.

use crate::sandbox::{Case, Sandbox, edit, nothing, run_cases};

const RECIPE: &str = "recipes/tiny/action_context.toml";
const MODEL: &str = "recipes/tiny/model.toml";
const PARITY: &[&str] = &["parity", "--backend", "ort", "--only", "action_context"];
const BUILD: &[&str] = &["build-ctx", "--soc", "77", "--only", "action_context"];

/// Where a case puts the file its recipe links to (outside the project, removed after).
fn outside_copy(what: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("xtask-outside-{what}-{}.toml", std::process::id()))
}

/// Moves the project file `rel` out of the project (to `outside_copy(what)`) and leaves a
/// link to it in its place.
fn link_out(s: &Sandbox, rel: &str, what: &str) {
    let outside = outside_copy(what);
    std::fs::copy(s.p.path(rel), &outside).unwrap();
    std::fs::remove_file(s.p.path(rel)).unwrap();
    std::os::unix::fs::symlink(&outside, s.p.path(rel)).unwrap();
}

fn nothing_built(s: &Sandbox) {
    assert!(!s.p.path("ctx/tiny").exists(), "ctx/tiny was created");
}

fn model_values() -> Vec<Case> {
    vec![
        Case {
            name: "family = \"llama\"",
            setup: |s| edit(&s.p, MODEL, "family = \"molmoact2\"", "family = \"llama\""),
            args: BUILD,
            env: &[],
            code: 2,
            says: &[
                "recipes/tiny/model.toml:9: model.family = \"llama\"",
                "not a family this tool knows: molmoact2, graphs",
            ],
            after: nothing_built,
        },
        Case {
            name: "qairt = \"2.46.0\"",
            setup: |s| edit(&s.p, MODEL, "qairt = \"2.47.0\"", "qairt = \"2.46.0\""),
            args: PARITY,
            env: &[],
            code: 2,
            says: &[
                "recipes/tiny/model.toml:16: target.qairt = \"2.46.0\"",
                "this tool drives QAIRT 2.47",
            ],
            after: nothing,
        },
        Case {
            name: "seq_len = 131 (the graphs take 130)",
            setup: |s| edit(&s.p, MODEL, "seq_len = 130", "seq_len = 131"),
            args: PARITY,
            env: &[],
            code: 2,
            says: &[
                "recipes/tiny/model.toml:12: model.seq_len = 131",
                "recipes/tiny/llm_split0.toml:",
                "`hidden_states` with shape [1, 130, 64]",
            ],
            after: nothing,
        },
        Case {
            name: "weight_sharing_group = \"../x\"",
            setup: |s| {
                edit(
                    &s.p,
                    RECIPE,
                    "vtcm_mb = 0",
                    "vtcm_mb = 0\nweight_sharing_group = \"../x\"",
                )
            },
            args: BUILD,
            env: &[],
            code: 2,
            says: &[
                "recipes/tiny/action_context.toml:45: context.weight_sharing_group = \"../x\"",
                "is not a plain name",
            ],
            after: nothing_built,
        },
        Case {
            name: "source_repo = \"-h/x\" (would reach hf as a flag)",
            setup: |s| {
                edit(
                    &s.p,
                    MODEL,
                    "seq_len = 130",
                    "seq_len = 130\nsource_repo = \"-h/x\"",
                )
            },
            args: PARITY,
            env: &[],
            code: 2,
            says: &[
                "recipes/tiny/model.toml:13: model.source_repo",
                "is not a Hugging Face repository id",
            ],
            after: nothing,
        },
        Case {
            name: "vtcm_mb = 1000000",
            setup: |s| edit(&s.p, RECIPE, "vtcm_mb = 0", "vtcm_mb = 1000000"),
            args: BUILD,
            env: &[],
            code: 2,
            says: &[
                "recipes/tiny/action_context.toml:44: context.vtcm_mb = 1000000 MB",
                "more VTCM than HTP v73 has (8 MB)",
            ],
            after: nothing_built,
        },
        Case {
            name: "a parity override whose reason is two words",
            setup: |s| {
                let path = s.p.path(MODEL);
                let text = std::fs::read_to_string(&path).unwrap();
                let start = text.find("reason = \"The HTP runs").unwrap();
                let end = start + text[start..].find('\n').unwrap();
                let edited = format!(
                    "{}reason = \"fp16 rounding\"{}",
                    &text[..start],
                    &text[end..]
                );
                std::fs::write(&path, edited).unwrap();
            },
            args: PARITY,
            env: &[],
            code: 2,
            says: &[
                "recipes/tiny/model.toml:",
                "a written `reason` of a few words",
                "\"fp16 rounding\"",
            ],
            after: nothing,
        },
        Case {
            name: "model.toml a link to a file outside the project",
            setup: |s| link_out(s, MODEL, "model"),
            args: PARITY,
            env: &[],
            code: 2,
            says: &[
                "recipe = \"recipes/tiny/model.toml\" resolves to",
                "outside the project root",
            ],
            after: |_| std::fs::remove_file(outside_copy("model")).unwrap(),
        },
        Case {
            name: "a component recipe a link to a file outside the project",
            setup: |s| link_out(s, RECIPE, "recipe"),
            args: PARITY,
            env: &[],
            code: 2,
            says: &[
                "recipe = \"recipes/tiny/action_context.toml\" resolves to",
                "outside the project root",
            ],
            after: |_| std::fs::remove_file(outside_copy("recipe")).unwrap(),
        },
    ]
}

fn files() -> Vec<Case> {
    vec![
        Case {
            name: "llm_split0.onnx.data truncated",
            setup: |s| {
                let path = s.p.path("onnx/tiny/llm_split0.onnx.data");
                let bytes = std::fs::read(&path).unwrap();
                std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
            },
            args: &["parity", "--backend", "ort", "--only", "llm_split0"],
            env: &[],
            code: 2,
            says: &[
                "external data file onnx/tiny/llm_split0.onnx.data is truncated",
                "bytes, the file has",
            ],
            after: nothing,
        },
        Case {
            name: "a graph input of ONNX element type 13 (uint64)",
            setup: |s| {
                let path = s.p.path("onnx/tiny/action_context.onnx");
                let bytes = std::fs::read(&path).unwrap();
                // model.graph(7).input(11).type(2).tensor_type(1) = {elem_type(1): 13}
                let edited = crate::hostile_cli::edit_path(&bytes, &[7, 11, 2, 1], &[0x08, 13]);
                std::fs::write(&path, edited).unwrap();
            },
            args: BUILD,
            env: &[],
            code: 2,
            says: &[
                "onnx/tiny/action_context.onnx: tensor `keys` has ONNX element type 13",
                "which this tool does not handle",
            ],
            after: nothing_built,
        },
    ]
}

#[test]
fn model_values_and_the_files_behind_them_are_refused_with_file_line_and_key() {
    run_cases(model_values().into_iter().chain(files()).collect());
}
