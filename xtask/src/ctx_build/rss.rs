//! Peak memory and CPU time of a step, from the kernel. Memory: `/proc/self/clear_refs` ← `5` resets the process's
//! peak resident set (`VmHWM`, Linux 4.0+), read back from `/proc/self/status` when the step
//! ends. Steps of one process share it: with `--jobs` above 1 the figure of a step includes
//! whatever ran beside it (an upper bound, stated as such in the report's field name).

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
    fn the_peak_is_read_and_follows_an_allocation() {
        super::reset_peak();
        let before = super::peak_mb().unwrap();
        let block = vec![1u8; 64 << 20];
        std::hint::black_box(&block);
        let after = super::peak_mb().unwrap();
        assert!(after >= before + 60.0, "{before} -> {after}");
    }
}
