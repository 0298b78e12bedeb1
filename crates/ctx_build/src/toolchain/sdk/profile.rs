//! Execute times from `qnn-profile-viewer --output x.csv`. The CSV starts with preamble lines
//! (version, time scale, …), then the header
//! `Msg Timestamp,Message,Time,Unit of Measurement,Timing Source,Event Level,Event Identifier`,
//! then one row per event; columns are found by their header names (the first number on a row
//! is a timestamp, not a duration). With `N` inferences in one `qnn-net-run` call there is one
//! EXECUTE row per inference and timing source.

use anyhow::{Context, Result, bail};

/// The timing source whose EXECUTE rows are reported: `NETRUN`, the whole graph execute as the
/// application (`qnn-net-run`) saw it, host-side overheads (RPC, buffer copies) included. That
/// is the latency a deployed app pays per inference. The `BACKEND` rows are other metrics
/// (`QNN accelerator (execute) time`, `QNN (execute) time`, cycles, thread counts): they leave
/// those overheads out, would flatter a split model with many contexts, and are never used
/// in its place (a log without NETRUN rows has no per-inference time).
pub const TIMING_SOURCE: &str = "NETRUN";

pub use xtask_runtime::report::latency::ExecuteStats;

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

/// A cell of a documented vocabulary, with the viewer's exact spelling, or the text of one
/// this code does not know: shown as unknown, never mapped onto a known kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind<T> {
    Known(T),
    Unknown(String),
}

impl<T: Copy> Kind<T> {
    fn of(text: &str, table: &[(&str, T)]) -> Self {
        table
            .iter()
            .find(|(spelling, _)| *spelling == text)
            .map_or_else(|| Kind::Unknown(text.to_string()), |(_, k)| Kind::Known(*k))
    }
}

/// The viewer's `Message` column: the phase an event belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Init,
    ComposeGraphs,
    Finalize,
    Execute,
    ExecuteIps,
    DeInit,
}

const PHASES: &[(&str, Phase)] = &[
    ("INIT", Phase::Init),
    ("COMPOSE GRAPHS", Phase::ComposeGraphs),
    ("FINALIZE", Phase::Finalize),
    ("EXECUTE", Phase::Execute),
    ("EXECUTE IPS", Phase::ExecuteIps),
    ("DE-INIT", Phase::DeInit),
];

/// The `Unit of Measurement` column: only `US` is a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Us,
    Cycles,
    Count,
    Bytes,
    InfPerSec,
}

const UNITS: &[(&str, Unit)] = &[
    ("US", Unit::Us),
    ("CYCLES", Unit::Cycles),
    ("COUNT", Unit::Count),
    ("BYTES", Unit::Bytes),
    ("INF/SEC", Unit::InfPerSec),
];

/// The `Event Level` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// A top-level event.
    Root,
    /// A part of the ROOT event before it (an op's cycles, …).
    SubEvent,
}

const LEVELS: &[(&str, Level)] = &[("ROOT", Level::Root), ("SUB-EVENT", Level::SubEvent)];

/// One event row of the viewer's CSV, each column of a documented vocabulary placed.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// 1-based line in the CSV, for messages.
    pub line: usize,
    pub phase: Kind<Phase>,
    pub value: f64,
    pub unit: Kind<Unit>,
    pub source: String,
    pub level: Kind<Level>,
    pub identifier: String,
}

impl Row {
    /// A per-inference time of `source`: a ROOT EXECUTE row of that timing source.
    fn is_execute_of(&self, source: &str) -> bool {
        self.phase == Kind::Known(Phase::Execute)
            && self.source == source
            && self.level != Kind::Known(Level::SubEvent)
    }

    /// Its kinds the code does not know, as the viewer spelled them.
    pub fn unknown_kinds(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Kind::Unknown(m) = &self.phase {
            out.push(format!("message `{m}`"));
        }
        if let Kind::Unknown(u) = &self.unit {
            out.push(format!("unit `{u}`"));
        }
        if let Kind::Unknown(l) = &self.level {
            out.push(format!("event level `{l}`"));
        }
        out
    }
}

