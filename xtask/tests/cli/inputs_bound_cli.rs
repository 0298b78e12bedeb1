//! Inputs bound to the recipe, refused where they are read (exit 2, naming the file and the
//! key), never reported later as a NaN, a cosine failure or an unrelated message: the trace
//! against `model.toml`, the trace's tensors, `[host]` values at load, what `--dry-run` can
//! check without running, `conformance --op`, and an EPContext wrapper in a graph's place.

use std::path::Path;

use crate::common::{Run, Scratch, line_of, read_json};

const RUN: [&str; 7] = ["run", "--backend", "ort", "--iters", "1", "--warmup", "0"];
const TRACE: &str = "golden/tiny/trace.json";
const NPZ: &str = "golden/tiny/trace.npz";
const MODEL: &str = "recipes/tiny/model.toml";

fn run_chain(p: &Scratch) -> Run {
    let mut args = RUN.to_vec();
    args.push("--no-report");
    p.run(&args)
}

/// Rewrites one member of an npz as raw `.npy` bytes through `f` (header kept).
fn edit_npy(path: &Path, f: impl Fn(&mut std::collections::BTreeMap<String, Vec<u8>>)) {
    use std::io::{Read, Write};
    let mut archive = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut members = std::collections::BTreeMap::new();
    for i in 0..archive.len() {
        let mut m = archive.by_index(i).unwrap();
        let mut bytes = Vec::new();
        m.read_to_end(&mut bytes).unwrap();
        members.insert(m.name().trim_end_matches(".npy").to_string(), bytes);
    }
    f(&mut members);
    let mut out = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, bytes) in members {
        out.start_file(
            format!("{name}.npy"),
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        out.write_all(&bytes).unwrap();
    }
    out.finish().unwrap();
}

/// The first value of a little-endian f32 `.npy` set to NaN.
fn first_nan(npy: &mut [u8]) {
    let header = usize::from(u16::from_le_bytes([npy[8], npy[9]]));
    assert!(String::from_utf8_lossy(&npy[10..10 + header]).contains("<f4"));
    npy[10 + header..14 + header].copy_from_slice(&f32::NAN.to_le_bytes());
}

fn edit_trace_json(p: &Scratch, f: impl Fn(&mut serde_json::Value)) {
    let mut trace = read_json(&p.path(TRACE));
    f(&mut trace);
    std::fs::write(p.path(TRACE), serde_json::to_vec_pretty(&trace).unwrap()).unwrap();
}

fn edit_text(p: &Scratch, rel: &str, from: &str, to: &str) {
    let text = std::fs::read_to_string(p.path(rel)).unwrap();
    assert!(text.contains(from), "{rel} lacks {from:?}");
    std::fs::write(p.path(rel), text.replacen(from, to, 1)).unwrap();
}

#[test]
fn a_trace_that_disagrees_with_model_toml_is_refused_naming_both_files() {
    let p = Scratch::tiny();
    run_chain(&p).assert_code(0);
    let model = std::fs::read_to_string(p.path(MODEL)).unwrap();
    edit_trace_json(&p, |t| t["seq_len"] = 131.into());
    run_chain(&p).assert_refused(
        2,
        &format!(
            "{TRACE}: seq_len = 131, but {MODEL}:{}: model.seq_len = 130",
            line_of(&model, "seq_len")
        ),
    );
    edit_trace_json(&p, |t| {
        t["seq_len"] = 130.into();
        t["timesteps"] = serde_json::json!([0.0, 0.25]);
    });
    run_chain(&p).assert_refused(
        2,
        &format!(
            "{TRACE}: timesteps = [0.0,0.25], but {MODEL}:{}: host.timesteps = [0.0, 0.5]",
            line_of(&model, "timesteps")
        ),
    );
    // The tensors are read inside the project only.
    let p = Scratch::tiny();
    let outside = tempfile::tempdir().unwrap();
    std::fs::rename(p.path(NPZ), outside.path().join("trace.npz")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("trace.npz"), p.path(NPZ)).unwrap();
    run_chain(&p)
        .assert_refused(2, &format!("{TRACE}: npz = \"{NPZ}\" resolves to"))
        .assert_refused(2, "outside the project root");
}

