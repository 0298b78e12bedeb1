//! `build-ctx --toolchain sdk` with the QAIRT SDK test double
//! (`test-doubles/qairt-sdk-root`, built from `test-doubles/qairt_sdk`): the full build, the exact commands and configs for
//! the real recipes, and every failure path leaving the previous artifacts untouched.

use crate::common;

use std::path::Path;

use common::{Run, Scratch, double_root, read_json, repo_root, run_sdk, sha256_hex};

#[test]
fn build_ctx_with_the_sdk_toolchain_gives_the_same_artifacts_and_reports() {
    let p = Scratch::tiny();
    let run = run_sdk(
        &p,
        &double_root(),
        &[
            "build-ctx",
            "--soc",
            "77",
            "--model",
            "tiny",
            "--toolchain",
            "sdk",
        ],
        &[],
    );
    run.assert_code(0);
    for c in [
        "vision",
        "llm_split0",
        "llm_split1",
        "llm_split2",
        "llm_split3",
        "action_context",
        "action_step",
    ] {
        for f in [
            format!("{c}.dlc"),
            format!("{c}_socid77_archv73.bin"),
            format!("{c}_socid77_archv73_ctx.onnx"),
        ] {
            assert!(p.path(&format!("ctx/tiny/{f}")).is_file(), "missing {f}");
        }
        assert!(
            p.path(&format!("reports/tiny/logs/{c}-context.log"))
                .is_file()
        );
    }
    let report = read_json(&p.path("reports/tiny/build-soc77.json"));
    assert_eq!(report["pass"], true);
    // The double's binary holds the embedded runtime's real QNN bytes, whose graph name it
    // cannot change (its header says so): the report states the name is not the recipe's.
    let named = &report["components"][0]["steps"][2]["detail"]["graph_name_honoured"];
    assert_eq!(named["recipe"], "vision", "{named}");
    assert!(
        named["why"].as_str().unwrap().contains("not `vision`"),
        "{named}"
    );
    let cpu =
        &report["components"][0]["steps"][1]["detail"]["result"]["outputs"][0]["metrics"]["cosine"];
    assert!(cpu.as_f64().unwrap() >= 0.9999, "{cpu}");
    let record = read_json(&p.path("ctx/tiny/vision.record.json"));
    assert_eq!(
        record["steps"]["convert"]["key"]["parts"]["toolchain"],
        "qairt-sdk 2.47.0.260601114230"
    );
    // The SDK-built binaries load in the embedded runtime through the generated wrappers.
    p.run(&["parity", "--backend", "htp"]).assert_code(0);
    // The HTP run through the SDK's qnn-net-run --retrieve_context, profiled.
    let htp = run_sdk(
        &p,
        &double_root(),
        &[
            "parity",
            "--backend",
            "htp",
            "--toolchain",
            "sdk",
            "--only",
            "action_context,action_step",
            "--iters",
            "3",
        ],
        &[],
    );
    htp.assert_code(0);
    let report = read_json(&p.path("reports/tiny/parity-htp.json"));
    // The report also keeps the earlier run's other components (merged per component).
    for c in
        report["components"].as_array().unwrap().iter().filter(|c| {
            ["action_context", "action_step"].contains(&c["component"].as_str().unwrap())
        })
    {
        assert!(
            c["run_seconds"].as_f64().unwrap() > 0.0,
            "the profiled execute time is reported: {c}"
        );
        // Three inferences in one qnn-net-run call: their NETRUN execute times' distribution.
        let l = &c["latency"];
        assert_eq!(l["timing_source"], "NETRUN", "{c}");
        assert_eq!(l["samples"], 3, "{c}");
        let (min, p50, max) = (
            l["min_us"].as_f64().unwrap(),
            l["p50_us"].as_f64().unwrap(),
            l["max_us"].as_f64().unwrap(),
        );
        assert!(0.0 < min && min <= p50 && p50 <= max && max < 60e6, "{l}");
        assert!((c["run_seconds"].as_f64().unwrap() - p50 / 1e6).abs() < 1e-9);
        assert!(c["outputs"][0]["metrics"]["cosine"].as_f64().unwrap() >= 0.999);
    }
    // A no-op with the same toolchain runs nothing.
    let again = run_sdk(
        &p,
        &double_root(),
        &["build-ctx", "--soc", "77", "--toolchain", "sdk"],
        &[],
    );
    assert!(
        again.stdout.contains("0 step(s) ran, 21 fresh"),
        "{}",
        again.all()
    );
}

