//! Keeps the tool's stdout clean. QNN's HTP graph preparation prints progress lines straight
//! to fd 1 from C++; the tool's stdout carries its own tables. At start-up fd 1 is duplicated
//! for the tool's own output (`outln!`), and fd 1 itself is pointed at a log file (or at
//! stderr with `-v`), once for the whole process, so parallel sessions need no locking.

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::Path;
use std::sync::{Mutex, OnceLock};

static TOOL_STDOUT: OnceLock<Mutex<File>> = OnceLock::new();

/// Redirects native stdout to `log` (or to stderr when `verbose`); the tool keeps the real one.
pub fn isolate_native_stdout(log: &Path, verbose: bool) {
    if TOOL_STDOUT.get().is_some() {
        return;
    }
    let _ = std::io::stdout().flush();
    // SAFETY: plain POSIX fd calls on fds this process owns.
    let saved = unsafe { libc::dup(1) };
    if saved < 0 {
        return;
    }
    let target = if verbose {
        2
    } else {
        let Some(file) = log
            .parent()
            .and_then(|d| std::fs::create_dir_all(d).ok())
            .and_then(|_| File::create(log).ok())
        else {
            unsafe { libc::close(saved) };
            return;
        };
        let fd = file.as_raw_fd();
        unsafe { libc::dup2(fd, 1) };
        let _ = TOOL_STDOUT.set(Mutex::new(unsafe { File::from_raw_fd(saved) }));
        return;
    };
    unsafe { libc::dup2(target, 1) };
    let _ = TOOL_STDOUT.set(Mutex::new(unsafe { File::from_raw_fd(saved) }));
}

/// Writes one line to the tool's own stdout.
pub fn write_line(text: &str) {
    match TOOL_STDOUT.get() {
        Some(out) => {
            let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
            let _ = writeln!(out, "{text}");
        }
        None => println!("{text}"),
    }
}

/// `println!` for the tool's own output (never mixed with native library prints).
#[macro_export]
macro_rules! outln {
    () => { $crate::runtime::stdio::write_line("") };
    ($($arg:tt)*) => { $crate::runtime::stdio::write_line(&format!($($arg)*)) };
}
