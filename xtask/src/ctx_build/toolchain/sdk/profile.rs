//! Execute times from `qnn-profile-viewer --output x.csv`. The CSV starts with preamble lines
//! (version, time scale, …), then the header
//! `Msg Timestamp,Message,Time,Unit of Measurement,Timing Source,Event Level,Event Identifier`,
//! then one row per event; columns are found by their header names (the first number on a row
//! is a timestamp, not a duration). With `N` inferences in one `qnn-net-run` call there is one
//! EXECUTE row per inference and timing source.

use anyhow::{Context, Result, bail};

/// The timing source whose EXECUTE rows are reported: `NETRUN`, the whole graph execute as the
/// application (`qnn-net-run`) saw it, host-side overheads (RPC, buffer copies) included. That
/// is the latency a deployed app pays per inference; the `BACKEND` rows (the accelerator's own
/// execute time) leave those overheads out and would flatter a split model with many contexts.
pub const TIMING_SOURCE: &str = "NETRUN";

pub use crate::report::latency::ExecuteStats;

/// Splits one CSV line, honouring double quotes (event identifiers may hold commas).
fn split_csv(line: &str) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                cells.last_mut().unwrap().push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => cells.push(String::new()),
            c => cells.last_mut().unwrap().push(c),
        }
    }
    cells.into_iter().map(|c| c.trim().to_string()).collect()
}

/// One event row of the viewer's CSV, placed: its message (`EXECUTE`, `EXECUTE IPS`, `LOAD`,
/// …), time in µs (`None` for BYTES/CYCLES/COUNT/INF/SEC rows), timing source and level.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub message: String,
    pub us: Option<f64>,
    pub source: String,
    /// `ROOT` (a top-level event) or `SUB-EVENT` (a part of the ROOT event before it).
    pub level: String,
}

/// Units the viewer writes: times, and the counts/sizes/rates that are not times.
fn scale_to_us(unit: &str) -> Option<Option<f64>> {
    Some(match unit.to_ascii_uppercase().as_str() {
        "US" => Some(1.0),
        "MS" => Some(1e3),
        "NS" => Some(1e-3),
        "CYCLES" | "COUNT" | "BYTES" | "INF/SEC" => None,
        _ => return None,
    })
}

/// Every event row after the header, each placed or an error naming the row (its line number
/// and text): a level other than `ROOT`/`SUB-EVENT`, an unknown unit, a time that is not a
/// number or a missing cell is a layout this code does not know, never skipped silently.
pub fn rows(csv: &str) -> Result<Vec<Row>> {
    let mut lines = csv.lines().enumerate();
    let header = lines
        .by_ref()
        .map(|(_, l)| split_csv(l))
        .find(|cells| {
            cells.iter().any(|c| c == "Message") && cells.iter().any(|c| c == "Timing Source")
        })
        .context("the profile CSV has no header row (`Msg Timestamp,Message,Time,…`)")?;
    let col = |name: &str| {
        header
            .iter()
            .position(|c| c == name)
            .with_context(|| format!("the profile CSV header has no `{name}` column: {header:?}"))
    };
    let (message, time, unit, source, level) = (
        col("Message")?,
        col("Time")?,
        col("Unit of Measurement")?,
        col("Timing Source")?,
        col("Event Level")?,
    );
    let mut out = Vec::new();
    for (i, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let cells = split_csv(line);
        let at = || format!("profile CSV line {} `{line}`", i + 1);
        let cell = |c: usize| cells.get(c).map(String::as_str).unwrap_or("");
        let lvl = cell(level).to_ascii_uppercase();
        if lvl != "ROOT" && lvl != "SUB-EVENT" {
            bail!(
                "{}: event level `{}` is neither ROOT nor SUB-EVENT",
                at(),
                cell(level)
            );
        }
        if cell(message).is_empty() || cell(source).is_empty() {
            bail!("{}: no message or timing source", at());
        }
        let Some(scale) = scale_to_us(cell(unit)) else {
            bail!("{}: unknown unit `{}`", at(), cell(unit));
        };
        let value: f64 = cell(time)
            .parse()
            .with_context(|| format!("{}: `{}` is not a number", at(), cell(time)))?;
        out.push(Row {
            message: cell(message).to_ascii_uppercase(),
            us: scale.map(|s| value * s),
            source: cell(source).to_ascii_uppercase(),
            level: lvl,
        });
    }
    Ok(out)
}

