//! Keeps the tool's own output apart from what the native libraries print. QNN's HTP graph
//! preparation writes progress to fd 1 and `LIBNATIVE: …` notes to fd 2 straight from C++,
//! from whichever thread runs it, at any time after the library loads. Redirecting around
//! each native call would need a process-wide lock and still lose prints from the library's
//! own threads, so the redirection is done once at start-up instead: fds 1 and 2 are
//! duplicated for the tool's own output (`outln!`, `errln!`, the progress bars), and fds 1
//! and 2 themselves are pointed at the command's native log (with `-v`, native stdout goes to
//! stderr and native stderr stays there). Child processes inherit the native log too.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

static TOOL_STDOUT: OnceLock<Mutex<File>> = OnceLock::new();
static TOOL_STDERR: OnceLock<Mutex<File>> = OnceLock::new();
static NATIVE_LOG: OnceLock<PathBuf> = OnceLock::new();
static TERMINALS: OnceLock<(bool, bool)> = OnceLock::new();
/// `--json`: the tool's human lines go to stderr, stdout carries one JSON document.
static HUMAN_TO_STDERR: AtomicBool = AtomicBool::new(false);

/// A native log kept below this size: appended to by every command, restarted past it.
const NATIVE_LOG_LIMIT: u64 = 16 << 20;

/// Whether the tool's stdout and stderr are terminals (as they were before the redirection).
pub fn terminals() -> (bool, bool) {
    *TERMINALS.get_or_init(|| unsafe { (libc::isatty(1) == 1, libc::isatty(2) == 1) })
}

/// Where native output of this process goes (absent with `-v` or before `isolate`).
pub fn native_log() -> Option<&'static Path> {
    NATIVE_LOG.get().map(PathBuf::as_path)
}

/// Redirects native stdout and stderr to `log` (native stdout to stderr when `verbose`); the
/// tool keeps the real ones for its own lines.
pub fn isolate_native_output(log: &Path, verbose: bool) {
    if TOOL_STDOUT.get().is_some() {
        return;
    }
    terminals();
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: plain POSIX fd calls on fds this process owns.
    let (saved_out, saved_err) = unsafe { (libc::dup(1), libc::dup(2)) };
    if saved_out < 0 || saved_err < 0 {
        return;
    }
    if verbose {
        unsafe { libc::dup2(2, 1) };
    } else {
        let Some(file) = open_native_log(log) else {
            unsafe {
                libc::close(saved_out);
                libc::close(saved_err);
            }
            return;
        };
        unsafe {
            libc::dup2(file.as_raw_fd(), 1);
            libc::dup2(file.as_raw_fd(), 2);
        }
        let _ = NATIVE_LOG.set(log.to_path_buf());
    }
    let _ = TOOL_STDOUT.set(Mutex::new(unsafe { File::from_raw_fd(saved_out) }));
    let _ = TOOL_STDERR.set(Mutex::new(unsafe { File::from_raw_fd(saved_err) }));
    // A panic is the tool's own message: shown, not buried in the native log.
    std::panic::set_hook(Box::new(|info| write_err(&format!("{info}"))));
}

fn open_native_log(log: &Path) -> Option<File> {
    std::fs::create_dir_all(log.parent()?).ok()?;
    if std::fs::metadata(log).is_ok_and(|m| m.len() > NATIVE_LOG_LIMIT) {
        let _ = std::fs::remove_file(log);
    }
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .ok()?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let _ = writeln!(
        file,
        "=== cargo xtask {} (pid {})",
        args.join(" "),
        std::process::id()
    );
    Some(file)
}

/// Sends the tool's human lines (`outln!`) to stderr from now on (`--json` owns stdout).
pub fn human_lines_to_stderr() {
    HUMAN_TO_STDERR.store(true, Ordering::Relaxed);
}

/// Writes one line to the tool's own stdout (stderr under `--json`).
pub fn write_line(text: &str) {
    if HUMAN_TO_STDERR.load(Ordering::Relaxed) {
        return write_err(text);
    }
    write_stdout(text);
}

/// Writes one line to the tool's own stdout, whatever `--json` says (the JSON document).
pub fn write_stdout(text: &str) {
    if !write_to(&TOOL_STDOUT, text) {
        println!("{text}");
    }
}

/// Writes one line to the tool's own stderr.
pub fn write_err(text: &str) {
    if !write_to(&TOOL_STDERR, text) {
        eprintln!("{text}");
    }
}

/// One line to a captured stream's saved descriptor; false when nothing was captured (then the
/// process's own stream is still the terminal's).
fn write_to(stream: &OnceLock<Mutex<File>>, text: &str) -> bool {
    let Some(file) = stream.get() else {
        return false;
    };
    let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
    let _ = writeln!(file, "{text}");
    true
}

/// Raw bytes to the tool's own stderr (the progress bars' drawing).
pub fn write_err_raw(bytes: &[u8]) -> std::io::Result<()> {
    match TOOL_STDERR.get() {
        Some(err) => {
            let mut err = err.lock().unwrap_or_else(|e| e.into_inner());
            err.write_all(bytes)?;
            err.flush()
        }
        None => {
            let mut err = std::io::stderr().lock();
            err.write_all(bytes)?;
            err.flush()
        }
    }
}

/// The raw fd of the tool's stderr (for the terminal's width).
pub fn tool_stderr_fd() -> i32 {
    TOOL_STDERR
        .get()
        .and_then(|e| e.lock().ok().map(|f| f.as_raw_fd()))
        .unwrap_or(2)
}

/// The tool's own stdout and stderr for a child process of the tool whose output the user
/// should see (the fds 1 and 2 a child inherits by default are the native log's). Each is a
/// fresh duplicate, so the child closing it leaves the tool's own open.
pub fn tool_stdio_for_child() -> std::io::Result<(std::process::Stdio, std::process::Stdio)> {
    let fd_out = TOOL_STDOUT
        .get()
        .and_then(|e| e.lock().ok().map(|f| f.as_raw_fd()))
        .unwrap_or(1);
    let dup = |fd: i32| -> std::io::Result<std::process::Stdio> {
        // SAFETY: dup returns a new fd this process owns (or -1, checked).
        let new = unsafe { libc::dup(fd) };
        if new < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(std::process::Stdio::from(unsafe {
            std::os::fd::OwnedFd::from_raw_fd(new)
        }))
    };
    Ok((dup(fd_out)?, dup(tool_stderr_fd())?))
}

/// `println!` for the tool's own output (never mixed with native library prints).
#[macro_export]
macro_rules! outln {
    () => { $crate::ui::stdio::write_line("") };
    ($($arg:tt)*) => { $crate::ui::stdio::write_line(&format!($($arg)*)) };
}

/// `eprintln!` for the tool's own messages (never mixed with native library prints).
#[macro_export]
macro_rules! errln {
    () => { $crate::ui::stdio::write_err("") };
    ($($arg:tt)*) => { $crate::ui::stdio::write_err(&format!($($arg)*)) };
}
