//! The corpus of broken inputs (npz files, ONNX graphs, recipe values, path escapes), each
//! case with the exit code and the message it must produce; and the data-root opt-in, the one
//! way data may live outside the project.

use super::forge::{
    KEYS_N, KEYS_SHAPE, edit_path, f32_bytes, golden_keys, npy, replace_npz_member,
};
use super::{BUILD, COMP, GOLDEN, ONNX, PARITY, RECIPE};
use crate::common::{self, Run, Scratch};
use crate::sandbox::edit;

/// One hostile input: how the tiny project is broken, the command run on it, its exit code and
/// the fragments its output must hold.
struct Case {
    name: &'static str,
    setup: fn(&Scratch),
    args: &'static [&'static str],
    code: i32,
    says: &'static [&'static str],
}

/// Every case, by what it breaks.
fn corpus() -> Vec<Case> {
    [npz_cases(), onnx_cases(), recipe_cases(), path_cases()]
        .into_iter()
        .flatten()
        .collect()
}

/// Broken, unusual (but valid) and non-finite npz goldens.
fn npz_cases() -> Vec<Case> {
    vec![
        Case {
            name: "npz truncated",
            setup: |p| {
                let b = std::fs::read(p.path(GOLDEN)).unwrap();
                std::fs::write(p.path(GOLDEN), &b[..b.len() / 2]).unwrap();
            },
            args: PARITY,
            code: 2,
            says: &["action_context_io.npz"],
        },
        Case {
            name: "npz not a zip",
            setup: |p| std::fs::write(p.path(GOLDEN), b"this is not a zip archive").unwrap(),
            args: BUILD,
            code: 2,
            says: &["action_context_io.npz"],
        },
        Case {
            name: "npz wrong dtype (f64 where the recipe says f32)",
            setup: |p| {
                let data: Vec<u8> = (0..KEYS_N).flat_map(|_| 0.5f64.to_le_bytes()).collect();
                replace_npz_member(
                    &p.path(GOLDEN),
                    "keys",
                    &npy("<f8", false, &KEYS_SHAPE, &data),
                );
            },
            args: PARITY,
            code: 2,
            says: &["keys", "f32"],
        },
        // Valid but unusual encodings are read correctly: the same values, so parity passes.
        Case {
            name: "npz big-endian f32 (same values)",
            setup: |p| {
                let keys = golden_keys(p);
                let data: Vec<u8> = keys.iter().flat_map(|v| v.to_be_bytes()).collect();
                replace_npz_member(
                    &p.path(GOLDEN),
                    "keys",
                    &npy(">f4", false, &KEYS_SHAPE, &data),
                );
            },
            args: PARITY,
            code: 0,
            says: &["pass"],
        },
        Case {
            name: "npz Fortran order (same values)",
            setup: |p| {
                let keys = golden_keys(p);
                let data: Vec<u8> = keys.t().iter().flat_map(|v| v.to_le_bytes()).collect();
                replace_npz_member(
                    &p.path(GOLDEN),
                    "keys",
                    &npy("<f4", true, &KEYS_SHAPE, &data),
                );
            },
            args: PARITY,
            code: 0,
            says: &["pass"],
        },
        Case {
            name: "npz huge-shape header",
            setup: |p| {
                let data = f32_bytes(16, false);
                replace_npz_member(
                    &p.path(GOLDEN),
                    "keys",
                    &npy("<f4", false, &[1 << 40, 1 << 20], &data),
                );
            },
            args: PARITY,
            code: 2,
            says: &["array `keys` declares shape [1099511627776, 1048576]"],
        },
        Case {
            name: "npz NaN in a golden output",
            setup: |p| {
                common::edit_golden(&p.path(GOLDEN), "k_ctx", |a| a[[0, 0, 0, 0]] = f32::NAN)
            },
            args: PARITY,
            code: 1,
            says: &["NaN"],
        },
        Case {
            name: "npz NaN in a golden input, lint-fp16",
            setup: |p| common::edit_golden(&p.path(GOLDEN), "keys", |a| a[[0, 0, 0, 1]] = f32::NAN),
            args: &["lint-fp16", "--only", COMP],
            code: 2,
            says: &["`keys`: 1 NaN, 0 Inf", GOLDEN, "nothing was run"],
        },
        Case {
            name: "npz Inf in a golden input, parity never shows a clean cosine",
            setup: |p| {
                common::edit_golden(&p.path(GOLDEN), "keys", |a| a[[0, 0, 0, 1]] = f32::INFINITY)
            },
            args: PARITY,
            code: 2,
            says: &["`keys`: 0 NaN, 1 Inf", GOLDEN, "nothing was run"],
        },
        Case {
            name: "npz NaN in a golden input, build-ctx refuses before any step",
            setup: |p| common::edit_golden(&p.path(GOLDEN), "keys", |a| a[[0, 0, 0, 1]] = f32::NAN),
            args: &["build-ctx", "--soc", "77", "--only", COMP],
            code: 2,
            says: &["`keys`: 1 NaN, 0 Inf", GOLDEN, "nothing was run"],
        },
        Case {
            name: "npz NaN in a golden input, run refuses before the chain",
            setup: |p| common::edit_golden(&p.path(GOLDEN), "keys", |a| a[[0, 0, 0, 1]] = f32::NAN),
            args: &["run", "--backend", "ort", "--iters", "1", "--warmup", "0"],
            code: 2,
            says: &["`keys`: 1 NaN, 0 Inf", GOLDEN, "nothing was run"],
        },
    ]
}

