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

/// The per-inference execute times (µs) of the `timing_source` EXECUTE rows, in file order.
/// Rows in `CYCLES` or `COUNT` are not times and are skipped; `MS`/`NS` are converted.
pub fn execute_samples_us(csv: &str, timing_source: &str) -> Result<Vec<f64>> {
    let mut lines = csv.lines();
    let header = lines
        .by_ref()
        .map(split_csv)
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
    let (message, time, unit, source) = (
        col("Message")?,
        col("Time")?,
        col("Unit of Measurement")?,
        col("Timing Source")?,
    );
    let mut samples = Vec::new();
    for (i, line) in lines.enumerate() {
        let cells = split_csv(line);
        let cell = |c: usize| cells.get(c).map(String::as_str).unwrap_or("");
        if !cell(message).eq_ignore_ascii_case("EXECUTE")
            || !cell(source).eq_ignore_ascii_case(timing_source)
        {
            continue;
        }
        let scale = match cell(unit).to_ascii_uppercase().as_str() {
            "US" => 1.0,
            "MS" => 1e3,
            "NS" => 1e-3,
            "CYCLES" | "COUNT" => continue,
            other => bail!("profile CSV row {}: unknown unit `{other}`", i + 1),
        };
        let value: f64 = cell(time).parse().with_context(|| {
            format!("profile CSV row {}: `{}` is not a time", i + 1, cell(time))
        })?;
        samples.push(value * scale);
    }
    Ok(samples)
}

/// The distribution of the [`TIMING_SOURCE`] execute times; `None` when the CSV has no such rows.
pub fn execute_stats(csv: &str) -> Result<Option<ExecuteStats>> {
    let samples = execute_samples_us(csv, TIMING_SOURCE)?;
    Ok((!samples.is_empty()).then(|| ExecuteStats::of(TIMING_SOURCE, &samples)))
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
        let csv = "preamble\nEvent Identifier,Timing Source,Unit of Measurement,Time,Message,Msg Timestamp\nx,NETRUN,US,77,EXECUTE,999999\n";
        assert_eq!(execute_samples_us(csv, "NETRUN").unwrap(), [77.0]);
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
