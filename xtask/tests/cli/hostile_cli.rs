//! The hostile-input suite: a generator writes a corpus of broken inputs at test time (npz
//! files, ONNX graphs, recipe values, path escapes) into scratch copies of the tiny project;
//! each case states the exit code and a fragment of the message it must produce. Bad input
//! must end in exit 2 with a message that names the problem, never a panic, a signal, or a
//! good-looking number; nothing already built may be replaced.

use crate::common;

use std::io::Write as _;
use std::path::Path;

use common::{Run, Scratch};

const COMP: &str = "action_context";
const GOLDEN: &str = "golden/tiny/action_context_io.npz";
const RECIPE: &str = "recipes/tiny/action_context.toml";
const ONNX: &str = "onnx/tiny/action_context.onnx";

/// One `.npy` file: magic, version 1.0, the header dict padded to 64 bytes, then the data.
fn npy(descr: &str, fortran: bool, shape: &[u64], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut header = format!(
        "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
        if fortran { "True" } else { "False" }
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// Replaces (or adds) one member of an npz, copying the others byte for byte.
fn replace_npz_member(path: &Path, key: &str, bytes: &[u8]) {
    let original = std::fs::read(path).unwrap();
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(original)).unwrap();
    let mut writer = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..archive.len() {
        let member = archive.by_index_raw(i).unwrap();
        if member.name().trim_end_matches(".npy") != key {
            writer.raw_copy_file(member).unwrap();
        }
    }
    writer
        .start_file(
            format!("{key}.npy"),
            zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Stored),
        )
        .unwrap();
    writer.write_all(bytes).unwrap();
    writer.finish().unwrap();
}

fn f32_bytes(n: usize, big_endian: bool) -> Vec<u8> {
    (0..n)
        .flat_map(|i| {
            let v = (i % 7) as f32 * 0.1;
            if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        })
        .collect()
}

const KEYS_SHAPE: [u64; 4] = [8, 1, 130, 32];

/// The golden `keys` array as the generator wrote it.
fn golden_keys(p: &Scratch) -> ndarray::ArrayD<f32> {
    let mut r = ndarray_npy::NpzReader::new(std::fs::File::open(p.path(GOLDEN)).unwrap()).unwrap();
    r.by_name("keys.npy").unwrap()
}
const KEYS_N: usize = 8 * 130 * 32;