/// Every event row after the header. A missing cell or a value that is not a number is a
/// layout this code does not know (an error naming the line); a message, unit or level of
/// no documented kind is kept as [`Kind::Unknown`].
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
    let (message, time, unit, source, level, id) = (
        col("Message")?,
        col("Time")?,
        col("Unit of Measurement")?,
        col("Timing Source")?,
        col("Event Level")?,
        col("Event Identifier")?,
    );
    let mut out = Vec::new();
    for (i, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let cells = split_csv(line);
        let at = || format!("profile CSV line {} `{line}`", i + 1);
        let cell = |c: usize| cells.get(c).map(String::as_str).unwrap_or("");
        if cell(message).is_empty() || cell(source).is_empty() || cell(level).is_empty() {
            bail!("{}: no message, timing source or event level", at());
        }
        let value: f64 = cell(time)
            .parse()
            .with_context(|| format!("{}: `{}` is not a number", at(), cell(time)))?;
        out.push(Row {
            line: i + 1,
            phase: Kind::of(cell(message), PHASES),
            value,
            unit: Kind::of(cell(unit), UNITS),
            source: cell(source).to_string(),
            level: Kind::of(cell(level), LEVELS),
            identifier: cell(id).to_string(),
        });
    }
    Ok(out)
}

/// The per-inference execute times (µs) of `timing_source`: its ROOT `EXECUTE` rows, in file
/// order. `SUB-EVENT` rows, `EXECUTE IPS` (a rate) and other sources are left out. Such a row
/// in a unit other than `US`, or at an unknown level, cannot be placed: an error naming it.
pub fn execute_samples_us(csv: &str, timing_source: &str) -> Result<Vec<f64>> {
    let mut samples = Vec::new();
    for row in rows(csv)?.iter().filter(|r| r.is_execute_of(timing_source)) {
        match (&row.unit, &row.level) {
            (Kind::Known(Unit::Us), Kind::Known(Level::Root)) => samples.push(row.value),
            _ => bail!(
                "profile CSV line {}: a {timing_source} EXECUTE row ({}) in {} at level {} is not a per-inference time in US",
                row.line,
                row.identifier,
                spelled(&row.unit, UNITS),
                spelled(&row.level, LEVELS)
            ),
        }
    }
    Ok(samples)
}

fn spelled<T: Copy + PartialEq>(kind: &Kind<T>, table: &[(&str, T)]) -> String {
    match kind {
        Kind::Known(k) => table
            .iter()
            .find(|(_, t)| t == k)
            .map_or("?", |(s, _)| s)
            .to_string(),
        Kind::Unknown(text) => format!("`{text}` (unknown)"),
    }
}

/// The rows of kinds this code does not know, one line each (`line N: message `X``), for the
/// user to see; they are never counted.
pub fn unknown_rows(csv: &str) -> Result<Vec<String>> {
    Ok(rows(csv)?
        .iter()
        .filter_map(|r| {
            let kinds = r.unknown_kinds();
            (!kinds.is_empty()).then(|| format!("line {}: {}", r.line, kinds.join(", ")))
        })
        .collect())
}