/// Broken graphs, dynamic dims, and a graph that is not the recipe's.
fn onnx_cases() -> Vec<Case> {
    vec![
        Case {
            name: "onnx truncated",
            setup: |p| {
                let b = std::fs::read(p.path(ONNX)).unwrap();
                std::fs::write(p.path(ONNX), &b[..b.len() / 3]).unwrap();
            },
            args: PARITY,
            code: 2,
            says: &["action_context.onnx", "not a valid ONNX model"],
        },
        Case {
            name: "onnx garbage",
            setup: |p| std::fs::write(p.path(ONNX), [0xffu8; 64]).unwrap(),
            args: BUILD,
            code: 2,
            says: &["action_context.onnx", "not a valid ONNX model"],
        },
        Case {
            name: "onnx dynamic dims",
            setup: |p| {
                let b = std::fs::read(p.path(ONNX)).unwrap();
                // model.graph(7).input(11).type(2).tensor_type(1).shape(2).dim(1) = dim_param "N"
                let edited = edit_path(&b, &[7, 11, 2, 1, 2, 1], &[0x12, 0x01, b'N']);
                std::fs::write(p.path(ONNX), edited).unwrap();
            },
            args: BUILD,
            code: 2,
            says: &["input `keys`", "[-1, 1, 130, 32]"],
        },
        Case {
            name: "onnx of another component",
            setup: |p| {
                std::fs::copy(p.path("onnx/tiny/action_step.onnx"), p.path(ONNX))
                    .map(|_| ())
                    .unwrap()
            },
            args: BUILD,
            code: 2,
            says: &["is not a graph input"],
        },
        Case {
            name: "recipe shape differs from the graph",
            setup: |p| {
                edit(
                    p,
                    RECIPE,
                    "shape = [8, 1, 130, 32]",
                    "shape = [8, 1, 131, 32]",
                )
            },
            args: BUILD,
            code: 2,
            says: &["keys", "[8, 1, 131, 32]"],
        },
    ]
}

/// Recipe values out of range, missing or repeated.
fn recipe_cases() -> Vec<Case> {
    vec![
        Case {
            name: "min_cosine = nan",
            setup: |p| edit(p, RECIPE, "min_cosine = 0.9999", "min_cosine = nan"),
            args: PARITY,
            code: 2,
            says: &[
                "recipes/tiny/action_context.toml:",
                "parity.min_cosine = NaN",
            ],
        },
        Case {
            name: "min_cosine = -2.0",
            setup: |p| edit(p, RECIPE, "min_cosine = 0.9999", "min_cosine = -2.0"),
            args: BUILD,
            code: 2,
            says: &["action_context.toml:", "parity.min_cosine = -2", "[0, 1]"],
        },
        Case {
            name: "min_cosine = 1.5",
            setup: |p| edit(p, RECIPE, "min_cosine = 0.9999", "min_cosine = 1.5"),
            args: PARITY,
            code: 2,
            says: &["parity.min_cosine = 1.5"],
        },
        Case {
            name: "atol negative",
            setup: |p| edit(p, RECIPE, "atol = 1e-4", "atol = -1e-4"),
            args: PARITY,
            code: 2,
            says: &["action_context.toml:", "parity.atol"],
        },
        Case {
            name: "override without a reason",
            setup: |p| {
                let path = p.path(RECIPE);
                let mut t = std::fs::read_to_string(&path).unwrap();
                t.push_str(
                    "\n[[parity.override]]\nbackend = \"htp\"\nmin_cosine = 0.99\nreason = \"\"\n",
                );
                std::fs::write(path, t).unwrap();
            },
            args: PARITY,
            code: 2,
            says: &["parity.override.reason", "needs a written `reason`"],
        },
        Case {
            name: "duplicate components",
            setup: |p| {
                edit(
                    p,
                    "recipes/tiny/model.toml",
                    "components = [\"vision\",",
                    "components = [\"vision\", \"vision\",",
                )
            },
            args: PARITY,
            code: 2,
            says: &["model.toml:", "lists component `vision` twice"],
        },
    ]
}

