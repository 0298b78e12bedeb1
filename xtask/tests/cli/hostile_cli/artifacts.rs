//! Nothing already built is replaced or falsely fresh: a graph swapped after a good build is
//! refused before any step runs, and builds SIGKILLed at random moments leave no step that the
//! plan calls fresh without it holding up.

use super::{BUILD, COMP, ONNX};
use crate::common::Scratch;

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

/// SIGKILLs `build-ctx --force` at pseudo-random moments, N times, then checks that nothing is
/// falsely fresh: every step the plan calls fresh holds up (its HTP binary passes parity), a
/// normal build completes, and the bundle made from it verifies. The seed is printed so a
/// failing sequence can be replayed (`XTASK_KILL_SEED`).
#[test]
fn killed_builds_leave_nothing_falsely_fresh() {
    let p = Scratch::tiny();
    let only = "action_context,action_step";
    kill_builds_at_random_moments(&p, only);
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
        "--allow-unmeasured",
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

/// Starts `build-ctx --force` of `only` 8 times and SIGKILLs it after 0.2 to 6.2 s (unless it
/// finished first), the delays drawn from `XTASK_KILL_SEED` or the clock; prints the seed.
fn kill_builds_at_random_moments(p: &Scratch, only: &str) {
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
}