/// The distribution of the [`TIMING_SOURCE`] per-inference execute times; `None` when the
/// CSV has no such rows. Rows of unknown kinds are named on stderr, not counted.
pub fn execute_stats(csv: &str) -> Result<Option<ExecuteStats>> {
    for unknown in unknown_rows(csv)? {
        xtask_base::ui::warning(&format!(
            "qnn-profile-viewer row of unknown kind, not used: {unknown}"
        ));
    }
    let samples = execute_samples_us(csv, TIMING_SOURCE)?;
    Ok((!samples.is_empty()).then(|| ExecuteStats::of(TIMING_SOURCE, &samples)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three inferences as a public QAIRT 2.47 run prints them: preamble, header, init events,
    /// per inference one NETRUN and several BACKEND ROOT EXECUTE rows (two of them in US, of
    /// different metrics) plus cycles, counts and per-op SUB-EVENT cycles.
    const CSV: &str = "\
Log File Created: Tue Jun  2 10:00:00 2026
Time Scale: 1e-06
Epoch Timestamp: 1780394400000000 Steady Clock Timestamp: 15423000000
Generated using:
qnn-profile-viewer v2.47.0.260601114230
qnn-net-run        v2.47.0.260601114230
Backend            v2.47.0.260601114230

Msg Timestamp, Message, Time, Unit of Measurement, Timing Source, Event Level, Event Identifier
15423000200,INIT,51000,US,NETRUN,ROOT,Graph Init
15423000300,INIT,48000,US,BACKEND,ROOT,\"RPC (init) time, incl. finalize\"
15423026395,EXECUTE,480,US,NETRUN,ROOT,Graph 0: g
15423026396,EXECUTE,410,US,BACKEND,ROOT,QNN accelerator (execute) time
15423026397,EXECUTE,51234567,CYCLES,BACKEND,ROOT,Accelerator (execute) time (cycles)
15423026398,EXECUTE,470,US,BACKEND,ROOT,QNN (execute) time
15423026399,EXECUTE,4,COUNT,BACKEND,ROOT,Number of HVX threads used
15423026400,EXECUTE,13807,CYCLES,BACKEND,SUB-EVENT,_Transpose_3:OpId_119 (cycles)
15423030000,EXECUTE,520,US,NETRUN,ROOT,Graph 0: g
15423030001,EXECUTE,430,US,BACKEND,ROOT,QNN accelerator (execute) time
15423040000,EXECUTE,1500,US,NETRUN,ROOT,Graph 0: g
15423040001,EXECUTE,1200,US,BACKEND,ROOT,QNN accelerator (execute) time
15423040002,EXECUTE IPS,1190.5,INF/SEC,NETRUN,ROOT,Graph 0: g
15423050000,DE-INIT,3000,US,NETRUN,ROOT,Graph Deinit
";

    #[test]
    fn one_netrun_time_per_inference_by_header_names_not_the_first_number() {
        assert_eq!(
            execute_samples_us(CSV, "NETRUN").unwrap(),
            [480.0, 520.0, 1500.0]
        );
        let s = execute_stats(CSV).unwrap().unwrap();
        assert_eq!(s.timing_source, "NETRUN");
        assert_eq!(s.samples, 3);
        assert_eq!((s.min_us, s.p50_us, s.max_us), (480.0, 520.0, 1500.0));
        assert!(
            unknown_rows(CSV).unwrap().is_empty(),
            "every kind is documented"
        );
    }

    #[test]
    fn columns_are_found_wherever_the_header_puts_them() {
        let csv = "preamble\nEvent Identifier,Timing Source,Event Level,Unit of Measurement,Time,Message,Msg Timestamp\nx,NETRUN,ROOT,US,77,EXECUTE,999999\n";
        assert_eq!(execute_samples_us(csv, "NETRUN").unwrap(), [77.0]);
    }

    /// The BACKEND rows are other metrics: a log without NETRUN rows has no per-inference
    /// time rather than one borrowed from them.
    #[test]
    fn backend_rows_never_stand_in_for_netrun() {
        let backend_only: String = CSV
            .lines()
            .filter(|l| !l.contains("NETRUN"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(execute_stats(&backend_only).unwrap(), None);
    }

    /// Exact spellings only: `DEINIT` is not `DE-INIT`, `MS` is no documented unit; such rows
    /// are named as unknown and never counted, and a NETRUN EXECUTE row that cannot be placed
    /// as a time is an error naming its line.
    #[test]
    fn unknown_kinds_are_shown_as_unknown_never_mapped() {
        let odd = format!(
            "{CSV}15423060000,DEINIT,3000,US,NETRUN,ROOT,x\n15423060001,EXECUTE,7,MS,BACKEND,ROOT,y\n"
        );
        let unknown = unknown_rows(&odd).unwrap();
        assert_eq!(
            unknown,
            ["line 24: message `DEINIT`", "line 25: unit `MS`"],
            "{unknown:?}"
        );
        assert_eq!(execute_samples_us(&odd, "NETRUN").unwrap().len(), 3);
        for bad in [
            "15423060002,EXECUTE,1.5,MS,NETRUN,ROOT,Graph 0: g",
            "15423060002,EXECUTE,5,US,NETRUN,LEAF,Graph 0: g",
        ] {
            let err = execute_stats(&format!("{CSV}{bad}\n"))
                .unwrap_err()
                .to_string();
            assert!(err.contains("line 24") && err.contains("unknown"), "{err}");
        }
    }

    #[test]
    fn a_csv_without_header_or_rows_is_not_a_time() {
        assert!(execute_samples_us("Execute,1234,us\n", "NETRUN").is_err());
        let header = "Msg Timestamp,Message,Time,Unit of Measurement,Timing Source,Event Level,Event Identifier\n";
        assert_eq!(execute_stats(header).unwrap(), None);
        let not_a_number = format!("{header}1,EXECUTE,fast,US,NETRUN,ROOT,g\n");
        assert!(execute_stats(&not_a_number).is_err());
    }
}
