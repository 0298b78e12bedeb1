//! `qnn-profile-viewer`: the double's profiling log as the real viewer's CSV layout.

use super::*;

/// The double's profiling log as the CSV layout of the real viewer.
pub(crate) fn profile_viewer(a: &BTreeMap<String, String>) -> Result<()> {
    let log = std::fs::read_to_string(need(a, "--input_log")?)?;
    let mut lines = log.lines();
    if lines.next() != Some("xtask-test-double-profile v1") {
        bail!("not a profiling log of the test double");
    }
    let mut ts: u64 = 15_423_000_000;
    let mut rows = Vec::new();
    let mut executes = Vec::new();
    let mut row = |ts: &mut u64, msg: &str, time: String, unit: &str, src: &str, id: &str| {
        *ts += 137;
        // `… (cycles)` op rows are parts of the ROOT event before them.
        let level = if id.contains(":OpId_") {
            "SUB-EVENT"
        } else {
            "ROOT"
        };
        rows.push(format!("{ts},{msg},{time},{unit},{src},{level},{id}"));
    };
    for line in lines {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let us = |i: usize| -> Result<f64> {
            Ok(parts.get(i).context("truncated profiling log")?.parse()?)
        };
        match parts.first().copied() {
            Some("load") => row(
                &mut ts,
                "INIT",
                format!("{:.0}", us(1)?),
                "US",
                "NETRUN",
                "Load Binary",
            ),
            Some("init") => {
                row(
                    &mut ts,
                    "INIT",
                    format!("{:.0}", us(1)?),
                    "US",
                    "NETRUN",
                    "Graph Init",
                );
                row(
                    &mut ts,
                    "INIT",
                    format!("{:.0}", us(1)? * 0.8),
                    "US",
                    "BACKEND",
                    "\"RPC (init) time, incl. finalize\"",
                );
            }
            Some("execute") => {
                let (netrun, backend) = (us(1)?, us(2)?);
                executes.push(netrun);
                let backend_rows = [
                    ("US", format!("{netrun:.0}"), "NETRUN", "Graph 0: execute"),
                    (
                        "US",
                        format!("{backend:.0}"),
                        "BACKEND",
                        "QNN accelerator (execute) time",
                    ),
                    (
                        "CYCLES",
                        format!("{:.0}", backend * 1000.0),
                        "BACKEND",
                        "Accelerator (execute) time (cycles)",
                    ),
                    (
                        "US",
                        format!("{:.0}", (backend + netrun) / 2.0),
                        "BACKEND",
                        "QNN (execute) time",
                    ),
                    ("COUNT", "4".into(), "BACKEND", "Number of HVX threads used"),
                    (
                        "CYCLES",
                        format!("{:.0}", backend * 600.0),
                        "BACKEND",
                        "_MatMul_0:OpId_1 (cycles)",
                    ),
                ];
                for (unit, time, src, id) in backend_rows {
                    row(&mut ts, "EXECUTE", time, unit, src, id);
                }
                ts += netrun as u64;
            }
            Some("deinit") => {
                if !executes.is_empty() {
                    let mean_us = executes.iter().sum::<f64>() / executes.len() as f64;
                    row(
                        &mut ts,
                        "EXECUTE IPS",
                        format!("{:.2}", 1e6 / mean_us.max(1.0)),
                        "INF/SEC",
                        "NETRUN",
                        "Graph 0: execute",
                    );
                }
                row(
                    &mut ts,
                    "DE-INIT",
                    format!("{:.0}", us(1)?),
                    "US",
                    "NETRUN",
                    "Graph Deinit",
                )
            }
            _ => bail!("unreadable profiling log line `{line}`"),
        }
    }
    let csv = format!(
        "Log File Created: (test double)\nTime Scale: 1e-06\nEpoch Timestamp: 0 Steady Clock Timestamp: 15423000000\n\
         Generated using:\nqnn-profile-viewer v2.47.0 (test double)\nqnn-net-run        v2.47.0 (test double)\n\n\
         Msg Timestamp, Message, Time, Unit of Measurement, Timing Source, Event Level, Event Identifier\n{}\n",
        rows.join("\n")
    );
    std::fs::write(need(a, "--output")?, csv)?;
    Ok(())
}
