//! One stage run as a child process of this tool, measured the way the summary reports it:
//! wall seconds; CPU seconds and the process tree's peak RSS from `wait4` (the kernel folds
//! every waited-for descendant into them: the quantizer's Python, the compilers); the tool's
//! own peak and the largest descendant's, sampled from `/proc/<pid>/status` `VmHWM` (a
//! monotonic high-water mark, so a sample is a lower bound at most one period old). A
//! heartbeat with the elapsed and estimated remaining time goes to stderr every period.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// What one stage's process measured.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Measured {
    pub exit_code: i32,
    pub wall_s: f64,
    /// User + system seconds of the tool and every descendant it waited for.
    pub cpu_s: f64,
    /// The tool's own peak RSS (sampled VmHWM).
    pub tool_peak_rss_mb: f64,
    /// The largest descendant's peak RSS (sampled VmHWM; 0 when it had none).
    pub largest_child_peak_rss_mb: f64,
    /// The peak of the whole process tree (wait4's ru_maxrss: exact).
    pub tree_peak_rss_mb: f64,
}

/// Runs `tool --root root args…` with the tool's own stdout and stderr (its progress shows),
/// measuring it; `estimate_s` feeds the heartbeat's remaining time.
pub fn run_measured(
    tool: &Path,
    root: &Path,
    args: &[String],
    label: &str,
    estimate_s: Option<f64>,
) -> Result<Measured> {
    let started = Instant::now();
    // The user's terminal (or log), not this process's native log that fds 1 and 2 point at.
    let (out, err) = xtask_base::ui::stdio::tool_stdio_for_child()?;
    let mut child = std::process::Command::new(tool)
        .arg("--root")
        .arg(root)
        .args(args)
        .stdout(out)
        .stderr(err)
        .spawn()
        .with_context(|| format!("cannot start {}", tool.display()))?;
    let pid = child.id() as i32;
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let done = Arc::clone(&done);
        let label = label.to_string();
        std::thread::spawn(move || sample(pid, &done, started, &label, estimate_s))
    };
    let (status, usage) = wait4(pid)?;
    // The Child handle must not wait again (the pid is reaped): forget it.
    let _ = child.try_wait();
    done.store(true, Ordering::Relaxed);
    let (tool_kb, child_kb) = sampler.join().unwrap_or((0, 0));
    let cpu = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok(Measured {
        exit_code: status,
        wall_s: started.elapsed().as_secs_f64(),
        cpu_s: cpu(usage.ru_utime) + cpu(usage.ru_stime),
        tool_peak_rss_mb: tool_kb as f64 / 1024.0,
        largest_child_peak_rss_mb: child_kb as f64 / 1024.0,
        tree_peak_rss_mb: usage.ru_maxrss as f64 / 1024.0,
    })
}

/// Waits for `pid` and returns its exit code (128 + signal when killed) and its resource use.
fn wait4(pid: i32) -> Result<(i32, libc::rusage)> {
    // SAFETY: wait4 fills `status` and `usage`, which we own.
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e).context("wait4 on the stage's process");
        }
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    Ok((code, usage))
}

/// Samples the VmHWM of `pid` and of its descendants until `done`; prints the heartbeat.
/// Returns (the tool's peak, the largest descendant's peak), in kB.
fn sample(
    pid: i32,
    done: &AtomicBool,
    started: Instant,
    label: &str,
    estimate_s: Option<f64>,
) -> (u64, u64) {
    let period = xtask_base::ui::progress::heartbeat_every();
    let mut last_beat = Instant::now();
    let mut tool = 0u64;
    let mut children: BTreeMap<i32, u64> = BTreeMap::new();
    while !done.load(Ordering::Relaxed) {
        if let Some(kb) = vm_hwm_kb(pid) {
            tool = tool.max(kb);
        }
        for c in descendants(pid) {
            if let Some(kb) = vm_hwm_kb(c) {
                let e = children.entry(c).or_insert(0);
                *e = (*e).max(kb);
            }
        }
        if last_beat.elapsed() >= period {
            last_beat = Instant::now();
            let elapsed = started.elapsed().as_secs_f64();
            let left = match estimate_s {
                Some(e) if e > elapsed => format!(", about {} left", minutes(e - elapsed)),
                Some(_) => ", past its estimate".to_string(),
                None => String::new(),
            };
            xtask_base::errln!(
                "bench real-size: {label} still running ({} elapsed{left})",
                minutes(elapsed)
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    (tool, children.values().copied().max().unwrap_or(0))
}

/// `12 min`, `1 h 05 min`, `40 s`.
pub fn minutes(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

fn vm_hwm_kb(pid: i32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// Every live descendant of `pid` (through `/proc/<pid>/task/<tid>/children`).
fn descendants(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let children = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            for c in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                out.push(c);
                todo.push(c);
            }
        }
    }
    out
}

/// Bytes of the files under `dir`, each inode counted once (hard links share their bytes).
pub fn disk_bytes(dirs: &[&Path]) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut seen = std::collections::BTreeSet::new();
    let mut total = 0;
    for dir in dirs {
        for e in walkdir::WalkDir::new(dir).into_iter().flatten() {
            let Ok(m) = e.path().symlink_metadata() else {
                continue;
            };
            if m.is_file() && seen.insert((m.dev(), m.ino())) {
                total += m.len();
            }
        }
    }
    total
}
