//! Progress from the HTP graph compiler. QNN's compiler prints its stages to the process's
//! native stdout (`Starting stage: <name>`, `Completed stage: <name> (<µs> us)`, and a
//! `[####   ]  NN%` bar), which the tool sends to the command's native log (see
//! `ui::stdio`). While a context step runs, a watcher tails that log: the stage, its
//! percent and the elapsed time go to the spinner on a terminal, and to one heartbeat line
//! every 30 s otherwise (`XTASK_HEARTBEAT_SECS`), so no step stays silent for minutes. The
//! compiler's output is kept in `reports/<model>/logs/<component>-context.log` and the
//! per-stage durations go into the build report. With `--jobs` above 1 the compilers share
//! one stdout, so each step's log may also hold lines of the other compile running beside it.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

/// What the compiler has said so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CompileLog {
    /// The stage running now (None before the first and after `Completion`).
    pub stage: Option<String>,
    /// The last percent of the running stage's bar.
    pub percent: Option<u8>,
    /// Completed stages with their durations in seconds, as the compiler reports them.
    pub stages: Vec<(String, f64)>,
    /// The unfinished last line of what was fed so far.
    #[serde(skip)]
    pending: String,
}

impl CompileLog {
    /// Takes more compiler output (any chunking: lines may arrive cut in two).
    pub fn feed(&mut self, text: &str) {
        let joined = std::mem::take(&mut self.pending) + text;
        let (complete, rest) = match joined.rfind('\n') {
            Some(i) => (&joined[..i], &joined[i + 1..]),
            None => ("", joined.as_str()),
        };
        let rest = rest.to_string();
        for line in complete.split('\n') {
            if let Some(name) = line.trim().strip_prefix("Starting stage:") {
                self.stage = Some(name.trim().to_string());
                self.percent = None;
            } else if let Some(rest) = line.trim().strip_prefix("Completed stage:") {
                let (name, us) = match rest.rsplit_once('(') {
                    Some((n, t)) => (
                        n.trim(),
                        t.trim_end_matches(')')
                            .trim()
                            .trim_end_matches("us")
                            .trim()
                            .parse::<f64>()
                            .ok(),
                    ),
                    None => (rest.trim(), None),
                };
                if let Some(us) = us {
                    self.stages.push((name.to_string(), us / 1e6));
                }
                if self.stage.as_deref() == Some(name) {
                    self.stage = None;
                    self.percent = None;
                }
            } else if let Some(p) = last_percent(line) {
                self.percent = Some(p);
            }
        }
        // A bar has no newline: its percent counts at once; a stage line waits for its end.
        if let Some(p) = last_percent(&rest) {
            self.percent = Some(p);
        }
        self.pending = rest;
    }

    /// `Graph Sequencing for Target 42%` (or the last completed stage).
    pub fn describe(&self) -> String {
        match (&self.stage, self.percent) {
            (Some(s), Some(p)) => format!("{s} {p}%"),
            (Some(s), None) => s.clone(),
            (None, _) => self
                .stages
                .last()
                .map_or("starting".into(), |(s, _)| format!("after {s}")),
        }
    }
}

/// The last `NN%` of a progress bar in `line`.
fn last_percent(line: &str) -> Option<u8> {
    let idx = line.rfind('%')?;
    let digits: String = line[..idx]
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().ok().filter(|p| *p <= 100)
}

/// A running watcher; `finish` stops it and returns what the compiler said.
pub struct CompileWatch {
    stop: Arc<AtomicBool>,
    log: Arc<Mutex<CompileLog>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

pub use xtask_base::ui::progress::Report;

impl CompileWatch {
    /// Tails `native_log` from its current end, copying what it reads into `step_log`;
    /// `on_tick` gets "stage NN% (elapsed)" every poll and `on_heartbeat` every heartbeat.
    pub fn start(
        native_log: &Path,
        step_log: PathBuf,
        on_tick: Report,
        on_heartbeat: Report,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(CompileLog::default()));
        let start_at = std::fs::metadata(native_log).map_or(0, |m| m.len());
        let (stop2, log2, path) = (stop.clone(), log.clone(), native_log.to_path_buf());
        let heartbeat = xtask_base::ui::progress::heartbeat_every();
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let mut last_beat = Instant::now();
            let mut offset = start_at;
            if let Some(dir) = step_log.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let mut out = std::fs::File::create(&step_log).ok();
            loop {
                let stopping = stop2.load(Ordering::Relaxed);
                if let Ok(mut f) = std::fs::File::open(&path)
                    && f.seek(SeekFrom::Start(offset)).is_ok()
                {
                    let mut buf = Vec::new();
                    if f.read_to_end(&mut buf).is_ok() && !buf.is_empty() {
                        offset += buf.len() as u64;
                        if let Some(o) = out.as_mut() {
                            let _ = o.write_all(&buf);
                        }
                        if let Ok(mut l) = log2.lock() {
                            l.feed(&String::from_utf8_lossy(&buf));
                        }
                    }
                }
                if stopping {
                    return;
                }
                let now = log2.lock().map(|l| l.describe()).unwrap_or_default();
                let elapsed = started.elapsed().as_secs();
                on_tick(&format!("{now} ({elapsed} s)"));
                if last_beat.elapsed() >= heartbeat {
                    last_beat = Instant::now();
                    on_heartbeat(&format!("still compiling after {elapsed} s: {now}"));
                }
                std::thread::sleep(Duration::from_millis(250));
            }
        });
        CompileWatch {
            stop,
            log,
            thread: Some(thread),
        }
    }

    pub fn finish(mut self) -> CompileLog {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_percent_and_durations_are_parsed_across_chunks() {
        let mut log = CompileLog::default();
        log.feed("Starting stage: Graph Optimizations\nCompleted stage: Graph Optim");
        log.feed("izations (143532 us)\nStarting stage: Graph Sequencing for Target\n [##   ]   4% [###  ]  6%");
        assert_eq!(
            log.stages,
            vec![("Graph Optimizations".to_string(), 0.143532)]
        );
        assert_eq!(log.describe(), "Graph Sequencing for Target 6%");
        log.feed("[#####] 100%\nCompleted stage: Graph Sequencing for Target (100283 us)\n");
        assert_eq!(log.stages.len(), 2);
        assert_eq!(log.describe(), "after Graph Sequencing for Target");
    }

    #[test]
    fn a_percent_is_only_a_bar_value() {
        assert_eq!(last_percent(" [#   ]  42%"), Some(42));
        assert_eq!(last_percent("no percent"), None);
        assert_eq!(last_percent("300%"), None);
    }
}
