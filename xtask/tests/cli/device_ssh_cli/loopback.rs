//! A loopback device that works: `doctor` reports it, `parity --backend htp` runs there (the
//! report says so, binaries are uploaded once, content-addressed), and `run` runs the whole
//! chain with every component on the device.

use super::sshd::{Sdk, Server, assert_bins_consistent, project, uploads};
use crate::common::read_json;

#[test]
fn parity_and_run_on_a_loopback_device() {
    let server = Server::start(Sdk::Good);
    doctor_reports_the_device_and_every_lib_folder(&server);
    parity_runs_on_the_device_and_uploads_each_binary_once(&server);
    the_chain_runs_on_the_device(&server);
}

/// `doctor` on the device: its arch, SDK, libraries and disk, and every SDK lib folder searched
/// with the stubs it holds.
fn doctor_reports_the_device_and_every_lib_folder(server: &Server) {
    let doctor = server.run(&["doctor"]);
    doctor.assert_code(0);
    for want in [
        "arch          x86_64 (uname -m) -> SDK folder x86_64-linux-clang",
        "2.47.0.260601114230",
        "lib/x86_64-linux-clang/libQnnHtp.so",
        "lib/x86_64-linux-clang/libQnnHtpV73Stub.so",
        "lib/hexagon-v73/unsigned/libQnnHtpV73Skel.so",
        "free disk",
        "device ready",
        "SDK lib folders searched",
        "DSP_LIBRARY_PATH unset on the device",
    ] {
        assert!(doctor.stdout.contains(want), "{want}: {}", doctor.all());
    }
    // Every lib folder searched, with the stubs it holds.
    for (dir, stub) in [
        ("lib/aarch64-oe-linux-gcc11.2 ", "libQnnHtpV73Stub.so"),
        ("lib/aarch64-ubuntu-gcc9.4 ", "libQnnHtpV68Stub.so"),
        ("lib/x86_64-linux-clang ", "libQnnHtpV73Stub.so   <- used"),
    ] {
        assert!(
            doctor
                .stdout
                .lines()
                .any(|l| l.contains(dir) && l.contains(stub)),
            "{dir}{stub}: {}",
            doctor.all()
        );
    }
    assert!(!doctor.stdout.contains("MISSING"), "{}", doctor.all());
}

/// HTP parity measured on the device, its report and timings; a second run copies nothing.
fn parity_runs_on_the_device_and_uploads_each_binary_once(server: &Server) {
    let args = [
        "parity",
        "--backend",
        "htp",
        "--only",
        "action_context,action_step",
        "--iters",
        "3",
    ];
    let first = server.run(&args);
    first.assert_code(0);
    assert_eq!(uploads(&first), 2, "{}", first.all());
    let report = read_json(&project().join("reports/tiny/parity-htp-device.json"));
    assert_eq!(report["pass"], true);
    assert!(report["htp_emulated"].is_null(), "{report}");
    let device = report["device"].as_str().unwrap();
    assert!(
        device.contains("measured on the device via ssh")
            && device.contains("arch x86_64 (x86_64-linux-clang)")
            && device.contains("QAIRT SDK 2.47.0.260601114230")
            && device.contains(&server.url()),
        "{device}"
    );
    assert!(
        !device.contains("emulated") && !device.contains("NPU"),
        "{device}"
    );
    let md = std::fs::read_to_string(project().join("reports/tiny/parity-htp-device.md")).unwrap();
    assert!(md.contains("## Execute time"), "{md}");
    for c in report["components"].as_array().unwrap() {
        let l = &c["latency"];
        assert_eq!(l["timing_source"], "NETRUN", "{c}");
        assert_eq!(l["samples"], 3, "{c}");
        let (min, p50, max) = (
            l["min_us"].as_f64().unwrap(),
            l["p50_us"].as_f64().unwrap(),
            l["max_us"].as_f64().unwrap(),
        );
        assert!(0.0 < min && min <= p50 && p50 <= max, "{l}");
        assert!(c["outputs"][0]["metrics"]["cosine"].as_f64().unwrap() >= 0.999);
    }
    assert_bins_consistent(&server.work());
    // The run folders are removed after each run.
    assert_eq!(
        std::fs::read_dir(server.work().join("runs"))
            .unwrap()
            .count(),
        0
    );

    // Again: the binary is on the device already (content-addressed), nothing is copied.
    let second = server.run(&["parity", "--backend", "htp", "--only", "action_context"]);
    second.assert_code(0);
    assert_eq!(uploads(&second), 0, "{}", second.all());
    assert_eq!(
        second.stderr.matches("already on the device").count(),
        1,
        "{}",
        second.all()
    );
}

/// The chain: every component on the device, host steps here.
fn the_chain_runs_on_the_device(server: &Server) {
    let chain = server.run(&["run", "--backend", "htp", "--iters", "2", "--warmup", "1"]);
    chain.assert_code(0);
    assert_eq!(
        uploads(&chain),
        5,
        "only the 5 binaries not there yet: {}",
        chain.all()
    );
    let r = read_json(&project().join("reports/tiny/run-htp-device-iters2-warmup1.json"));
    assert_eq!(r["pass"], true, "{r}");
    let d = &r["device"];
    assert_eq!(d["binaries_uploaded"], 5);
    let boundaries = r["boundaries"].as_array().unwrap();
    assert!(boundaries.len() >= 10, "{r}");
    assert!(boundaries.iter().any(|b| b["name"] == "actions"));
    let comps = d["components"].as_array().unwrap();
    assert_eq!(comps.len(), 7);
    let step = comps
        .iter()
        .find(|c| c["component"] == "action_step")
        .unwrap();
    assert_eq!(step["calls_per_chain"], 2, "one call per Euler step");
    assert_eq!(step["execute"]["samples"], 4, "2 timed inferences per call");
    let sum: f64 = comps
        .iter()
        .map(|c| c["per_chain_us"].as_f64().unwrap())
        .sum();
    assert!(sum > 0.0 && (d["chain_estimate_us"].as_f64().unwrap() - sum).abs() < 1e-6);
    assert!(
        d["chain_estimate_note"]
            .as_str()
            .unwrap()
            .contains("copies")
    );
    assert!(d["timing"].as_str().unwrap().contains("via ssh"));
    assert_bins_consistent(&server.work());
}
