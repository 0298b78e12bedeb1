//! The hostile suite, part two: names that would become paths or arguments, gates that would
//! mean nothing, and values that crashed or were silently accepted. Every case runs in a
//! sandbox whose sentinel folder and secret file must stay untouched and unread.

use crate::common;
use crate::sandbox::{Case, Sandbox, edit, nothing, run_cases};

const RECIPE: &str = "recipes/tiny/action_context.toml";
const MODEL: &str = "recipes/tiny/model.toml";
const GOLDEN: &str = "golden/tiny/action_context_io.npz";
const PARITY: &[&str] = &["parity", "--backend", "ort", "--only", "action_context"];
const BUILD: &[&str] = &["build-ctx", "--soc", "77", "--only", "action_context"];
const RUN: &[&str] = &["run", "--backend", "ort", "--iters", "1", "--warmup", "0"];

fn no_artifact(s: &Sandbox) {
    assert!(!s.p.path("ctx/tiny/action_context.dlc").exists());
}

fn no_dist_nor_lock(s: &Sandbox) {
    assert!(!s.p.path("dist").exists(), "dist/ was created");
    let locks = walkdir::WalkDir::new(s.p.dir.path())
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name() == ".bundle.lock")
        .count();
    assert_eq!(locks, 0, "a .bundle.lock was left");
}

fn names() -> Vec<Case> {
    vec![
        Case {
            name: "component ../../../outside/evil in model.toml",
            setup: |s| {
                edit(
                    &s.p,
                    MODEL,
                    "components = [\"vision\",",
                    "components = [\"../../../outside/evil\", \"vision\",",
                )
            },
            args: BUILD,
            env: &[],
            code: 2,
            says: &[
                "model.toml:",
                "model.components = \"../../../outside/evil\"",
                "not a plain name",
            ],
            after: no_artifact,
        },
        Case {
            name: "release --model ../../x",
            setup: nothing,
            args: &[
                "release",
                "--repo",
                "someone/tiny",
                "--model",
                "../../x",
                "--dry-run",
            ],
            env: &[],
            code: 2,
            says: &["is not a model name"],
            after: nothing,
        },
        Case {
            name: "bisect --model ../x",
            setup: nothing,
            args: &[
                "bisect",
                "action_context",
                "--backend",
                "cpu",
                "--model",
                "../x",
            ],
            env: &[],
            code: 2,
            says: &["is not a model name"],
            after: nothing,
        },
        Case {
            name: "graph_name = \"../../x;id\"",
            setup: |s| {
                edit(
                    &s.p,
                    RECIPE,
                    "graph_name = \"action_context\"",
                    "graph_name = \"../../x;id\"",
                )
            },
            args: BUILD,
            env: &[],
            code: 2,
            says: &[
                "action_context.toml:",
                "context.graph_name = \"../../x;id\"",
            ],
            after: no_artifact,
        },
    ]
}

fn gates() -> Vec<Case> {
    vec![
        Case {
            name: "golden output x 1e6 (cosine 1)",
            setup: |s| {
                common::edit_golden(&s.p.path(GOLDEN), "k_ctx", |a| a.mapv_inplace(|v| v * 1e6))
            },
            args: PARITY,
            env: &[],
            code: 1,
            says: &["scale: |output| / |golden|", "k_ctx"],
            after: nothing,
        },
        Case {
            name: "golden output x 1e-42 (cosine 1)",
            setup: |s| {
                common::edit_golden(&s.p.path(GOLDEN), "v_ctx", |a| {
                    a.mapv_inplace(|v| v * 1e-42)
                })
            },
            args: PARITY,
            env: &[],
            code: 1,
            says: &["scale: |output| / |golden|", "v_ctx"],
            after: nothing,
        },
        Case {
            name: "min_cosine = -1",
            setup: |s| edit(&s.p, RECIPE, "min_cosine = 0.9999", "min_cosine = -1.0"),
            args: PARITY,
            env: &[],
            code: 2,
            says: &["action_context.toml:", "parity.min_cosine = -1", "[0, 1]"],
            after: nothing,
        },
        Case {
            name: "actions_max_abs htp = 1e300",
            setup: |s| edit(&s.p, MODEL, "htp = 1e-2 }", "htp = 1e300 }"),
            args: RUN,
            env: &[],
            code: 2,
            says: &["model.toml:", "host.gate.actions_max_abs.htp = 1e300"],
            after: nothing,
        },
        Case {
            name: "atol = 1e300",
            setup: |s| edit(&s.p, RECIPE, "atol = 1e-4", "atol = 1e300"),
            args: PARITY,
            env: &[],
            code: 2,
            says: &["action_context.toml:", "parity.atol = 1e300"],
            after: nothing,
        },
        Case {
            name: "rtol = 5",
            setup: |s| edit(&s.p, RECIPE, "rtol = 1e-3", "rtol = 5.0"),
            args: PARITY,
            env: &[],
            code: 2,
            says: &["parity.rtol = 5", "[0, 1]"],
            after: nothing,
        },
        Case {
            name: "max_norm_ratio_error htp = 2",
            setup: |s| {
                edit(
                    &s.p,
                    RECIPE,
                    "rtol = 1e-3",
                    "rtol = 1e-3\nmax_norm_ratio_error = { htp = 2.0 }",
                )
            },
            args: PARITY,
            env: &[],
            code: 2,
            says: &[
                "action_context.toml:",
                "parity.max_norm_ratio_error.htp = 2",
            ],
            after: nothing,
        },
    ]
}

