//! Peak memory and CPU time of a step, from the kernel. Memory: `/proc/self/clear_refs` ← `5` resets the process's
//! peak resident set (`VmHWM`, Linux 4.0+), read back from `/proc/self/status` when the step
//! ends. Steps of one process share both: with `--jobs` above 1 a step's CPU seconds include
//! whatever ran beside it, and a step starting resets the peak of one already running.
//! `StepMeter` says so in the figures (`beside_other_steps`) instead of letting an upper bound
//! pass for a step's own cost (it once did: a 1-layer vision compile read 1,935 s of CPU
//! beside another build, 945 s alone).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Steps measuring now, and how many have ever started: a step overlapped another when one
/// was running at its start or one started before it ended.
static RUNNING: AtomicUsize = AtomicUsize::new(0);
static STARTED: AtomicU64 = AtomicU64::new(0);

/// One step's measurement, from `start` to `finish`.
pub struct StepMeter {
    rss_start_mb: Option<f64>,
    children_peak_start_mb: Option<f64>,
    cpu_start_s: Option<f64>,
    others_at_start: usize,
    started_seq: u64,
}

/// What a step cost, as `build-soc<N>.json` reports it.
pub struct StepCost {
    pub peak_rss_mb: Option<f64>,
    pub rss_start_mb: Option<f64>,
    pub cpu_s: Option<f64>,
    /// The largest peak resident memory of a child process waited for during the step (the
    /// quantizer's Python, the SDK's tools), MB. The kernel keeps only the largest child's
    /// peak of the whole process, so this is known only when a child of this step exceeded
    /// every earlier one; otherwise absent (not zero).
    pub child_peak_rss_mb: Option<f64>,
    /// Another step of this process ran during this one: `cpu_s` is an upper bound of this
    /// step's and `peak_rss_mb` is not this step's alone.
    pub beside_other_steps: bool,
}

impl StepMeter {
    pub fn start() -> Self {
        let others_at_start = RUNNING.fetch_add(1, Ordering::SeqCst);
        let started_seq = STARTED.fetch_add(1, Ordering::SeqCst) + 1;
        // The peak is reset before the start is read, so the start is a size of this step.
        reset_peak();
        StepMeter {
            rss_start_mb: current_mb(),
            children_peak_start_mb: children_peak_mb(),
            cpu_start_s: cpu_seconds(),
            others_at_start,
            started_seq,
        }
    }

    pub fn finish(self) -> StepCost {
        // The resident size the step started at is part of its peak: the kernel's counters
        // are per-thread caches synced lazily, so a high-water mark read a little under the
        // start (138.67 against 138.71 MB, seen) is the counters' lag, not a smaller peak.
        let peak_rss_mb = match (peak_mb(), self.rss_start_mb) {
            (Some(peak), Some(start)) => Some(peak.max(start)),
            (peak, _) => peak,
        };
        let cpu_s = cpu_seconds()
            .zip(self.cpu_start_s)
            .map(|(end, start)| end - start);
        let child_peak_rss_mb = match (children_peak_mb(), self.children_peak_start_mb) {
            (Some(now), Some(before)) if now > before => Some(now),
            _ => None,
        };
        RUNNING.fetch_sub(1, Ordering::SeqCst);
        let started_since = STARTED.load(Ordering::SeqCst) != self.started_seq;
        StepCost {
            peak_rss_mb,
            rss_start_mb: self.rss_start_mb,
            cpu_s,
            child_peak_rss_mb,
            beside_other_steps: self.others_at_start > 0 || started_since,
        }
    }
}

/// CPU seconds (user + system) this process and its waited-for children (the SDK's tools)
/// have used so far. A step's difference is what
/// it cost whatever else the machine ran: wall seconds of a compile on a loaded 2-core machine
/// say more about the load than the compile. Steps of one process share it like the peak.
pub fn cpu_seconds() -> Option<f64> {
    let used = |who| {
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a writable rusage; RUSAGE_SELF / RUSAGE_CHILDREN are valid.
        if unsafe { libc::getrusage(who, &mut ru) } != 0 {
            return None;
        }
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        Some(secs(ru.ru_utime) + secs(ru.ru_stime))
    };
    Some(used(libc::RUSAGE_SELF)? + used(libc::RUSAGE_CHILDREN)?)
}

/// The largest peak resident set of any child process waited for so far (getrusage
/// `RUSAGE_CHILDREN` `ru_maxrss`, KB on Linux), MB.
pub fn children_peak_mb() -> Option<f64> {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a writable rusage; RUSAGE_CHILDREN is valid.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return None;
    }
    Some(ru.ru_maxrss as f64 / 1024.0)
}

/// Starts a new peak measurement (best effort: without `/proc`, the peak is the process's).
pub fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", b"5");
}

/// The peak resident set since the last reset, MB (None where `/proc` is absent).
pub fn peak_mb() -> Option<f64> {
    status_mb("VmHWM:")
}

/// The resident set now, MB: a step's increase is its peak minus this at its start.
pub fn current_mb() -> Option<f64> {
    status_mb("VmRSS:")
}

fn status_mb(field: &str) -> Option<f64> {
    kb_field_mb("/proc/self/status", field)
}

/// A `Name:  1234 kB` line of a `/proc` file (`status`, `meminfo`), in MB.
pub fn kb_field_mb(path: &str, field: &str) -> Option<f64> {
    let text = std::fs::read_to_string(path).ok()?;
    let kb: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_step_knows_whether_another_ran_beside_it() {
        // Lib tests share this process: hold the meters in one test so none interleave.
        let alone = super::StepMeter::start().finish();
        let a = super::StepMeter::start();
        let b = super::StepMeter::start();
        let b = b.finish();
        let a = a.finish();
        let after = super::StepMeter::start().finish();
        assert!(!alone.beside_other_steps && !after.beside_other_steps);
        assert!(a.beside_other_steps, "b started during a");
        assert!(b.beside_other_steps, "a was running when b started");
        assert!(a.cpu_s.unwrap() >= 0.0);
    }

    #[test]
    fn the_peak_is_read_and_follows_an_allocation() {
        super::reset_peak();
        let before = super::peak_mb().unwrap();
        let block = vec![1u8; 64 << 20];
        std::hint::black_box(&block);
        let after = super::peak_mb().unwrap();
        assert!(after >= before + 60.0, "{before} -> {after}");
    }
}
