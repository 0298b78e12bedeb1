//! Captures what native code writes to the process's stdout (fd 1). QNN's HTP graph
//! preparation prints progress lines straight to fd 1 from C++; the tool's stdout carries its
//! own tables and must not be interleaved with them. The captured text is kept for `-v`.

use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::sync::Mutex;

static STDOUT_SWAP: Mutex<()> = Mutex::new(());
static CAPTURED: Mutex<String> = Mutex::new(String::new());

pub fn with_stdout_captured<T>(f: impl FnOnce() -> T) -> T {
    let _guard = STDOUT_SWAP.lock().unwrap_or_else(|e| e.into_inner());
    let Ok(mut sink) = tempfile::tempfile() else {
        return f();
    };
    let _ = std::io::stdout().flush();
    // SAFETY: plain POSIX fd calls; fd 1 is restored before returning.
    let saved = unsafe { libc::dup(1) };
    if saved < 0 {
        return f();
    }
    unsafe { libc::dup2(sink.as_raw_fd(), 1) };
    let out = f();
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::dup2(saved, 1);
        libc::close(saved);
    }
    let mut text = String::new();
    if sink.rewind().is_ok()
        && sink.read_to_string(&mut text).is_ok()
        && let Ok(mut all) = CAPTURED.lock()
    {
        all.push_str(&text);
    }
    out
}

/// Everything native code printed to stdout so far (drained).
pub fn take_captured() -> String {
    CAPTURED
        .lock()
        .map(|mut s| std::mem::take(&mut *s))
        .unwrap_or_default()
}
