//! Graph rewrites as recipe options (`[rewrite] apply = [...]`). The fixture is generated here
//! with the crate's own ONNX builder: a ViT-style MLP whose activation is
//! `Gelu(approximate="tanh")` (PyTorch's `gelu(approximate="tanh")`, SigLIP's
//! `gelu_pytorch_tanh`), which QNN 2.47's CPU backend computes as the exact erf Gelu. Its golden
//! comes from an f64 reference of the ONNX formula, not from ONNX Runtime.

use crate::common;

use std::collections::BTreeMap;
use std::f64::consts::PI;

use common::{Scratch, read_json, sha256_hex};
use ndarray::{ArrayD, IxDyn};
use xtask_onnx::onnx::builder::{Attr, Graph, Node};
use xtask_onnx::onnx::writer::seeded_weights;
use xtask_onnx::tensor::{Tensor, write_npz};

const MODEL: &str = "gelu_mlp";
const TOKENS: usize = 16;
const WIDTH: usize = 48;
const HIDDEN: usize = 96;

/// The ONNX operator's formula in f64.
fn gelu_tanh(x: f64) -> f64 {
    0.5 * x * (1.0 + ((2.0 / PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
}

fn f32_tensor(shape: &[usize], v: Vec<f32>) -> Tensor {
    Tensor::F32(ArrayD::from_shape_vec(IxDyn(shape), v).unwrap())
}

/// Writes model `gelu_mlp` (component `mlp`: `y = Gelu_tanh(x·W1 + b1)·W2`) into the scratch
/// project; `rewrite` is the recipe's `[rewrite]` table, appended as written.
fn write_fixture(p: &Scratch, rewrite: &str) {
    let w1 = seeded_weights(WIDTH * HIDDEN, 11, 3.0 / (WIDTH as f32).sqrt());
    let b1 = seeded_weights(HIDDEN, 12, 0.5);
    let w2 = seeded_weights(HIDDEN * WIDTH, 13, 1.0 / (HIDDEN as f32).sqrt());
    let x = seeded_weights(TOKENS * WIDTH, 14, 2.0);
    let graph = Graph {
        name: MODEL.into(),
        inputs: vec![("x".into(), vec![1, TOKENS, WIDTH])],
        outputs: vec![("y".into(), vec![1, TOKENS, WIDTH])],
        initializers: vec![
            ("w1".into(), vec![WIDTH, HIDDEN], w1.clone()),
            ("b1".into(), vec![HIDDEN], b1.clone()),
            ("w2".into(), vec![HIDDEN, WIDTH], w2.clone()),
        ],
        nodes: vec![
            Node::new("MatMul", "fc1", &["x", "w1"], &["h0"]),
            Node::new("Add", "fc1_bias", &["h0", "b1"], &["h"]),
            Node::new("Gelu", "act", &["h"], &["g"]).attr("approximate", Attr::Str("tanh".into())),
            Node::new("MatMul", "fc2", &["g", "w2"], &["y"]),
        ],
    };
    std::fs::create_dir_all(p.path(&format!("onnx/{MODEL}"))).unwrap();
    graph
        .write(&p.path(&format!("onnx/{MODEL}/mlp.onnx")), 20)
        .unwrap();
    let mut y = vec![0f32; TOKENS * WIDTH];
    for t in 0..TOKENS {
        let g: Vec<f64> = (0..HIDDEN)
            .map(|j| {
                let h: f64 = (0..WIDTH)
                    .map(|i| f64::from(x[t * WIDTH + i]) * f64::from(w1[i * HIDDEN + j]))
                    .sum::<f64>()
                    + f64::from(b1[j]);
                gelu_tanh(h)
            })
            .collect();
        for o in 0..WIDTH {
            let v: f64 = (0..HIDDEN)
                .map(|j| g[j] * f64::from(w2[j * WIDTH + o]))
                .sum();
            y[t * WIDTH + o] = v as f32;
        }
    }
    let io = BTreeMap::from([
        ("x".to_string(), f32_tensor(&[1, TOKENS, WIDTH], x)),
        ("y".to_string(), f32_tensor(&[1, TOKENS, WIDTH], y)),
    ]);
    std::fs::create_dir_all(p.path(&format!("golden/{MODEL}"))).unwrap();
    write_npz(&p.path(&format!("golden/{MODEL}/mlp_io.npz")), &io).unwrap();
    std::fs::create_dir_all(p.path(&format!("recipes/{MODEL}"))).unwrap();
    std::fs::write(
        p.path(&format!("recipes/{MODEL}/model.toml")),
        format!("[model]\nname = \"{MODEL}\"\nfamily = \"graphs\"\ncomponents = [\"mlp\"]\nseq_len = 1\n\n[target]\nqairt = \"2.47.0\"\nsoc = 77\nhtp_arch = 73\n\n[[parity.override]]\nbackend = \"htp\"\nmin_cosine = 0.999\nreason = \"fp16 weights and activations on the HTP\"\n"),
    )
    .unwrap();
    write_recipe(p, rewrite);
}

fn write_recipe(p: &Scratch, rewrite: &str) {
    let shape = [1, TOKENS, WIDTH];
    std::fs::write(
        p.path(&format!("recipes/{MODEL}/mlp.toml")),
        format!(
            "[component]\nname = \"mlp\"\nonnx = \"onnx/{MODEL}/mlp.onnx\"\n\n[golden]\nfile = \"golden/{MODEL}/mlp_io.npz\"\n\n\
             [[inputs]]\nname = \"x\"\nshape = {shape:?}\ndtype = \"f32\"\ngolden_key = \"x\"\n\n\
             [[outputs]]\nname = \"y\"\nshape = {shape:?}\ndtype = \"f32\"\ngolden_key = \"y\"\n\n\
             [convert]\nfloat_bitwidth = 32\npreserve_io_datatype = true\n\n\
             [context]\ngraph_name = \"mlp\"\noptimization_level = 3\nfp16 = true\n{rewrite}"
        ),
    )
    .unwrap();
}

const REWRITE: &str = "\n[rewrite]\napply = [\"decompose_gelu_tanh\"]\n";

/// The fixture's build on SoC 77.
const BUILD: [&str; 5] = ["build-ctx", "--soc", "77", "--model", MODEL];

/// The `--dry-run --json` plan of the fixture's build, with `extra` arguments.
fn dry_run_plan(p: &Scratch, extra: &[&str]) -> serde_json::Value {
    let args: Vec<&str> = BUILD
        .iter()
        .chain(extra)
        .chain(&["--dry-run", "--json"])
        .copied()
        .collect();
    let run = p.run(&args);
    run.assert_code(0);
    serde_json::from_str(&run.stdout).unwrap()
}

/// `parity --backend <b>` on the fixture: (cosine, max abs error, session model) of `y`.
fn parity(p: &Scratch, backend: &str) -> (f64, f64, String) {
    p.run(&["parity", "--backend", backend, "--model", MODEL])
        .assert_code(0);
    let report = read_json(&p.path(&format!("reports/{MODEL}/parity-{backend}.json")));
    let c = &report["components"][0];
    let m = &c["outputs"][0]["metrics"];
    (
        m["cosine"].as_f64().unwrap(),
        m["max_abs_err"].as_f64().unwrap(),
        c["session_model"].as_str().unwrap().to_string(),
    )
}

/// The recipe option end to end: the QNN CPU cosine of the component, measured without and
/// with the rewrite (and without again: the rise is the rewrite's), ORT parity unchanged on
/// the original ONNX, the committed ONNX untouched, the build's fingerprint dirty with the
/// rewrite as the reason, the build report and the card stating it.
#[test]
fn a_recipe_rewrite_raises_the_qnn_cpu_cosine_and_is_fingerprinted_and_stated() {
    let p = Scratch::tiny();
    write_fixture(&p, "");
    let onnx = p.path(&format!("onnx/{MODEL}/mlp.onnx"));
    let onnx_sha = sha256_hex(&onnx);
    let ort_before = parity(&p, "ort");
    let cpu_before = parity(&p, "cpu");
    p.run(&BUILD).assert_code(0);
    let htp_before = parity(&p, "htp");

    write_recipe(&p, REWRITE);
    let ort_with = parity(&p, "ort");
    let cpu_with = parity(&p, "cpu");
    eprintln!(
        "{MODEL}/mlp on QNN CPU: cosine {:.12} max abs {:.3e} without the rewrite, cosine {:.12} max abs {:.3e} with it; ORT cosine {:.12} / {:.12}",
        cpu_before.0, cpu_before.1, cpu_with.0, cpu_with.1, ort_before.0, ort_with.0
    );
    assert!(cpu_with.0 > cpu_before.0, "{cpu_before:?} -> {cpu_with:?}");
    assert!(
        cpu_with.1 < cpu_before.1 / 10.0,
        "{cpu_before:?} -> {cpu_with:?}"
    );
    assert_eq!(cpu_with.2, format!("target/rewrite/{MODEL}/mlp/mlp.onnx"));
    let md = std::fs::read_to_string(p.path(&format!("reports/{MODEL}/parity-cpu.md"))).unwrap();
    assert!(
        md.contains("- `mlp` ran `target/rewrite/gelu_mlp/mlp/mlp.onnx`, the copy"),
        "{md}"
    );
    assert_eq!(
        ort_with, ort_before,
        "ORT judges the recipe's ONNX either way"
    );
    assert_eq!(ort_with.2, format!("onnx/{MODEL}/mlp.onnx"));
    assert!(ort_with.0 > 1.0 - 1e-12, "{ort_with:?}");

    // The fingerprint: the convert step is dirty because of the rewrite, the rest follows.
    // The convert step's plan entry, asserting it is dirty for `reason` on the rewrites part.
    let convert_dirty_for = |p: &Scratch, reason: &str| -> serde_json::Value {
        let convert = dry_run_plan(p, &[])["components"][0]["steps"][0].clone();
        assert_eq!(
            convert["reasons"],
            serde_json::json!([{ "reason": reason, "part": "graph rewrites" }]),
            "{convert}"
        );
        convert
    };
    let convert = convert_dirty_for(&p, "part_new");
    assert_eq!(
        convert["key_parts"]["graph rewrites"],
        "decompose_gelu_tanh v1"
    );
    let built = p.run(&BUILD);
    built.assert_code(0);
    let md = std::fs::read_to_string(p.path(&format!("reports/{MODEL}/build-soc77.md"))).unwrap();
    assert!(md.contains("## Graph rewrites"), "{md}");
    assert!(
        md.contains("| `mlp` | decompose_gelu_tanh v1 | 1 |") && md.contains("y cosine 1.00000000"),
        "{md}"
    );
    assert_eq!(
        sha256_hex(&onnx),
        onnx_sha,
        "the committed ONNX is never edited"
    );
    let record = read_json(&p.path(&format!("ctx/{MODEL}/mlp.record.json")));
    let facts = &record["steps"]["convert"]["facts"]["rewrites"];
    assert_eq!(
        facts["applied"][0]["nodes"],
        serde_json::json!(["act"]),
        "{facts}"
    );
    assert_eq!(facts["ort_pass"], true);
    // The HTP still passes its gate with the rewritten graph.
    let htp = parity(&p, "htp");
    eprintln!(
        "{MODEL}/mlp on the HTP: cosine {:.8} max abs {:.3e} without the rewrite, cosine {:.8} max abs {:.3e} with it",
        htp_before.0, htp_before.1, htp.0, htp.1
    );

    // The card states it, from the record.
    let out = p.path("bundle");
    p.run(&[
        "package",
        "--allow-unmeasured",
        "--model",
        MODEL,
        "--soc",
        "77",
        "--out",
        out.to_str().unwrap(),
    ])
    .assert_code(0);
    let card = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(
        card.contains("Graph rewrites: QNN built these contexts from a rewritten copy"),
        "{card}"
    );
    assert!(
        card.contains("| `mlp` | decompose_gelu_tanh v1 | 1 |"),
        "{card}"
    );
    p.run(&["verify", out.to_str().unwrap()]).assert_code(0);

    // Removing the rewrite: dirty again, named; the QNN CPU cosine falls back.
    write_recipe(&p, "");
    convert_dirty_for(&p, "part_removed");
    assert_eq!(
        parity(&p, "cpu"),
        cpu_before,
        "without the rewrite QNN computes the erf Gelu again"
    );
}

/// An unknown rewrite name is refused when the recipe loads, with its file, line and key and
/// the list of known rewrites; a known rewrite that matches no node of the graph is refused
/// before any step runs.
#[test]
fn unknown_or_unmatched_rewrites_are_refused_with_file_and_line() {
    let p = Scratch::tiny();
    write_fixture(&p, "\n[rewrite]\napply = [\"decompose_everything\"]\n");
    let recipe = std::fs::read_to_string(p.path(&format!("recipes/{MODEL}/mlp.toml"))).unwrap();
    let line = recipe
        .lines()
        .position(|l| l.starts_with("apply ="))
        .unwrap()
        + 1;
    let run = p.run(&["parity", "--backend", "cpu", "--model", MODEL]);
    run.assert_refused(2, &format!(
            "recipes/{MODEL}/mlp.toml:{line}: rewrite.apply: unknown rewrite \"decompose_everything\"; known rewrites: decompose_gelu_tanh v1"
        ));
    write_recipe(
        &p,
        "\n[rewrite]\napply = [\"decompose_gelu_tanh\", \"decompose_gelu_tanh\"]\n",
    );
    let run = p.run(&BUILD);
    run.assert_refused(
        2,
        &format!("mlp.toml:{line}: rewrite.apply: rewrite \"decompose_gelu_tanh\" is listed twice"),
    );

    // The tiny vision graph has no Gelu(approximate="tanh").
    let vision = p.path("recipes/tiny/vision.toml");
    let text = std::fs::read_to_string(&vision).unwrap();
    std::fs::write(&vision, format!("{text}{REWRITE}")).unwrap();
    let line = text.lines().count() + 3;
    let run = p.run(&["build-ctx", "--soc", "77", "--only", "vision"]);
    run.assert_refused(2, &format!(
            "recipes/tiny/vision.toml:{line}: rewrite.apply: rewrite \"decompose_gelu_tanh\" matches no node of onnx/tiny/vision.onnx"
        ));
}

/// The QAIRT SDK toolchain converts the rewritten copy too: its converter is given the copy,
/// and the DLC run by `qnn-net-run` on the CPU backend (the test double runs the DLC's graph
/// on QNN's CPU backend) rises like the embedded build's.
#[test]
fn the_sdk_toolchain_converts_the_rewritten_copy() {
    let p = Scratch::tiny();
    let cpu_cosine = |p: &Scratch| -> f64 {
        let args = [BUILD.as_slice(), &["--toolchain", "sdk"]].concat();
        common::run_sdk(p, &common::double_root(), &args, &[]).assert_code(0);
        let record = read_json(&p.path(&format!("ctx/{MODEL}/mlp.record.json")));
        record["steps"]["cpu_parity"]["detail"]["result"]["outputs"][0]["metrics"]["cosine"]
            .as_f64()
            .unwrap()
    };
    write_fixture(&p, "");
    let before = cpu_cosine(&p);
    write_recipe(&p, REWRITE);
    let after = cpu_cosine(&p);
    eprintln!("SDK toolchain, qnn-net-run on the CPU backend: cosine {before:.12} -> {after:.12}");
    assert!(after > before, "{before} -> {after}");
    let log = std::fs::read_to_string(p.path(&format!("reports/{MODEL}/logs/mlp-convert.log")))
        .unwrap_or_default();
    let plan = dry_run_plan(&p, &["--toolchain", "sdk"]);
    let command = plan["components"][0]["steps"][0]["commands"][0]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        command.contains(&format!(
            "--input_network target/rewrite/{MODEL}/mlp/mlp.onnx"
        )),
        "{command}\n{log}"
    );
}
