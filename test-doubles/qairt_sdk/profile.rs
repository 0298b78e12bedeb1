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
        // `Graph 0: … (sub)` rows are parts of the ROOT event before them.
        let (level, id) = match id.strip_suffix(" (sub)") {
            Some(id) => ("SUB-EVENT", id),
            None => ("ROOT", id),
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
                "LOAD",
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
                row(
                    &mut ts,
                    "EXECUTE",
                    format!("{netrun:.0}"),
                    "US",
                    "NETRUN",
                    "Graph 0: execute",
                );
                row(
                    &mut ts,
                    "EXECUTE",
                    format!("{:.0}", (netrun - backend).max(0.0)),
                    "US",
                    "NETRUN",
                    "Graph 0: input and output copies (sub)",
                );
                row(
                    &mut ts,
                    "EXECUTE",
                    format!("{backend:.0}"),
                    "US",
                    "BACKEND",
                    "Accelerator (execute) time",
                );
                row(
                    &mut ts,
                    "EXECUTE",
                    format!("{:.0}", backend * 1000.0),
                    "CYCLES",
                    "BACKEND",
                    "Accelerator (execute) time (cycles)",
                );
                row(
                    &mut ts,
                    "EXECUTE",
                    "4".into(),
                    "COUNT",
                    "BACKEND",
                    "Number of HVX threads used",
                );
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
                    "DEINIT",
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