#[test]
fn trace_inputs_that_are_not_finite_or_quantiles_out_of_order_are_named_by_key() {
    for key in ["action_dim_is_pad", "initial_noise"] {
        let p = Scratch::tiny();
        edit_npy(&p.path(NPZ), |m| first_nan(m.get_mut(key).unwrap()));
        run_chain(&p)
            .assert_refused(
                2,
                &format!("{NPZ}, the host trace's tensors, cannot drive the chain"),
            )
            .assert_refused(
                2,
                &format!("`{key}`: 1 NaN, 0 Inf (a trace input must be finite)"),
            );
    }
    let p = Scratch::tiny();
    edit_npy(&p.path(NPZ), |m| {
        let q01 = m.remove("q01").unwrap();
        let q99 = m.insert("q99".into(), q01).unwrap();
        m.insert("q01".into(), q99);
    });
    run_chain(&p).assert_refused(2, "`q01` is not below `q99` at dim 0 (0.0838");
}

#[test]
fn host_values_are_refused_at_load_with_their_line() {
    for (key, from, to, says) in [
        (
            "llm_splits",
            "llm_splits = [\"llm_split0\", \"llm_split1\"",
            "llm_splits = [\"llm_split0\", \"llm_split0\"",
            "host.llm_splits lists component `llm_split0` twice",
        ),
        (
            "timesteps",
            "timesteps = [0.0, 0.5]",
            "timesteps = [0.5, 0.0]",
            "host.timesteps = [0.5, 0.0]: timesteps[1] = 0 does not come after timesteps[0] = 0.5",
        ),
        (
            "timesteps",
            "timesteps = [0.0, 0.5]",
            "timesteps = [0.0, 1.0]",
            "timesteps[1] = 1 is outside [0, 1)",
        ),
    ] {
        let p = Scratch::tiny();
        edit_text(&p, MODEL, from, to);
        let text = std::fs::read_to_string(p.path(MODEL)).unwrap();
        let at = format!("{MODEL}:{}: host.{key}", line_of(&text, key));
        p.run(&["plan"])
            .assert_refused(2, says)
            .assert_refused(2, &at);
    }
}

#[test]
fn dry_run_refuses_what_the_build_would_and_conformance_an_absent_op() {
    let recipe = "recipes/tiny/action_step.toml";
    let dry = [
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "action_step",
        "--dry-run",
    ];
    let quantized = |tail: &str| {
        let p = Scratch::tiny();
        let mut text = std::fs::read_to_string(p.path(recipe)).unwrap();
        text += &format!("\n[quantize]\nprecision = \"w8a16\"\n{tail}");
        std::fs::write(p.path(recipe), &text).unwrap();
        (p, text)
    };
    let (p, text) = quantized("calibration = \"golden\"\nexclude = [\"MatMul\", \"NoSuchOp\"]\n");
    p.run(&dry).assert_refused(
        2,
        &format!(
            "{recipe}:{}: quantize.exclude[1] = \"NoSuchOp\" is neither an operator type nor a node name of onnx/tiny/action_step.onnx",
            line_of(&text, "exclude")
        ),
    );
    let (p, text) = quantized("calibration = \"calib\"\n");
    std::fs::create_dir_all(p.path("calib")).unwrap();
    p.run(&dry).assert_refused(
        2,
        &format!(
            "{recipe}:{}: quantize.calibration = \"calib\": no .npz whose keys are `action_step`'s inputs",
            line_of(&text, "calibration")
        ),
    );
    // A folder of samples keyed by the inputs passes the check.
    std::fs::copy(
        p.path("golden/tiny/action_step_io.npz"),
        p.path("calib/a.npz"),
    )
    .unwrap();
    p.run(&dry).assert_code(0);

    let p = Scratch::tiny();
    p.run(&[
        "conformance",
        "--only",
        "action_step",
        "--op",
        "NoSuchOp",
        "--backend",
        "cpu",
    ])
    .assert_refused(
        2,
        "--op NoSuchOp names no operator of the graphs of action_step",
    )
    .assert_refused(2, "MatMul");
}

#[test]
fn an_epcontext_wrapper_in_a_graphs_place_is_named_as_such() {
    let p = Scratch::tiny();
    p.run(&["build-ctx", "--soc", "77", "--only", "action_step"])
        .assert_code(0);
    std::fs::copy(
        p.path("ctx/tiny/action_step_socid77_archv73_ctx.onnx"),
        p.path("onnx/tiny/action_step.onnx"),
    )
    .unwrap();
    for backend in ["cpu", "ort"] {
        p.run(&["parity", "--backend", backend, "--only", "action_step"])
            .assert_refused(2, "onnx/tiny/action_step.onnx is an EPContext wrapper");
    }
}
