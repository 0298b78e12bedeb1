//! Interrupts answered: SIGINT and SIGTERM during a long command print what was interrupted
//! and what was kept, leave no partial output, and exit 130 / 143.

use std::io::BufRead;
use std::process::Stdio;

use crate::common::Scratch;

/// Starts `args` on `p`, waits for a stderr line containing `cue`, sends `signal`, and returns
/// the exit code and all of stderr.
fn interrupt_at(p: &Scratch, args: &[&str], cue: &str, signal: i32) -> (Option<i32>, String) {
    let mut child = p
        .command(args)
        .env("XTASK_HEARTBEAT_SECS", "0.2")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let cued = line.contains(cue);
        seen.push(line);
        if cued {
            // SAFETY: kill(2) of the child this test started.
            unsafe { libc::kill(child.id() as i32, signal) };
            break;
        }
    }
    seen.extend(lines.map_while(Result::ok));
    let status = child.wait().unwrap();
    (status.code(), seen.join("\n"))
}

#[test]
fn sigint_during_htp_parity_says_so_keeps_the_reports_and_exits_130() {
    let p = Scratch::tiny();
    p.run(&["build-ctx", "--soc", "77"]).assert_code(0);
    let (code, stderr) = interrupt_at(
        &p,
        &["parity", "--backend", "htp"],
        "parity htp [",
        libc::SIGINT,
    );
    assert_eq!(code, Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted (SIGINT): `parity` stopped during parity htp"),
        "{stderr}"
    );
    assert!(
        stderr.contains("kept: reports/tiny/parity-htp.* as they were"),
        "{stderr}"
    );
    assert!(
        !p.path("reports/tiny/parity-htp.json").exists(),
        "no partial report"
    );
}

#[test]
fn sigterm_during_a_build_removes_its_staging_and_exits_143() {
    let p = Scratch::tiny();
    let (code, stderr) = interrupt_at(
        &p,
        &["build-ctx", "--soc", "77"],
        "context binary  running",
        libc::SIGTERM,
    );
    assert_eq!(code, Some(143), "{stderr}");
    assert!(
        stderr.contains("interrupted (SIGTERM): `build-ctx` stopped during build-ctx"),
        "{stderr}"
    );
    assert!(
        stderr.contains("kept: every step that finished"),
        "{stderr}"
    );
    let staging: Vec<_> = std::fs::read_dir(p.path("ctx/tiny"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".staging-"))
        .collect();
    assert!(staging.is_empty(), "partial outputs left: {staging:?}");
    // What was kept is good: the next build completes.
    p.run(&["build-ctx", "--soc", "77"]).assert_code(0);
}
