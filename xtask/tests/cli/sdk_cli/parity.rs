//! `parity --backend cpu --toolchain sdk` through the double's `qnn-net-run`: it runs what the
//! DLC holds (a wrong bitwidth or a swapped DLC shows in the numbers), and a missing tool exits 2.

use super::{convert_to, sdk_cpu_parity};
use crate::common::{self, Scratch, double_root, run_sdk};

#[test]
fn the_double_runs_what_the_dlc_holds_a_wrong_bitwidth_or_a_swapped_dlc_shows() {
    let p = Scratch::tiny();
    std::fs::create_dir_all(p.path("ctx/tiny")).unwrap();
    let dlc = "ctx/tiny/llm_split0.dlc";
    convert_to(&p, "onnx/tiny/llm_split0.onnx", dlc, "32");
    let fp32 = sdk_cpu_parity(&p, "llm_split0", 0);
    // fp16 weights really are fp16 in the DLC's graph: the same golden gives other numbers
    // (still within the 0.9999 cosine gate, but errors ~1e-3 instead of float32 rounding).
    convert_to(&p, "onnx/tiny/llm_split0.onnx", dlc, "16");
    let fp16 = sdk_cpu_parity(&p, "llm_split0", 0);
    for ((c32, e32), (c16, e16)) in fp32.iter().zip(&fp16) {
        assert!(
            e16 > &(e32 * 10.0) && c16 < c32,
            "fp16 weights: {fp16:?} vs fp32 {fp32:?}"
        );
    }
    // Another component's DLC (same I/O names and shapes) fails the gate.
    convert_to(&p, "onnx/tiny/llm_split1.onnx", dlc, "32");
    let swapped = sdk_cpu_parity(&p, "llm_split0", 1);
    assert!(swapped.iter().any(|(c, _)| *c < 0.99), "{swapped:?}");
}

#[test]
fn parity_with_the_sdk_on_the_cpu_reports_and_a_missing_tool_exits_2() {
    let p = Scratch::tiny();
    std::fs::create_dir_all(p.path("ctx/tiny")).unwrap();
    convert_to(
        &p,
        "onnx/tiny/action_context.onnx",
        "ctx/tiny/action_context.dlc",
        "32",
    );
    let ok = sdk_cpu_parity(&p, "action_context", 0);
    assert!(ok.iter().all(|(c, _)| *c >= 0.9999), "{ok:?}");
    let no_net_run = p.path("sdk-without-net-run");
    common::copy_tree(&double_root(), &no_net_run);
    std::fs::remove_file(no_net_run.join("bin/x86_64-linux-clang/qnn-net-run")).unwrap();
    let run = run_sdk(
        &p,
        &no_net_run,
        &[
            "parity",
            "--backend",
            "cpu",
            "--toolchain",
            "sdk",
            "--only",
            "action_context",
        ],
        &[],
    );
    run.assert_refused(2, "`qnn-net-run` is missing");
}
