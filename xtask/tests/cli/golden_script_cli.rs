//! `xtask/scripts/write_golden.py`, the documented way to write a model's golden files from
//! one's own export: what it writes must be what the tool reads. A component golden written
//! from new inputs passes `parity --backend ort` (and the QNN CPU backend) on them, a wrong
//! reference fails parity, a float64 input is refused with nothing written, and a trace it
//! writes drives `run --backend ort` to a pass.
//!
//! Its Python packages (numpy, onnxruntime, pinned in `xtask/scripts/tinygen/requirements.txt`)
//! live in `target/tinygen-venv`, made by `ensure-venv.sh` (`common::pinned_python`).

use std::path::{Path, PathBuf};
use std::process::Command;

use ndarray::ArrayD;
use ndarray_npy::{NpzReader, NpzWriter};

use crate::common::{
    Run, Scratch, cosines, drop_npz_key, pinned_python, read_json, repo_root, sha256_hex,
};

/// `write_golden.py <args>` in the scratch project; a missing numpy/onnxruntime fails loudly.
fn script(s: &Scratch, args: &[&str]) -> Run {
    let out = Command::new(pinned_python())
        .arg(repo_root().join("xtask/scripts/write_golden.py"))
        .args(args)
        .current_dir(s.dir.path())
        .output()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", pinned_python().display()));
    let run = Run::from(out);
    assert!(
        !run.all().contains("ModuleNotFoundError") && !run.all().contains("not installed"),
        "the pinned venv lacks a package of requirements.txt\n{}",
        run.all()
    );
    run
}

fn read_all(path: &Path) -> Vec<(String, ArrayD<f32>)> {
    let mut r = NpzReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let names = r.names().unwrap();
    names
        .into_iter()
        .map(|n| {
            let a: ArrayD<f32> = r.by_name(&n).unwrap();
            (n.trim_end_matches(".npy").to_string(), a)
        })
        .collect()
}

fn write_npz(path: &Path, arrays: &[(&str, ArrayD<f32>)]) {
    let mut w = NpzWriter::new(std::fs::File::create(path).unwrap());
    for (name, a) in arrays {
        w.add_array(*name, a).unwrap();
    }
    w.finish().unwrap();
}

/// New inputs for `action_context` (not the committed ones): a deterministic ramp of the
/// committed shape, scaled like the real K/V.
fn new_context_inputs(s: &Scratch) -> PathBuf {
    let golden = read_all(&s.path("golden/tiny/action_context_io.npz"));
    let shape = golden
        .iter()
        .find(|(n, _)| n == "keys")
        .unwrap()
        .1
        .raw_dim();
    let ramp = |phase: f32| {
        let mut i = 0f32;
        ArrayD::from_shape_fn(shape.clone(), |_| {
            i += 1.0;
            (i * 0.37 + phase).sin() * 0.8
        })
    };
    let path = s.path("new_inputs.npz");
    write_npz(&path, &[("keys", ramp(0.0)), ("values", ramp(1.3))]);
    path
}

const GOLDEN: &str = "golden/tiny/action_context_io.npz";
const ONNX: &str = "onnx/tiny/action_context.onnx";

#[test]
fn a_component_golden_written_by_the_script_passes_parity() {
    let s = Scratch::tiny();
    let committed = sha256_hex(&s.path(GOLDEN));
    new_context_inputs(&s);
    std::fs::remove_file(s.path(GOLDEN)).unwrap();
    let run = script(
        &s,
        &[
            "component",
            "--onnx",
            ONNX,
            "--inputs",
            "new_inputs.npz",
            "--out",
            GOLDEN,
            "--recipe",
        ],
    );
    run.assert_code(0);
    assert!(
        run.stdout.contains("golden_key = \"k_ctx\""),
        "{}",
        run.all()
    );
    assert_ne!(
        sha256_hex(&s.path(GOLDEN)),
        committed,
        "the golden must hold the new inputs"
    );
    let written = read_all(&s.path(GOLDEN));
    let names: Vec<&str> = written.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["keys", "values", "k_ctx", "v_ctx"],
        "inputs first, graph order"
    );

    for backend in ["ort", "cpu"] {
        let parity = s.run(&["parity", "--backend", backend, "--only", "action_context"]);
        parity.assert_code(0);
        let report = read_json(&s.path(&format!("reports/tiny/parity-{backend}.json")));
        let cos = cosines(&report);
        assert_eq!(cos.len(), 2, "{cos:?}");
        assert!(cos.iter().all(|(_, _, c)| *c > 0.9999), "{cos:?}");
    }
}

#[test]
fn a_wrong_reference_fails_parity_and_a_float64_input_is_refused() {
    let s = Scratch::tiny();
    let committed = read_all(&s.path(GOLDEN));
    let get = |n: &str| committed.iter().find(|(k, _)| k == n).unwrap().1.clone();
    // The committed inputs with k_ctx and v_ctx swapped: a reference that disagrees with the graph.
    write_npz(
        &s.path("in.npz"),
        &[("keys", get("keys")), ("values", get("values"))],
    );
    write_npz(
        &s.path("ref.npz"),
        &[("k_ctx", get("v_ctx")), ("v_ctx", get("k_ctx"))],
    );
    let run = script(
        &s,
        &[
            "component",
            "--onnx",
            ONNX,
            "--inputs",
            "in.npz",
            "--outputs",
            "ref.npz",
            "--out",
            GOLDEN,
        ],
    );
    run.assert_code(0);
    assert!(
        run.stdout.contains("onnxruntime vs your reference"),
        "{}",
        run.all()
    );
    s.run(&["parity", "--backend", "ort", "--only", "action_context"])
        .assert_code(1);

    let mut w = NpzWriter::new(std::fs::File::create(s.path("f64.npz")).unwrap());
    w.add_array("keys", &get("keys").mapv(f64::from)).unwrap();
    w.add_array("values", &get("values")).unwrap();
    w.finish().unwrap();
    let out = "golden/tiny/f64_io.npz";
    script(
        &s,
        &[
            "component",
            "--onnx",
            ONNX,
            "--inputs",
            "f64.npz",
            "--out",
            out,
        ],
    )
    .assert_refused(2, "keys is float64, the graph takes float32");
    assert!(
        !s.path(out).exists(),
        "nothing is written for a refused input"
    );
}

#[test]
fn a_trace_written_by_the_script_drives_the_chain() {
    let s = Scratch::tiny();
    let tensors = s.path("chain_tensors.npz");
    std::fs::rename(s.path("golden/tiny/trace.npz"), &tensors).unwrap();
    std::fs::remove_file(s.path("golden/tiny/trace.json")).unwrap();

    // Without a host input the chain needs, nothing is written.
    std::fs::copy(&tensors, s.path("partial.npz")).unwrap();
    drop_npz_key(&s.path("partial.npz"), "initial_noise");
    script(
        &s,
        &[
            "trace",
            "--tensors",
            "partial.npz",
            "--out",
            "golden/tiny/trace.json",
        ],
    )
    .assert_refused(2, "initial_noise");
    assert!(!s.path("golden/tiny/trace.json").exists());

    let run = script(
        &s,
        &[
            "trace",
            "--tensors",
            "chain_tensors.npz",
            "--out",
            "golden/tiny/trace.json",
            "--meta",
            "model=tiny",
        ],
    );
    run.assert_code(0);
    assert!(run.stdout.contains("actions"), "{}", run.all());
    let chain = s.run(&["run", "--backend", "ort", "--iters", "1", "--warmup", "0"]);
    chain.assert_code(0);
    assert!(!chain.all().contains("UNGATED"), "{}", chain.all());
}
