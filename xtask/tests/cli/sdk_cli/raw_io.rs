//! Raw I/O formats of the SDK path with the `odd_io` fixture: int64, fp16 and bool outputs are
//! read from `qnn-net-run`'s native raw files, as the real tool writes them, and an int64 input
//! kept int64 needs a native input file.

use super::{odd_io::write_odd_io_fixture, tool};
use crate::common::{Scratch, double_root, read_json, run_sdk};

#[test]
fn native_int64_fp16_and_bool_outputs_are_read_from_native_raw_files() {
    let p = Scratch::fixture("odd_io");
    write_odd_io_fixture(&p);
    std::fs::create_dir_all(p.path("ctx/odd_io")).unwrap();
    // The SDK path converts (idx declared int32), passes --use_native_input_files and
    // --use_native_output_files, and reads Result_0/head/sum.0.raw, …/1.twice_native.raw,
    // …/half_native.raw, …/nonzero_native.raw, …/not_flag_native.raw.
    let only_convert = [
        "build-ctx",
        "--soc",
        "77",
        "--model",
        "odd_io",
        "--toolchain",
        "sdk",
    ];
    let built = run_sdk(&p, &double_root(), &only_convert, &[]);
    let dlc = p.path("ctx/odd_io/graph.dlc");
    assert!(dlc.is_file(), "{}", built.all());
    let convert_log = std::fs::read_to_string(p.path("reports/odd_io/logs/graph-convert.log"))
        .unwrap_or_default();
    let run = run_sdk(
        &p,
        &double_root(),
        &[
            "parity",
            "--backend",
            "cpu",
            "--toolchain",
            "sdk",
            "--model",
            "odd_io",
        ],
        &[],
    );
    run.assert_code(0);
    let report = read_json(&p.path("reports/odd_io/parity-cpu.json"));
    let outputs = report["components"][0]["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 7, "{report}");
    for o in outputs {
        assert!(
            o["metrics"]["max_abs_err"].as_f64().unwrap() == 0.0,
            "{o} {convert_log}"
        );
    }
    the_double_writes_native_files_as_the_real_tool(&p);
}

/// The double writes what the real tool writes: native files for the non-float32 outputs.
fn the_double_writes_native_files_as_the_real_tool(p: &Scratch) {
    let lib = double_root().join("lib/x86_64-linux-clang");
    let x: Vec<u8> = [0.5f32, -1.25, 0.0, 3.5]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    std::fs::write(p.path("x.raw"), x).unwrap();
    let idx: Vec<u8> = [3i32, -2, 1 << 20, 7]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    std::fs::write(p.path("idx.raw"), idx).unwrap();
    // bool input given as a float32 file: converted by qnn-net-run itself
    let flag: Vec<u8> = [1.0f32, 0.0, 0.0, 1.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    std::fs::write(p.path("flag.raw"), flag).unwrap();
    std::fs::write(p.path("list.txt"), "x:=x.raw idx:=idx.raw flag:=flag.raw\n").unwrap();
    let net_run = |extra: &[&str]| {
        let mut args = vec![
            "--backend",
            lib.join("libQnnCpu.so")
                .to_str()
                .unwrap()
                .to_string()
                .leak() as &str,
            "--model",
            lib.join("libQnnModelDlc.so")
                .to_str()
                .unwrap()
                .to_string()
                .leak(),
            "--dlc_path",
            "ctx/odd_io/graph.dlc",
            "--input_list",
            "list.txt",
            "--output_dir",
            "out",
        ];
        args.extend_from_slice(extra);
        tool(p, "qnn-net-run", &args, &[])
    };
    net_run(&[
        "--native_input_tensor_names",
        "idx",
        "--use_native_output_files",
    ])
    .assert_code(0);
    let r = p.path("out/Result_0");
    assert_eq!(
        std::fs::read(r.join("1.twice_native.raw")).unwrap().len(),
        4 * 8
    );
    assert_eq!(
        std::fs::read(r.join("half_native.raw")).unwrap().len(),
        4 * 2
    );
    assert_eq!(
        std::fs::read(r.join("not_flag_native.raw")).unwrap(),
        [0u8, 1, 1, 0]
    );
    assert_eq!(
        std::fs::read(r.join("nonzero_native.raw")).unwrap(),
        [1u8, 1, 0, 1]
    );
    assert_eq!(std::fs::read(r.join("0_neg.raw")).unwrap().len(), 4 * 4);
    assert!(!r.join("half.raw").exists() && !r.join("0_neg_native.raw").exists());
    // The int32-declared idx as a float file is converted too; nothing int64 is left in the DLC.
    let idx_f: Vec<u8> = [3.0f32, -2.0, 1048576.0, 7.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    std::fs::write(p.path("idx.raw"), idx_f).unwrap();
    net_run(&[]).assert_code(0);
}

/// A DLC whose int64 input was kept int64 (no `--source_model_input_datatype`): `qnn-net-run`
/// has no float-to-int64 conversion, so a float32 file for it is refused.
#[test]
fn an_int64_input_kept_int64_needs_a_native_file() {
    let p = Scratch::fixture("odd_io");
    write_odd_io_fixture(&p);
    std::fs::create_dir_all(p.path("ctx/odd_io")).unwrap();
    tool(
        &p,
        "qairt-converter",
        &[
            "--input_network",
            "onnx/odd_io/graph.onnx",
            "--output_path",
            "ctx/odd_io/graph.dlc",
            "--float_bitwidth",
            "32",
            "--preserve_io_datatype",
        ],
        &[],
    )
    .assert_code(0);
    // Without the native flag the double refuses int64 inputs given as float32 files.
    std::fs::write(p.path("x.raw"), [0u8; 16]).unwrap();
    std::fs::write(p.path("idx.raw"), [0u8; 16]).unwrap();
    std::fs::write(p.path("flag.raw"), [0u8; 16]).unwrap();
    std::fs::write(p.path("list.txt"), "x:=x.raw idx:=idx.raw flag:=flag.raw\n").unwrap();
    let lib = double_root().join("lib/x86_64-linux-clang");
    let refused = tool(
        &p,
        "qnn-net-run",
        &[
            "--backend",
            lib.join("libQnnCpu.so").to_str().unwrap(),
            "--model",
            lib.join("libQnnModelDlc.so").to_str().unwrap(),
            "--dlc_path",
            "ctx/odd_io/graph.dlc",
            "--input_list",
            "list.txt",
            "--output_dir",
            "out",
        ],
        &[],
    );
    refused
        .assert_refused(1, "input idx is QNN_DATATYPE_INT_64")
        .assert_refused(1, "--use_native_input_files");
}