/// Protobuf helpers for the one graph edit no byte swap can do: a symbolic dim.
fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn read_varint(b: &[u8], pos: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let byte = b[*pos];
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// Rewrites the first length-delimited field numbered `path[0]` of `msg` (recursively down
/// `path`); at the end of the path the payload is replaced by `leaf`. Lengths are re-encoded.
fn edit_path(msg: &[u8], path: &[u32], leaf: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut pos = 0;
    let mut done = false;
    while pos < msg.len() {
        let start = pos;
        let tag = read_varint(msg, &mut pos);
        let (num, wire) = ((tag >> 3) as u32, tag & 7);
        match wire {
            0 => {
                read_varint(msg, &mut pos);
                out.extend_from_slice(&msg[start..pos]);
            }
            1 => {
                pos += 8;
                out.extend_from_slice(&msg[start..pos]);
            }
            5 => {
                pos += 4;
                out.extend_from_slice(&msg[start..pos]);
            }
            2 => {
                let len = read_varint(msg, &mut pos) as usize;
                let payload = &msg[pos..pos + len];
                pos += len;
                if !done && num == path[0] {
                    done = true;
                    let inner = if path.len() == 1 {
                        leaf.to_vec()
                    } else {
                        edit_path(payload, &path[1..], leaf)
                    };
                    varint(tag, &mut out);
                    varint(inner.len() as u64, &mut out);
                    out.extend_from_slice(&inner);
                } else {
                    out.extend_from_slice(&msg[start..pos]);
                }
            }
            other => panic!("wire type {other}"),
        }
    }
    out
}

fn edit_text(p: &Scratch, rel: &str, from: &str, to: &str) {
    let path = p.path(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{rel} lacks {from:?}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

struct Case {
    name: &'static str,
    setup: fn(&Scratch),
    args: &'static [&'static str],
    code: i32,
    says: &'static [&'static str],
}

const PARITY: &[&str] = &["parity", "--backend", "ort", "--only", COMP];
const BUILD: &[&str] = &["build-ctx", "--soc", "77", "--only", COMP];

fn corpus() -> Vec<Case> {
    vec![
        // ---- npz
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
        // ---- ONNX
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
                edit_text(
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
        // ---- recipe values
        Case {
            name: "min_cosine = nan",
            setup: |p| edit_text(p, RECIPE, "min_cosine = 0.9999", "min_cosine = nan"),
            args: PARITY,
            code: 2,
            says: &[
                "recipes/tiny/action_context.toml:",
                "parity.min_cosine = NaN",
            ],
        },
        Case {
            name: "min_cosine = -2.0",
            setup: |p| edit_text(p, RECIPE, "min_cosine = 0.9999", "min_cosine = -2.0"),
            args: BUILD,
            code: 2,
            says: &["action_context.toml:", "parity.min_cosine = -2", "[0, 1]"],
        },
        Case {
            name: "min_cosine = 1.5",
            setup: |p| edit_text(p, RECIPE, "min_cosine = 0.9999", "min_cosine = 1.5"),
            args: PARITY,
            code: 2,
            says: &["parity.min_cosine = 1.5"],
        },
        Case {
            name: "atol negative",
            setup: |p| edit_text(p, RECIPE, "atol = 1e-4", "atol = -1e-4"),
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
                edit_text(
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
        // ---- paths
        Case {
            name: "absolute ONNX path",
            setup: |p| {
                edit_text(
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
                edit_text(
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
    println!("{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A graph swapped for another component's after a good build: refused before any step runs,
/// and the good DLC, binary and record stay as they were.
#[test]
fn a_swapped_graph_never_replaces_a_good_artifact() {
    let p = Scratch::tiny();
    p.run(BUILD).assert_code(0);
    let dlc = p.path("ctx/tiny/action_context.dlc");
    let before = std::fs::read(&dlc).unwrap();
    std::fs::copy(p.path("onnx/tiny/action_step.onnx"), p.path(ONNX)).unwrap();
    let run = p.run(&["build-ctx", "--soc", "77", "--only", COMP, "--force"]);
    run.assert_code(2);
    assert!(run.stderr.contains("nothing was run"), "{}", run.all());
    assert_eq!(
        std::fs::read(&dlc).unwrap(),
        before,
        "the good DLC was replaced"
    );
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

/// SIGKILLs `build-ctx --force` at pseudo-random moments, N times, then checks that nothing is
/// falsely fresh: every step the plan calls fresh holds up (its HTP binary passes parity), a
/// normal build completes, and the bundle made from it verifies. The seed is printed so a
/// failing sequence can be replayed (`XTASK_KILL_SEED`).
#[test]
fn killed_builds_leave_nothing_falsely_fresh() {
    let p = Scratch::tiny();
    let only = "action_context,action_step";
    let seed: u64 = std::env::var("XTASK_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    let mut state = seed;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    println!("kill seed {seed}");
    for round in 0..8 {
        let delay_ms = 200 + next() % 6000;
        let mut child = p
            .command(&["build-ctx", "--soc", "77", "--only", only, "--force"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let finished = child.try_wait().unwrap().is_some();
        if !finished {
            // SIGKILL: no destructor, no cleanup, as a CI runner losing its job.
            child.kill().unwrap();
        }
        child.wait().unwrap();
        println!("round {round}: killed after {delay_ms} ms (finished first: {finished})");
    }
    let plan = p.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--only",
        only,
        "--dry-run",
        "--json",
    ]);
    plan.assert_code(0);
    let doc: serde_json::Value = serde_json::from_str(&plan.stdout).unwrap();
    let fresh_contexts: Vec<String> = doc["components"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            c["steps"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["kind"] == "context" && s["fresh"] == true)
        })
        .map(|c| c["component"].as_str().unwrap().to_string())
        .collect();
    if !fresh_contexts.is_empty() {
        // What the plan calls fresh must load and match its golden on the HTP.
        p.run(&[
            "parity",
            "--backend",
            "htp",
            "--only",
            &fresh_contexts.join(","),
        ])
        .assert_code(0);
    }
    p.run(&["build-ctx", "--soc", "77", "--only", only])
        .assert_code(0);
    p.run(&[
        "build-ctx",
        "--soc",
        "77",
        "--only",
        only,
        "--require-fresh",
    ])
    .assert_code(0);
    let bundle = p.path("dist/k");
    p.run(&[
        "package",
        "--soc",
        "77",
        "--only",
        only,
        "--out",
        bundle.to_str().unwrap(),
    ])
    .assert_code(0);
    p.run(&["verify", bundle.to_str().unwrap()]).assert_code(0);
    let leftovers: Vec<String> = std::fs::read_dir(p.path("ctx/tiny"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".staging-"))
        .collect();
    assert!(leftovers.is_empty(), "staging leftovers: {leftovers:?}");
}
