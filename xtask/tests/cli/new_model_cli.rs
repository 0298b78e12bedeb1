//! A new model by recipe alone: `tiny-uneven` (LLM splits of 1+3+2+2 layers, three Euler
//! steps, per-dim de-normalisation, a trace under another exporter's tensor names) passes
//! `parity` and `run` on ort and cpu with no code of its own; its recipe's de-normalisation
//! and trace key mapping decide the result (changed, the run fails), and bad values are
//! refused with file:line: key and exit 2.

use crate::common;

use common::{Scratch, read_json};

const MODEL: &str = "tiny-uneven";
const RECIPE: &str = "recipes/tiny-uneven/model.toml";

/// The scratch project's model.toml with `from` replaced by `to` (which must be there once).
fn edit_recipe(p: &Scratch, from: &str, to: &str) {
    let path = p.path(RECIPE);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.matches(from).count(), 1, "{from:?} in {RECIPE}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

/// 1-based line of the first line of the scratch model.toml that starts with `start`.
fn line_of(p: &Scratch, start: &str) -> usize {
    common::line_of(&std::fs::read_to_string(p.path(RECIPE)).unwrap(), start)
}

/// One untimed chain run on `backend`.
fn run_on(p: &Scratch, backend: &str) -> common::Run {
    p.run(&[
        "run",
        "--backend",
        backend,
        "--model",
        MODEL,
        "--iters",
        "1",
        "--warmup",
        "0",
    ])
}

#[test]
fn the_uneven_three_step_model_passes_parity_and_run_on_ort_and_cpu() {
    let p = Scratch::with_model(MODEL);
    for backend in ["ort", "cpu"] {
        p.run(&["parity", "--backend", backend, "--model", MODEL])
            .assert_code(0);
        let parity = read_json(&p.path(&format!("reports/{MODEL}/parity-{backend}.json")));
        let comps = parity["components"].as_array().unwrap();
        assert_eq!(comps.len(), 7);
        assert!(comps.iter().all(|c| c["pass"] == true), "{parity}");

        let run = run_on(&p, backend);
        run.assert_code(0);
        assert!(
            run.stdout.contains(
                "4 LLM splits of 1+3+2+2 = 8 layers · 3 Euler steps (t = 0, 0.33333334, 0.6666667) · action dims 0..3 clip+denorm, 4 denorm, 5 clip, 6 pass"
            ),
            "{}",
            run.all()
        );
        let report = read_json(&p.path(&format!(
            "reports/{MODEL}/run-{backend}-iters1-warmup0.json"
        )));
        assert_eq!(report["pass"], true);
        let layers: Vec<u64> = report["layout"]["llm_splits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["layers"].as_u64().unwrap())
            .collect();
        assert_eq!(layers, [1, 3, 2, 2]);
        assert_eq!(report["layout"]["timesteps"].as_array().unwrap().len(), 3);
        let boundaries = report["boundaries"].as_array().unwrap();
        let shape_of = |name: &str| -> Vec<u64> {
            let b = boundaries
                .iter()
                .find(|b| b["name"] == name)
                .unwrap_or_else(|| panic!("{name} missing from {report}"));
            assert_eq!(b["status"], "pass", "{b}");
            b["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap())
                .collect()
        };
        // Every split's K/V at its own depth, gated against its golden.
        for (split, l) in [(0, 1), (1, 3), (2, 2), (3, 2)] {
            assert_eq!(shape_of(&format!("llm_split{split}/keys")), [l, 1, 130, 16]);
            assert_eq!(
                shape_of(&format!("llm_split{split}/values")),
                [l, 1, 130, 16]
            );
        }
        assert_eq!(shape_of("action_context/k_ctx"), [8, 1, 130, 16]);
        // Three Euler steps, each against the trace's (renamed) step output.
        for name in [
            "euler step 0 (t=0)/trajectory",
            "euler step 1 (t=0.33333334)/trajectory",
            "euler step 2 (t=0.6666667)/trajectory",
        ] {
            assert_eq!(shape_of(name), [1, 10, 32]);
        }
        assert!(!boundaries.iter().any(|b| {
            b["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("euler step 3"))
        }));
        assert_eq!(shape_of("actions"), [1, 10, 7]);
        assert!(report["ungated"].as_array().unwrap().is_empty(), "{report}");
        assert_eq!(report["keys_per_layer_cosine"].as_array().unwrap().len(), 8);
        let err = report["actions_max_abs_err"].as_f64().unwrap();
        assert!(err <= 1e-4, "{backend}: actions max abs err {err}");
    }
}

#[test]
fn the_recipes_de_normalisation_decides_the_actions() {
    // The final trajectory of dims 4, 5 and 6 leaves [-1, 1] (the generator asserts it), so
    // each change below moves the actions, and only the actions.
    for (from, to) in [
        ("5 = \"clip\"", "5 = \"pass\""),
        ("6 = \"pass\"", "6 = \"clip\""),
        ("4 = \"denorm\"", "4 = \"clip+denorm\""),
    ] {
        let p = Scratch::with_model(MODEL);
        edit_recipe(&p, from, to);
        let run = run_on(&p, "ort");
        run.assert_code(1);
        assert!(
            run.stdout.contains("FAIL actions: "),
            "{from} -> {to}: {}",
            run.all()
        );
        let report = read_json(&p.path(&format!("reports/{MODEL}/run-ort-iters1-warmup0.json")));
        let failures = report["failures"].as_array().unwrap();
        assert!(!failures.is_empty());
        for f in failures {
            assert!(
                f.as_str().unwrap().starts_with("actions: "),
                "{from} -> {to}: {f}"
            );
        }
        let before = report["boundaries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["name"] == "normalized actions (before clipping)")
            .unwrap();
        assert_eq!(before["status"], "pass", "{from} -> {to}");
    }
}

#[test]
fn the_trace_key_mapping_is_what_finds_the_tensors() {
    // Mapped to the wrong (existing) tensor: q01 is q99, refused when the trace is read (not
    // left to fail the actions' gate), naming both keys.
    let p = Scratch::with_model(MODEL);
    edit_recipe(&p, "q01 = \"norm_low\"", "q01 = \"norm_high\"");
    run_on(&p, "ort").assert_refused(
        2,
        "`norm_high` (our `q01`) is not below `norm_high` (our `q99`) at dim 0",
    );

    // Mapped to a name the file lacks: exit 2, naming both names, the file and the line.
    let p = Scratch::with_model(MODEL);
    edit_recipe(
        &p,
        "initial_noise = \"x0_noise\"",
        "initial_noise = \"x0_noize\"",
    );
    let line = line_of(&p, "initial_noise =");
    let run = run_on(&p, "ort");
    run.assert_refused(2, &format!(
            "golden/{MODEL}/trace.npz has no tensor of the name the recipe maps to:\n  `x0_noize`, which {RECIPE}:{line}: host.trace_keys.initial_noise names for our `initial_noise`"
        ));
    assert!(
        run.stderr.contains("x0_noise"),
        "lists what the file holds: {}",
        run.all()
    );

    // The step template too: one name per step.
    let p = Scratch::with_model(MODEL);
    edit_recipe(&p, "= \"flow_step_{i}_output\"", "= \"flow_step_{i}_out\"");
    let run = run_on(&p, "ort");
    run.assert_refused(2, "`flow_step_2_out`, which")
        .assert_refused(2, "names for our `trajectory_step2_out`");

    // Without the mapping the trace's names are not ours: the host inputs are missing.
    let p = Scratch::with_model(MODEL);
    let path = p.path(RECIPE);
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text.find("\n[host.trace_keys]\n").unwrap();
    let end = start + 1 + text[start + 1..].find("\n\n").unwrap();
    std::fs::write(&path, format!("{}{}", &text[..start], &text[end..])).unwrap();
    let run = run_on(&p, "ort");
    run.assert_refused(
        2,
        &format!("golden/{MODEL}/trace.npz: the golden has no host tensors [\"prompt_embeds\""),
    );
}

#[test]
fn bad_host_values_are_refused_with_file_line_and_key() {
    let cases = [
        (
            "norm_mode = \"q01_q99\"",
            "norm_mode = \"mean_std\"",
            "norm_mode =",
            "host.norm_mode = \"mean_std\" is not implemented (implemented: \"q01_q99\")",
        ),
        (
            "6 = \"pass\" }",
            "7 = \"pass\" }",
            "dims =",
            "host.denorm.dims.7: not a used action dim: dims are numbered 0..6 (action_dim_used = 7)",
        ),
        (
            "5 = \"clip\"",
            "5 = \"clamp\"",
            "dims =",
            "host.denorm.dims.5 = \"clamp\" is not a de-normalisation mode",
        ),
        (
            "action_dim_used = 7",
            "action_dim_used = 7\ngripper_dim = 6",
            "gripper_dim =",
            "host.gripper_dim = 6 and [host.denorm] both say how dims are de-normalised",
        ),
        (
            "actions = \"robot_actions\"",
            "action = \"robot_actions\"",
            "action =",
            "host.trace_keys.action: not a trace tensor the chain reads",
        ),
    ];
    for (from, to, key_line, message) in cases {
        let p = Scratch::with_model(MODEL);
        edit_recipe(&p, from, to);
        let line = line_of(&p, key_line);
        for args in [
            &["run", "--backend", "ort", "--model", MODEL][..],
            &["parity", "--backend", "cpu", "--model", MODEL][..],
        ] {
            let run = p.run(args);
            run.assert_code(2);
            let want = format!("{RECIPE}:{line}: {message}");
            assert!(run.stderr.contains(&want), "{want}\n{}", run.all());
        }
    }
}
