//! The one home of progress on long work. On a terminal: indicatif bars with counts, elapsed
//! time and ETA, drawn on the tool's stderr. Without one (CI logs, pipes): a plain line per
//! step the caller marks as worth a line, and a heartbeat line every 30 s
//! (`XTASK_HEARTBEAT_SECS` overrides) so a log never goes silent. `-q` silences all of it.
//! `build` holds the build's per-component spinners; `compile_watch` uses `heartbeat_every`.

pub mod build;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use super::term::{bars_enabled, draw_target};

/// The heartbeat period: 30 s, or `XTASK_HEARTBEAT_SECS` (tests use a short one).
pub fn heartbeat_every() -> Duration {
    std::env::var("XTASK_HEARTBEAT_SECS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .map_or(Duration::from_secs(30), Duration::from_secs_f64)
}

/// An up-front estimate before long work ("about 8 minutes: …"), on stderr unless `-q`.
pub fn estimate(text: &str) {
    if !super::quiet() {
        crate::errln!("{text}");
    }
}

/// "42 s", "3 min 10 s", "about 8 minutes" style durations.
pub fn human_secs(secs: f64) -> String {
    let s = secs.round() as u64;
    match s {
        0..=89 => format!("{s} s"),
        _ => format!("{} min {} s", s / 60, s % 60),
    }
}

struct State {
    label: String,
    total: u64,
    done: AtomicU64,
    current: Mutex<String>,
    started: Instant,
}

impl State {
    fn eta(&self) -> Option<f64> {
        let done = self.done.load(Ordering::Relaxed);
        (done > 0 && done < self.total).then(|| {
            let per = self.started.elapsed().as_secs_f64() / done as f64;
            per * (self.total - done) as f64
        })
    }

    fn status(&self) -> String {
        let done = self.done.load(Ordering::Relaxed);
        let eta = self
            .eta()
            .map(|s| format!(", eta {}", human_secs(s)))
            .unwrap_or_default();
        let now = self.current.lock().map(|c| c.clone()).unwrap_or_default();
        format!(
            "{} [{done}/{}] {now} ({} elapsed{eta})",
            self.label,
            self.total,
            human_secs(self.started.elapsed().as_secs_f64())
        )
    }
}

/// Counted work: `total` steps, a bar on a terminal, lines and heartbeats otherwise.
pub struct Task {
    state: Arc<State>,
    bar: Option<ProgressBar>,
    stop: Arc<AtomicBool>,
    beat: Option<std::thread::JoinHandle<()>>,
}

impl Task {
    pub fn new(label: &str, total: usize) -> Task {
        let state = Arc::new(State {
            label: label.to_string(),
            total: total as u64,
            done: AtomicU64::new(0),
            current: Mutex::new(String::new()),
            started: Instant::now(),
        });
        let stop = Arc::new(AtomicBool::new(false));
        super::interrupt::doing(label);
        let bar = bars_enabled().then(|| {
            let bar = ProgressBar::with_draw_target(Some(total as u64), draw_target());
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix} [{bar:30}] {pos}/{len} {msg} ({elapsed}, eta {eta})",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            bar.set_prefix(label.to_string());
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        let beat = (bar.is_none() && !super::quiet()).then(|| {
            let (state, stop) = (state.clone(), stop.clone());
            std::thread::spawn(move || {
                let every = heartbeat_every();
                let mut last = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100).min(every));
                    if last.elapsed() >= every {
                        last = Instant::now();
                        crate::errln!("{} (still running)", state.status());
                    }
                }
            })
        });
        Task {
            state,
            bar,
            stop,
            beat,
        }
    }

    /// What runs now (the bar's message; named by heartbeats).
    pub fn working_on(&self, what: &str) {
        super::interrupt::doing(&format!("{} ({what})", self.state.label));
        if let Ok(mut c) = self.state.current.lock() {
            *c = what.to_string();
        }
        if let Some(b) = &self.bar {
            b.set_message(what.to_string());
        }
    }

    /// One step done; `line` also says so in plain mode (a log line per step worth one).
    pub fn step_done(&self, what: &str, line: bool) {
        self.state.done.fetch_add(1, Ordering::Relaxed);
        match &self.bar {
            Some(b) => b.inc(1),
            None if line && !super::quiet() => {
                if let Ok(mut c) = self.state.current.lock() {
                    *c = format!("{what} done");
                }
                crate::errln!("{}", self.state.status());
            }
            None => {}
        }
    }

    /// A line for logs without a terminal (nothing on a terminal: the bar says it).
    pub fn println_plain(&self, text: &str) {
        if self.bar.is_none() && !super::quiet() {
            crate::errln!("{text}");
        }
    }

    /// Runs `f` with the bar hidden (for lines on stdout while a bar is drawn on stderr).
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }

    /// A line printed above the bar (or plainly).
    pub fn println(&self, text: &str) {
        match &self.bar {
            Some(b) => b.println(text),
            None => crate::errln!("{text}"),
        }
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.beat.take() {
            let _ = t.join();
        }
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// Where the progress goes: a spinner message setter, or heartbeat lines.
pub type Report = Box<dyn Fn(&str) + Send>;

/// The pulse of one long piece of work that reports nothing itself (a conversion, a CPU
/// parity run, the quantizer): its elapsed time on the spinner every second, and a heartbeat
/// line every `heartbeat_every()` without a terminal. Stops when dropped.
pub struct Beat {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Beat {
    pub fn start(on_tick: Report, on_heartbeat: Report) -> Beat {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let every = heartbeat_every();
            let (mut last_tick, mut last_beat) = (Instant::now(), Instant::now());
            while !stopping.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                let elapsed = human_secs(started.elapsed().as_secs_f64());
                if last_tick.elapsed() >= Duration::from_secs(1) {
                    last_tick = Instant::now();
                    on_tick(&format!("running, {elapsed}"));
                }
                if last_beat.elapsed() >= every {
                    last_beat = Instant::now();
                    on_heartbeat(&format!("still running ({elapsed} elapsed)"));
                }
            }
        });
        Beat {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Beat {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_read_as_seconds_then_minutes() {
        assert_eq!(super::human_secs(42.4), "42 s");
        assert_eq!(super::human_secs(190.0), "3 min 10 s");
    }
}