#[test]
fn the_dry_run_prints_the_exact_commands_and_configs_of_the_real_recipes() {
    let p = Scratch::tiny();
    let out = p
        .command(&[
            "build-ctx",
            "--soc",
            "77",
            "--model",
            "molmoact2-libero-lp-vtp-sd",
            "--toolchain",
            "sdk",
            "--dry-run",
        ])
        .env_remove("QAIRT_SDK_ROOT")
        .env_remove("QNN_SDK_ROOT")
        .output()
        .unwrap();
    let run = Run::from(out);
    run.assert_code(0);
    let printed: String = run
        .stdout
        .split_once("QAIRT SDK")
        .map(|(_, rest)| format!("QAIRT SDK{rest}"))
        .unwrap_or_default();
    let expected_path =
        repo_root().join("xtask/tests/expected/sdk-commands-molmoact2-libero-lp-vtp-sd.txt");
    if std::env::var_os("XTASK_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&expected_path, &printed).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&expected_path).unwrap();
    assert_eq!(
        printed, expected,
        "the SDK commands changed; if intended, regenerate the expected file with XTASK_BLESS=1 cargo test"
    );
}

#[test]
fn a_failing_a_hanging_and_a_silent_tool_are_clear_errors_and_keep_the_previous_artifacts() {
    let p = Scratch::tiny();
    let only = [
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "action_context",
        "--toolchain",
        "sdk",
        "--force",
    ];
    run_sdk(&p, &double_root(), &only, &[]).assert_code(0);
    let bin = p.path("ctx/tiny/action_context_socid77_archv73.bin");
    let dlc = p.path("ctx/tiny/action_context.dlc");
    let bin_before = sha256_hex(&bin);

    let failed = run_sdk(
        &p,
        &double_root(),
        &only,
        &[("QAIRT_DOUBLE_FAIL", "qnn-context-binary-generator:exit1")],
    );
    failed.assert_code(1);
    assert!(
        failed
            .stdout
            .contains("qnn-context-binary-generator --backend")
            && failed.stdout.contains("exit status: 1")
            && failed.stdout.contains("simulated failure"),
        "{}",
        failed.all()
    );

    let hung = run_sdk(
        &p,
        &double_root(),
        &only,
        &[
            ("QAIRT_DOUBLE_FAIL", "qnn-net-run:hang"),
            ("XTASK_SDK_TIMEOUT_SECS", "3"),
        ],
    );
    hung.assert_code(1);
    assert!(
        hung.stdout
            .contains("did not finish within 3 s and was stopped"),
        "{}",
        hung.all()
    );

    // (convert succeeded in the runs above and rightly replaced the DLC with a complete one)
    let dlc_before = sha256_hex(&dlc);
    let silent = run_sdk(
        &p,
        &double_root(),
        &only,
        &[("QAIRT_DOUBLE_FAIL", "qairt-converter:no-output")],
    );
    silent.assert_code(1);
    assert!(
        silent
            .stdout
            .contains("qairt-converter exited 0 but wrote no"),
        "{}",
        silent.all()
    );

    assert_eq!(
        sha256_hex(&bin),
        bin_before,
        "the previous binary is untouched"
    );
    assert_eq!(
        sha256_hex(&dlc),
        dlc_before,
        "the DLC is untouched by the converter that wrote nothing"
    );
}

#[test]
fn an_sdk_of_another_version_is_refused_unless_allowed_and_a_missing_sdk_is_explained() {
    let p = Scratch::tiny();
    let other = p.path("sdk-2.46");
    common::copy_tree(&double_root(), &other);
    std::fs::write(other.join("sdk.yaml"), "version: 2.46.0.1\n").unwrap();
    for tool in std::fs::read_dir(other.join("bin/x86_64-linux-clang"))
        .unwrap()
        .flatten()
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tool.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let run = run_sdk(
        &p,
        &other,
        &[
            "build-ctx",
            "--soc",
            "77",
            "--only",
            "action_context",
            "--toolchain",
            "sdk",
        ],
        &[],
    );
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("is 2.46.0.1, the recipe asks for 2.47.0; pass --allow-sdk-version"),
        "{}",
        run.all()
    );
    run_sdk(
        &p,
        &other,
        &[
            "build-ctx",
            "--soc",
            "77",
            "--only",
            "action_context",
            "--toolchain",
            "sdk",
            "--allow-sdk-version",
        ],
        &[],
    )
    .assert_code(0);
    let none = p
        .command(&["build-ctx", "--toolchain", "sdk"])
        .env_remove("QAIRT_SDK_ROOT")
        .env_remove("QNN_SDK_ROOT")
        .output()
        .unwrap();
    let none = Run::from(none);
    none.assert_code(2);
    assert!(none.stderr.contains("set QAIRT_SDK_ROOT"), "{}", none.all());
}