/// The per-inference execute times (µs) of `timing_source`: its top-level (`ROOT`) `EXECUTE`
/// rows in a time unit, in file order. `SUB-EVENT` rows (parts of an execute), `EXECUTE IPS`
/// (a rate) and CYCLES/COUNT rows are recognised and left out.
pub fn execute_samples_us(csv: &str, timing_source: &str) -> Result<Vec<f64>> {
    Ok(rows(csv)?
        .into_iter()
        .filter(|r| r.level == "ROOT" && r.message == "EXECUTE" && r.source == timing_source)
        .filter_map(|r| r.us)
        .collect())
}

/// The per-inference times and where they come from: [`TIMING_SOURCE`] (NETRUN) rows, or the
/// `BACKEND` ROOT EXECUTE rows when the log has no NETRUN rows at all (`None`: neither).
pub fn per_inference(csv: &str) -> Result<Option<(String, Vec<f64>)>> {
    for source in [TIMING_SOURCE, "BACKEND"] {
        let samples = execute_samples_us(csv, source)?;
        if !samples.is_empty() {
            return Ok(Some((source.to_string(), samples)));
        }
    }
    Ok(None)
}

/// The distribution of the per-inference execute times (see [`per_inference`]); `None` when
/// the CSV has no such rows.
pub fn execute_stats(csv: &str) -> Result<Option<ExecuteStats>> {
    Ok(per_inference(csv)?.map(|(source, samples)| ExecuteStats::of(&source, &samples)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three inferences as `qnn-profile-viewer` 2.4x writes them: preamble, header, load and
    /// init events, per inference a NETRUN and a BACKEND EXECUTE row plus cycles and counts.
    const CSV: &str = "\
Log File Created: Tue Jun  2 10:00:00 2026
Time Scale: 1e-06
Epoch Timestamp: 1780394400000000 Steady Clock Timestamp: 15423000000
Generated using:
qnn-profile-viewer v2.47.0.260601114230
qnn-net-run        v2.47.0.260601114230
Backend            v2.47.0.260601114230

Msg Timestamp,Message,Time,Unit of Measurement,Timing Source,Event Level,Event Identifier
15423000100,LOAD,90210,US,NETRUN,ROOT,Load Binary
15423000200,INIT,51000,US,NETRUN,ROOT,Graph Init
15423000300,INIT,48000,US,BACKEND,ROOT,\"RPC (init) time, incl. finalize\"
15423026395,EXECUTE,480,US,NETRUN,ROOT,Graph 0: g
15423026396,EXECUTE,410,US,BACKEND,ROOT,Accelerator (execute) time
15423026397,EXECUTE,51234567,CYCLES,BACKEND,ROOT,Accelerator (execute) time (cycles)
15423026398,EXECUTE,4,COUNT,BACKEND,ROOT,Number of HVX threads used
15423030000,EXECUTE,520,US,NETRUN,ROOT,Graph 0: g
15423030001,EXECUTE,430,US,BACKEND,ROOT,Accelerator (execute) time
15423040000,EXECUTE,1.5,MS,NETRUN,ROOT,Graph 0: g
15423040001,EXECUTE,1200,US,BACKEND,ROOT,Accelerator (execute) time
15423050000,DEINIT,3000,US,NETRUN,ROOT,Graph Deinit
";

    #[test]
    fn execute_rows_by_header_names_not_the_first_number() {
        assert_eq!(
            execute_samples_us(CSV, "NETRUN").unwrap(),
            [480.0, 520.0, 1500.0]
        );
        assert_eq!(
            execute_samples_us(CSV, "BACKEND").unwrap(),
            [410.0, 430.0, 1200.0],
            "CYCLES and COUNT rows are not times"
        );
        let s = execute_stats(CSV).unwrap().unwrap();
        assert_eq!(s.timing_source, "NETRUN");
        assert_eq!(s.samples, 3);
        assert_eq!((s.min_us, s.p50_us, s.max_us), (480.0, 520.0, 1500.0));
    }

    #[test]
    fn columns_are_found_wherever_the_header_puts_them() {
        let csv = "preamble\nEvent Identifier,Timing Source,Event Level,Unit of Measurement,Time,Message,Msg Timestamp\nx,NETRUN,ROOT,US,77,EXECUTE,999999\n";
        assert_eq!(execute_samples_us(csv, "NETRUN").unwrap(), [77.0]);
    }

    /// The viewer's other row kinds: a ROOT EXECUTE per inference with SUB-EVENT rows under it
    /// (one of them also named EXECUTE), an EXECUTE IPS rate, BYTES; only the ROOT rows count.
    #[test]
    fn root_sub_event_and_execute_ips_rows_give_one_time_per_inference() {
        let csv = "\
Msg Timestamp, Message, Time, Unit of Measurement, Timing Source, Event Level, Event Identifier
100,LOAD,900,US,NETRUN,ROOT,Load Binary
101,INIT,1200,BYTES,BACKEND,ROOT,Memory
200,EXECUTE,480,US,NETRUN,ROOT,Graph 0: g
201,EXECUTE,410,US,BACKEND,ROOT,Accelerator (execute) time
202,EXECUTE,400,US,BACKEND,SUB-EVENT,Accelerator (execute excluding wait) time
203,EXECUTE,12,US,NETRUN,SUB-EVENT,Graph 0: g input copy
300,EXECUTE,520,US,NETRUN,ROOT,Graph 0: g
301,EXECUTE,11,US,NETRUN,SUB-EVENT,Graph 0: g input copy
302,EXECUTE IPS,1923.08,INF/SEC,NETRUN,ROOT,Graph 0: g
";
        assert_eq!(execute_samples_us(csv, "NETRUN").unwrap(), [480.0, 520.0]);
        assert_eq!(execute_samples_us(csv, "BACKEND").unwrap(), [410.0]);
        let s = execute_stats(csv).unwrap().unwrap();
        assert_eq!((s.timing_source.as_str(), s.samples), ("NETRUN", 2));
        // a log with BACKEND rows only (as ORT's QNN profiler writes) falls back to them
        let backend_only: String = csv
            .lines()
            .filter(|l| !l.contains("NETRUN"))
            .collect::<Vec<_>>()
            .join("\n");
        let s = execute_stats(&backend_only).unwrap().unwrap();
        assert_eq!((s.timing_source.as_str(), s.samples), ("BACKEND", 1));
        // a row the code cannot place is an error naming it
        let odd = format!("{csv}400,EXECUTE,5,US,NETRUN,LEAF,Graph 0: g\n");
        let err = execute_stats(&odd).unwrap_err().to_string();
        assert!(
            err.contains("line 11") && err.contains("LEAF") && err.contains("400,EXECUTE"),
            "{err}"
        );
    }

    #[test]
    fn a_csv_without_header_or_rows_is_not_a_time() {
        assert!(execute_samples_us("Execute,1234,us\n", "NETRUN").is_err());
        let header = "Msg Timestamp,Message,Time,Unit of Measurement,Timing Source,Event Level,Event Identifier\n";
        assert_eq!(execute_stats(header).unwrap(), None);
        let bad_unit = format!("{header}1,EXECUTE,5,FURLONGS,NETRUN,ROOT,g\n");
        assert!(execute_stats(&bad_unit).is_err());
    }
}