fn values() -> Vec<Case> {
    vec![
        Case {
            name: "action_dim_used = 33",
            setup: |s| edit(&s.p, MODEL, "action_dim_used = 7", "action_dim_used = 33"),
            args: RUN,
            env: &[],
            code: 2,
            says: &[
                "model.toml:",
                "host.action_dim_used = 33",
                "wider than the action tensor",
            ],
            after: nothing,
        },
        Case {
            name: "qairt = \"9.99.0\" (build-ctx)",
            setup: |s| edit(&s.p, MODEL, "qairt = \"2.47.0\"", "qairt = \"9.99.0\""),
            args: BUILD,
            env: &[],
            code: 2,
            says: &[
                "model.toml:",
                "target.qairt = \"9.99.0\"",
                "this tool drives QAIRT 2.47",
            ],
            after: no_artifact,
        },
        Case {
            name: "qairt = \"2.47.1\" (build-ctx, a runtime of 2.47.0)",
            setup: |s| edit(&s.p, MODEL, "qairt = \"2.47.0\"", "qairt = \"2.47.1\""),
            args: BUILD,
            env: &[],
            code: 2,
            says: &[
                "model.toml:",
                "target.qairt = \"2.47.1\"",
                "the QNN runtime here is",
            ],
            after: no_artifact,
        },
        Case {
            name: "qairt = \"9.99.0\" (doctor)",
            setup: |s| edit(&s.p, MODEL, "qairt = \"2.47.0\"", "qairt = \"9.99.0\""),
            args: &["doctor"],
            env: &[],
            code: 1,
            says: &["tiny: wants 9.99.0", "MISMATCH"],
            after: nothing,
        },
        Case {
            name: "soc = 999999",
            setup: |s| edit(&s.p, MODEL, "soc = 77", "soc = 999999"),
            args: PARITY,
            env: &[],
            code: 2,
            says: &["model.toml:", "target.soc", "unknown SoC `999999`"],
            after: nothing,
        },
        Case {
            name: "seq_len = 0",
            setup: |s| edit(&s.p, MODEL, "seq_len = 130", "seq_len = 0"),
            args: PARITY,
            env: &[],
            code: 2,
            says: &["model.toml:", "model.seq_len = 0"],
            after: nothing,
        },
        Case {
            name: "seq_len = 2^40",
            setup: |s| edit(&s.p, MODEL, "seq_len = 130", "seq_len = 1099511627776"),
            args: BUILD,
            env: &[],
            code: 2,
            says: &["model.seq_len = 1099511627776"],
            after: no_artifact,
        },
        Case {
            name: "bisect --threshold nan",
            setup: nothing,
            args: &[
                "bisect",
                "action_context",
                "--backend",
                "cpu",
                "--threshold",
                "nan",
            ],
            env: &[],
            code: 2,
            says: &["not a cosine threshold"],
            after: nothing,
        },
        Case {
            name: "XTASK_SSH_CONNECT_TIMEOUT=ten",
            setup: nothing,
            args: &[
                "parity",
                "--backend",
                "htp",
                "--only",
                "action_context",
                "--device",
                "ssh://root@127.0.0.1:1/w",
            ],
            env: &[("XTASK_SSH_CONNECT_TIMEOUT", "ten")],
            code: 2,
            says: &["XTASK_SSH_CONNECT_TIMEOUT=\"ten\" is not a timeout"],
            after: nothing,
        },
        Case {
            name: "ssh://root@127.0.0.1:1:2",
            setup: nothing,
            args: &[
                "parity",
                "--backend",
                "htp",
                "--only",
                "action_context",
                "--device",
                "ssh://root@127.0.0.1:1:2",
            ],
            env: &[],
            code: 2,
            says: &["127.0.0.1:1:2` has more than one `:`"],
            after: nothing,
        },
        Case {
            name: "package --out dist/a/../../onnx",
            setup: nothing,
            args: &[
                "package",
                "--allow-unmeasured",
                "--soc",
                "77",
                "--only",
                "action_context",
                "--out",
                "dist/a/../../onnx",
            ],
            env: &[],
            code: 2,
            says: &["--out dist/a/../../onnx resolves into the project's onnx/"],
            after: no_dist_nor_lock,
        },
        Case {
            name: "lint --report /dev/zero",
            setup: nothing,
            args: &["lint", "--report", "/dev/zero"],
            env: &[],
            code: 2,
            says: &["--report /dev/zero: not a regular file"],
            after: nothing,
        },
    ]
}

#[test]
fn hostile_names_are_refused_by_file_line_and_key() {
    run_cases(names());
}

#[test]
fn gates_catch_scale_errors_and_refuse_meaningless_thresholds() {
    run_cases(gates());
}

#[test]
fn crashing_and_silently_accepted_values_are_refused() {
    run_cases(values());
}

/// A package while a build of the model holds its lock: refused at once, saying so.
#[test]
fn package_during_a_running_build_says_a_build_is_running() {
    let s = Sandbox::new();
    std::fs::create_dir_all(s.p.path("ctx/tiny")).unwrap();
    let lock = std::fs::File::create(s.p.path("ctx/tiny/.build.lock")).unwrap();
    lock.lock().unwrap();
    let run = s.run(
        &[
            "package",
            "--allow-unmeasured",
            "--soc",
            "77",
            "--only",
            "action_context",
            "--out",
            "dist/t",
        ],
        &[],
    );
    run.assert_refused(2, "a build-ctx of model `tiny` is running");
    assert!(!run.stderr.contains("no build record"), "{}", run.all());
    assert!(!s.p.path("dist/t").exists());
    s.assert_untouched("package during a build");
}