/// Paths leaving the project (absolute, `..`, symlinks, external data) and model names that
/// are paths.
fn path_cases() -> Vec<Case> {
    vec![
        Case {
            name: "absolute ONNX path",
            setup: |p| {
                edit(
                    p,
                    RECIPE,
                    "onnx = \"onnx/tiny/action_context.onnx\"",
                    "onnx = \"/etc/hostname\"",
                )
            },
            args: PARITY,
            code: 2,
            says: &[
                "component.onnx",
                "outside the project root",
                "XTASK_DATA_ROOT",
            ],
        },
        Case {
            name: "golden at ../../..",
            setup: |p| {
                edit(
                    p,
                    RECIPE,
                    "file = \"golden/tiny/action_context_io.npz\"",
                    "file = \"../../../golden/tiny/action_context_io.npz\"",
                )
            },
            args: BUILD,
            code: 2,
            says: &["golden.file", "outside the project root"],
        },
        Case {
            name: "symlink in onnx/ pointing outside",
            setup: |p| {
                let outside =
                    std::env::temp_dir().join(format!("xtask-hostile-{}", std::process::id()));
                std::fs::create_dir_all(&outside).unwrap();
                std::fs::copy(p.path(ONNX), outside.join("a.onnx")).unwrap();
                std::fs::remove_file(p.path(ONNX)).unwrap();
                std::os::unix::fs::symlink(outside.join("a.onnx"), p.path(ONNX)).unwrap();
            },
            args: PARITY,
            code: 2,
            says: &["component.onnx", "outside the project root"],
        },
        Case {
            name: "external data leaving the project",
            setup: |p| {
                let path = p.path("onnx/tiny/llm_split0.onnx");
                let b = std::fs::read(&path).unwrap();
                let from = b"llm_split0.onnx.data";
                let to = b"../../../etc/hostnam";
                let at = b.windows(from.len()).position(|w| w == from).unwrap();
                let mut edited = b.clone();
                edited[at..at + from.len()].copy_from_slice(to);
                std::fs::write(&path, edited).unwrap();
            },
            args: &["parity", "--backend", "ort", "--only", "llm_split0"],
            code: 2,
            says: &["external data", "outside the project root"],
        },
        Case {
            name: "--model ../x",
            setup: |_| {},
            args: &["parity", "--backend", "ort", "--model", "../x"],
            code: 2,
            says: &["is not a model name"],
        },
        Case {
            name: "--model with a separator (run)",
            setup: |_| {},
            args: &["run", "--backend", "ort", "--model", "tiny/../tiny"],
            code: 2,
            says: &["is not a model name"],
        },
    ]
}

#[test]
fn every_hostile_input_ends_in_its_exit_code_and_message() {
    let mut failures = Vec::new();
    let mut table = Vec::new();
    for case in corpus() {
        let p = Scratch::tiny();
        (case.setup)(&p);
        let run: Run = p.run(case.args);
        let all = run.all();
        let lines: Vec<&str> = run.stderr.lines().chain(run.stdout.lines()).collect();
        let at = lines
            .iter()
            .position(|l| l.contains("error") || l.contains("FAIL") || l.contains("offender"));
        // A summary line ending in ':' is followed by the line that says what is wrong.
        let first_error = match at {
            Some(i) if lines[i].ends_with(':') && i + 1 < lines.len() => {
                format!("{} {}", lines[i], lines[i + 1].trim())
            }
            Some(i) => lines[i].to_string(),
            None => String::new(),
        };
        table.push(format!(
            "| {} | {} | {} |",
            case.name, run.code, first_error
        ));
        let missing: Vec<&str> = case
            .says
            .iter()
            .copied()
            .filter(|s| !all.contains(s))
            .collect();
        if run.code != case.code || !missing.is_empty() || all.contains("panicked") {
            failures.push(format!(
                "{}: exit {} (expected {}), missing {missing:?}\n{all}",
                case.name, run.code, case.code
            ));
        }
        assert!(
            !p.path("ctx/tiny/action_context.dlc").exists() || case.code != 2,
            "{}: bad input wrote an artifact",
            case.name
        );
    }
    // The folder outside the project one case planted (nothing of the suite stays in /tmp).
    let _ = std::fs::remove_dir_all(
        std::env::temp_dir().join(format!("xtask-hostile-{}", std::process::id())),
    );
    println!("{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The data-root opt-in: a symlink to XTASK_DATA_ROOT is accepted and recorded in the report.
#[test]
fn data_may_live_in_the_recorded_data_root() {
    let p = Scratch::tiny();
    let data = tempfile::tempdir().unwrap();
    std::fs::copy(p.path(ONNX), data.path().join("a.onnx")).unwrap();
    std::fs::remove_file(p.path(ONNX)).unwrap();
    std::os::unix::fs::symlink(data.path().join("a.onnx"), p.path(ONNX)).unwrap();
    p.run(PARITY).assert_code(2);
    let mut cmd = p.command(PARITY);
    cmd.env("XTASK_DATA_ROOT", data.path());
    let run = Run::from(cmd.output().unwrap());
    run.assert_code(0);
    let report = common::read_json(&p.path("reports/tiny/parity-ort.json"));
    assert_eq!(
        report["versions"]["data_root"].as_str(),
        Some(data.path().to_str().unwrap()),
        "{report}"
    );
}
