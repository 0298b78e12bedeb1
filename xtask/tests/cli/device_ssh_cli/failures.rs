//! A device that fails ends in clear errors: a key it does not know, a connection dropped in
//! the middle of a run (the binaries on it stay consistent), a server gone between runs, an SDK
//! missing on the device, and an SDK of another version than the recipe's.

use std::process::Stdio;
use std::time::{Duration, Instant};

use super::sshd::{Sdk, Server, assert_bins_consistent, project, tool};
use crate::common::Run;

#[test]
fn failures_end_in_clear_errors() {
    let mut server = Server::start(Sdk::Good);
    let parity = [
        "parity",
        "--backend",
        "htp",
        "--only",
        "vision",
        "--iters",
        "200",
    ];

    // A key the device does not know.
    let wrong = server.run_with(&parity, &server.dir.path().join("ssh_config_wrong_key"));
    wrong
        .assert_refused(2, "authentication to ssh://")
        .assert_refused(2, "failed");

    // The server goes away in the middle of a run: the connection drops.
    let url = server.url();
    let mut cmd = tool(project(), &parity, Some(&server.config()));
    cmd.args(["--device", &url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let runs = server.work().join("runs");
    let started = Instant::now();
    while std::fs::read_dir(&runs).map_or(0, |d| d.count()) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no run started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    server.stop();
    let dropped = Run::from(child.wait_with_output().unwrap());
    dropped.assert_code(2);
    assert!(
        dropped.stderr.contains("dropped") || dropped.stderr.contains("unreachable"),
        "{}",
        dropped.all()
    );
    assert_bins_consistent(&server.work());

    // Stopped between runs: nothing answers.
    let gone = server.run(&parity);
    gone.assert_code(2);
    assert!(gone.stderr.contains("unreachable"), "{}", gone.all());
    assert!(gone.stderr.contains("Connection refused"), "{}", gone.all());

    // The SDK is missing on the device.
    let missing = Server::start(Sdk::Missing);
    let run = missing.run(&parity);
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("the QAIRT SDK is missing on the device"),
        "{}",
        run.all()
    );
    let doctor = missing.run(&["doctor"]);
    doctor.assert_code(1);
    assert!(doctor.stdout.contains("MISSING"), "{}", doctor.all());

    // Another SDK version than the recipe's.
    let other = Server::start(Sdk::OtherVersion);
    let run = other.run(&parity);
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("the device's QAIRT SDK is 2.45.0.250101000000, the recipe asks for 2.47.0"),
        "{}",
        run.all()
    );
}