/// One tool of the double run directly from the scratch project's root, in the environment the
/// SDK's `bin/envsetup.sh` sets (as a user who sourced it).
fn tool(p: &Scratch, name: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let root = double_root();
    let mut cmd = std::process::Command::new(root.join("bin/x86_64-linux-clang").join(name));
    cmd.args(args)
        .current_dir(p.dir.path())
        .env("QAIRT_DOUBLE_BIN", crate::common::sdk_double_bin())
        .env("PYTHONPATH", root.join("lib/python"))
        .env("LD_LIBRARY_PATH", root.join("lib/x86_64-linux-clang"))
        .env_remove("QAIRT_DOUBLE_FAIL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    Run::from(cmd.output().unwrap())
}

fn convert_to(p: &Scratch, onnx: &str, dlc: &str, bitwidth: &str) {
    tool(
        p,
        "qairt-converter",
        &[
            "--input_network",
            onnx,
            "--output_path",
            dlc,
            "--float_bitwidth",
            bitwidth,
            "--preserve_io_datatype",
        ],
        &[],
    )
    .assert_code(0);
}

/// (cosine, max abs error) of every output of a component's `parity --backend cpu --toolchain sdk`.
fn sdk_cpu_parity(p: &Scratch, comp: &str, code: i32) -> Vec<(f64, f64)> {
    std::fs::create_dir_all(p.path("ctx/tiny")).unwrap();
    run_sdk(
        p,
        &double_root(),
        &[
            "parity",
            "--backend",
            "cpu",
            "--toolchain",
            "sdk",
            "--only",
            comp,
        ],
        &[],
    )
    .assert_code(code);
    let report = read_json(&p.path("reports/tiny/parity-cpu.json"));
    let c = &report["components"][0];
    assert_eq!(c["session_model"], format!("ctx/tiny/{comp}.dlc"), "{c}");
    c["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["metrics"]["cosine"].as_f64().unwrap(),
                o["metrics"]["max_abs_err"].as_f64().unwrap(),
            )
        })
        .collect()
}

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
fn a_tampered_or_foreign_context_binary_is_an_error_of_the_sdk_path() {
    let p = Scratch::tiny();
    let only = [
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "action_context",
        "--toolchain",
        "sdk",
    ];
    run_sdk(&p, &double_root(), &only, &[]).assert_code(0);
    let bin = p.path("ctx/tiny/action_context_socid77_archv73.bin");
    let utility = |bin: &Path| {
        tool(
            &p,
            "qnn-context-binary-utility",
            &[
                "--context_binary",
                bin.to_str().unwrap(),
                "--json_file",
                p.path("info.json").to_str().unwrap(),
            ],
            &[],
        )
    };
    utility(&bin).assert_code(0);
    let info = read_json(&p.path("info.json"));
    assert_eq!(
        info["info"]["graphs"][0]["info"]["graphInputs"][0]["info"]["dataType"],
        "QNN_DATATYPE_FLOAT_32"
    );
    // One byte changed: no longer the binary the generator wrote.
    let mut bytes = std::fs::read(&bin).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 1;
    let tampered = p.path("tampered.bin");
    std::fs::write(&tampered, &bytes).unwrap();
    let run = utility(&tampered);
    run.assert_code(1);
    assert!(run.stderr.contains("modified since"), "{}", run.all());
    // A binary the double never wrote.
    std::fs::write(p.path("foreign.bin"), b"not a context binary").unwrap();
    utility(&p.path("foreign.bin")).assert_code(1);
    // A generator that writes a corrupted binary fails the SDK context step.
    let corrupt = run_sdk(
        &p,
        &double_root(),
        &[&only[..], &["--force"]].concat(),
        &[("QAIRT_DOUBLE_FAIL", "qnn-context-binary-generator:corrupt")],
    );
    corrupt.assert_code(1);
    assert!(
        corrupt.stdout.contains("qnn-context-binary-utility")
            && corrupt.stdout.contains("modified since"),
        "{}",
        corrupt.all()
    );
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

/// The `odd_io` fixture's graph and golden: x f32 [1,4], idx i64 [1,4], flag bool [1,4] →
/// `head/sum.0` = x + float(idx), `ns:sq` = x·x, `0_neg` = −x, `1.twice` = idx + idx (i64),
/// `half` = fp16(x), `nonzero` = bool(x), `not_flag` = ¬flag.
fn write_odd_io_fixture(p: &Scratch) {
    use xtask::onnx::rewrite::{put_bytes, put_varint};
    let int = |out: &mut Vec<u8>, num: u64, v: u64| {
        put_varint(out, num << 3);
        put_varint(out, v);
    };
    let value_info = |name: &str, elem: u64| {
        let mut shape = Vec::new();
        for d in [1u64, 4] {
            let mut dim = Vec::new();
            int(&mut dim, 1, d);
            put_bytes(&mut shape, 1, &dim);
        }
        let mut tt = Vec::new();
        int(&mut tt, 1, elem);
        put_bytes(&mut tt, 2, &shape);
        let mut ty = Vec::new();
        put_bytes(&mut ty, 1, &tt);
        let mut vi = Vec::new();
        put_bytes(&mut vi, 1, name.as_bytes());
        put_bytes(&mut vi, 2, &ty);
        vi
    };
    let node = |op: &str, ins: &[&str], out: &str, to: Option<u64>| {
        let mut n = Vec::new();
        for i in ins {
            put_bytes(&mut n, 1, i.as_bytes());
        }
        put_bytes(&mut n, 2, out.as_bytes());
        put_bytes(&mut n, 3, format!("n_{op}_{}", out.len()).as_bytes());
        put_bytes(&mut n, 4, op.as_bytes());
        if let Some(to) = to {
            let mut a = Vec::new();
            put_bytes(&mut a, 1, b"to");
            int(&mut a, 3, to);
            int(&mut a, 20, 2);
            put_bytes(&mut n, 5, &a);
        }
        n
    };
    let mut graph = Vec::new();
    for n in [
        node("Cast", &["idx"], "idx_f", Some(1)),
        node("Add", &["x", "idx_f"], "head/sum.0", None),
        node("Mul", &["x", "x"], "ns:sq", None),
        node("Neg", &["x"], "0_neg", None),
        node("Add", &["idx", "idx"], "1.twice", None),
        node("Cast", &["x"], "half", Some(10)),
        node("Cast", &["x"], "nonzero", Some(9)),
        node("Not", &["flag"], "not_flag", None),
    ] {
        put_bytes(&mut graph, 1, &n);
    }
    put_bytes(&mut graph, 2, b"odd_io");
    put_bytes(&mut graph, 11, &value_info("x", 1));
    put_bytes(&mut graph, 11, &value_info("idx", 7));
    put_bytes(&mut graph, 11, &value_info("flag", 9));
    for (name, elem) in [
        ("head/sum.0", 1),
        ("ns:sq", 1),
        ("0_neg", 1),
        ("1.twice", 7),
        ("half", 10),
        ("nonzero", 9),
        ("not_flag", 9),
    ] {
        put_bytes(&mut graph, 12, &value_info(name, elem));
    }
    let mut model = Vec::new();
    int(&mut model, 1, 10);
    put_bytes(&mut model, 7, &graph);
    let mut opset = Vec::new();
    put_bytes(&mut opset, 1, b"");
    int(&mut opset, 2, 20);
    put_bytes(&mut model, 8, &opset);
    std::fs::create_dir_all(p.path("onnx/odd_io")).unwrap();
    std::fs::write(p.path("onnx/odd_io/graph.onnx"), model).unwrap();

    use xtask::tensor::Tensor;
    let x = [0.5f32, -1.25, 0.0, 3.5];
    let flag = [true, false, false, true];
    let idx = [3i64, -2, 1 << 20, 7];
    let f = |v: Vec<f32>| Tensor::F32(ndarray::ArrayD::from_shape_vec(vec![1, 4], v).unwrap());
    let i = |v: Vec<i64>| Tensor::I64(ndarray::ArrayD::from_shape_vec(vec![1, 4], v).unwrap());
    let b = |v: Vec<bool>| Tensor::Bool(ndarray::ArrayD::from_shape_vec(vec![1, 4], v).unwrap());
    let golden = std::collections::BTreeMap::from([
        ("x".to_string(), f(x.to_vec())),
        ("idx".to_string(), i(idx.to_vec())),
        (
            "sum".to_string(),
            f(x.iter().zip(idx).map(|(a, b)| a + b as f32).collect()),
        ),
        ("sq".to_string(), f(x.iter().map(|a| a * a).collect())),
        ("neg".to_string(), f(x.iter().map(|a| -a).collect())),
        ("twice".to_string(), i(idx.iter().map(|b| b * 2).collect())),
        ("flag".to_string(), b(flag.to_vec())),
        (
            "nonzero".to_string(),
            b(x.iter().map(|v| *v != 0.0).collect()),
        ),
        ("not_flag".to_string(), b(flag.iter().map(|v| !v).collect())),
    ]);
    std::fs::create_dir_all(p.path("golden/odd_io")).unwrap();
    let npz = p.path("golden/odd_io/graph_io.npz");
    xtask::tensor::write_npz(&npz, &golden).unwrap();
    // `half` as numpy's float16 (`<f2`), which the crate's npz writer does not write.
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    let mut header = "{'descr': '<f2', 'fortran_order': False, 'shape': (1, 4), }".to_string();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    npy.extend((header.len() as u16).to_le_bytes());
    npy.extend(header.as_bytes());
    for v in x {
        npy.extend(half::f16::from_f32(v).to_le_bytes());
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&npz)
        .unwrap();
    let mut zip = zip::ZipWriter::new_append(file).unwrap();
    zip.start_file("half.npy", zip::write::SimpleFileOptions::default())
        .unwrap();
    std::io::Write::write_all(&mut zip, &npy).unwrap();
    zip.finish().unwrap();
}

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
    // The double writes what the real tool writes: native files for the non-float32 outputs.
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
        tool(&p, "qnn-net-run", &args, &[])
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

#[test]
fn the_converter_needs_the_sdk_environment_and_the_tool_provides_it() {
    let p = Scratch::tiny();
    std::fs::create_dir_all(p.path("ctx/tiny")).unwrap();
    let convert = [
        "--input_network",
        "onnx/tiny/action_context.onnx",
        "--output_path",
        "ctx/tiny/action_context.dlc",
        "--float_bitwidth",
        "32",
    ];
    // Without envsetup.sh's variables the real converter cannot import qti.aisw (exit 1).
    for unset in ["PYTHONPATH", "LD_LIBRARY_PATH"] {
        let mut cmd = std::process::Command::new(
            double_root().join("bin/x86_64-linux-clang/qairt-converter"),
        );
        cmd.args(convert)
            .current_dir(p.dir.path())
            .env("QAIRT_DOUBLE_BIN", crate::common::sdk_double_bin())
            .env("PYTHONPATH", double_root().join("lib/python"))
            .env(
                "LD_LIBRARY_PATH",
                double_root().join("lib/x86_64-linux-clang"),
            )
            .env_remove(unset);
        let run = Run::from(cmd.output().unwrap());
        run.assert_code(1);
        assert!(run.stderr.contains("Traceback"), "{}", run.all());
        assert!(!p.path("ctx/tiny/action_context.dlc").exists());
    }
    // The tool sets them from QAIRT_SDK_ROOT alone (run_sdk clears both) and records them.
    let only = [
        "build-ctx",
        "--soc",
        "77",
        "--only",
        "action_context",
        "--toolchain",
        "sdk",
    ];
    run_sdk(&p, &double_root(), &only, &[]).assert_code(0);
    let record =
        std::fs::read_to_string(p.path("reports/tiny/build-soc77.json")).unwrap_or_default();
    let root = double_root().canonicalize().unwrap();
    assert!(
        record.contains("sdk_env") && record.contains(&format!("{}/lib/python", root.display())),
        "{record}"
    );
    // doctor checks `qairt-converter --help` in that environment
    let doctor = run_sdk(&p, &double_root(), &["doctor", "--need", "ort"], &[]);
    assert!(
        doctor.stdout.contains("qairt-converter --help runs"),
        "{}",
        doctor.all()
    );
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
