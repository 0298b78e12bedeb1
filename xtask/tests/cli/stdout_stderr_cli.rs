//! stdout for results, stderr for progress: a pipe or a redirected stdout gets the command's
//! result only; the progress lines and heartbeats of long steps are on stderr.

use crate::common::{self, Scratch};

/// `build-ctx` with stdout captured: its one summary line there, every step's progress and
/// the heartbeats of its long steps on stderr.
#[test]
fn build_progress_and_heartbeats_go_to_stderr_only() {
    let p = Scratch::tiny();
    let mut cmd = p.command(&["build-ctx", "--soc", "77"]);
    cmd.env("XTASK_HEARTBEAT_SECS", "0.2");
    let run = common::Run::from(cmd.output().unwrap());
    run.assert_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "stdout has more than the result: {}",
        run.all()
    );
    assert!(
        lines[0].starts_with("build-ctx tiny soc 77: 21 step(s) ran, 0 fresh, 0 failed"),
        "{}",
        run.all()
    );
    for progress in ["running", "still ", "context binary"] {
        assert!(
            !run.stdout.contains(progress),
            "{progress:?} on stdout: {}",
            run.all()
        );
    }
    assert!(
        run.stderr
            .contains("vision           convert         running"),
        "no progress line on stderr: {}",
        run.all()
    );
    assert!(
        run.stderr.contains("still compiling after"),
        "no heartbeat on stderr: {}",
        run.all()
    );
}

/// `parity` with stdout captured: the per-component tables there, its heartbeats on stderr.
#[test]
fn parity_heartbeats_go_to_stderr_only() {
    let p = Scratch::tiny();
    let mut cmd = p.command(&["parity", "--backend", "cpu"]);
    cmd.env("XTASK_HEARTBEAT_SECS", "0.2");
    let run = common::Run::from(cmd.output().unwrap());
    run.assert_code(0);
    assert!(run.stdout.contains("PASS  vision [cpu]"), "{}", run.all());
    assert!(!run.stdout.contains("(still running)"), "{}", run.all());
    assert!(run.stderr.contains("(still running)"), "{}", run.all());
}
