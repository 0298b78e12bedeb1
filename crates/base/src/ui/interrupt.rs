//! Ctrl-C (SIGINT) and SIGTERM answered instead of ending a long command without a word: one
//! line on stderr says what was interrupted (the running step, as progress last named it) and
//! what was kept, a command's own last words run (`OnInterrupt`: the precision search marks
//! its report interrupted), the child processes the tool started are stopped, the partial
//! outputs of the running steps (staging folders) are removed, and the tool exits 130 (SIGINT)
//! or 143 (SIGTERM), as a shell reports a process ended by that signal.
//!
//! The answer runs on its own thread (`signal-hook`'s iterator: the handler itself only
//! wakes it), and ends the process with `_exit`: the native QNN/ORT libraries may be inside a
//! graph on another thread, and running their static destructors under it could hang. What
//! the tool writes is already whole: reports and binaries are written to a temporary name and
//! renamed (`atomic`), so an interruption leaves the earlier file or the new one.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use signal_hook::consts::{SIGINT, SIGTERM};

/// What runs now (the running step or component), as the progress last named it.
static DOING: Mutex<String> = Mutex::new(String::new());
/// What an interruption of this command keeps, as the command says it.
static KEEPS: Mutex<String> = Mutex::new(String::new());
/// Partial outputs to remove when interrupted (staging folders of running steps).
static PARTIAL: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// Child processes running now (`proc::Proc`).
static CHILDREN: Mutex<Vec<u32>> = Mutex::new(Vec::new());
/// What a command does last when interrupted (`OnInterrupt`), by registration id.
#[allow(clippy::type_complexity)]
static HOOKS: Mutex<Vec<(u64, Box<dyn Fn() + Send>)>> = Mutex::new(Vec::new());

/// Said when a command did not say what it keeps.
const KEPT_BY_DEFAULT: &str =
    "every file written before it (reports and binaries are written whole or not at all)";

/// Starts answering SIGINT and SIGTERM for `command` (the subcommand's name).
pub fn install(command: &str) {
    let mut signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
        Ok(s) => s,
        Err(e) => {
            crate::errln!("warning: Ctrl-C will not be answered ({e})");
            return;
        }
    };
    let command = command.to_string();
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            answer(&command, signal);
        }
    });
}

/// Says what was interrupted and kept, stops the children, removes partial outputs, exits.
fn answer(command: &str, signal: i32) -> ! {
    let (name, code) = match signal {
        SIGTERM => ("SIGTERM", 143),
        _ => ("SIGINT", 130),
    };
    run_hooks();
    // Held until the process ends: no step registers (or creates) a new staging folder after
    // the removal below (`Partial::staging` creates under this lock).
    let partial = PARTIAL.lock().unwrap_or_else(|e| e.into_inner());
    let stopped = stop_children();
    let removed = remove_partial(&partial);
    let doing = read(&DOING);
    let during = match doing.is_empty() {
        true => String::new(),
        false => format!(" during {doing}"),
    };
    let keeps = match read(&KEEPS) {
        k if k.is_empty() => KEPT_BY_DEFAULT.to_string(),
        k => k,
    };
    crate::errln!(
        "interrupted ({name}): `{command}` stopped{during}; kept: {keeps}; removed {removed} partial output(s), stopped {stopped} child process(es)"
    );
    // SAFETY: ends the process at once, without running atexit handlers (see the module doc).
    unsafe { libc::_exit(code) }
}

fn read(m: &Mutex<String>) -> String {
    m.lock().map(|s| s.clone()).unwrap_or_default()
}

/// Sends SIGTERM to every running child; how many there were.
fn stop_children() -> usize {
    let pids = CHILDREN.lock().map(|c| c.clone()).unwrap_or_default();
    for pid in &pids {
        // SAFETY: a plain kill(2) of a child this process started and has not reaped.
        unsafe { libc::kill(*pid as i32, libc::SIGTERM) };
    }
    pids.len()
}

/// Removes every registered partial output; how many were there.
fn remove_partial(paths: &[PathBuf]) -> usize {
    paths
        .iter()
        .filter(|p| {
            let gone = match p.is_dir() {
                true => std::fs::remove_dir_all(p),
                false => std::fs::remove_file(p),
            };
            gone.is_ok()
        })
        .count()
}

/// What runs now, named in the interrupted line.
pub fn doing(what: &str) {
    if let Ok(mut d) = DOING.lock() {
        *d = what.to_string();
    }
}

/// What an interruption of this command keeps (said by the command, once it knows).
pub fn keeps(what: &str) {
    if let Ok(mut k) = KEEPS.lock() {
        *k = what.to_string();
    }
}

/// A partial output, removed when the tool is interrupted while this guard lives.
pub struct Partial(PathBuf);

impl Partial {
    /// A staging folder `<prefix>…` in `dir`, created and registered in one step under the
    /// lock an interruption holds, so none is created after the interruption removed them.
    pub fn staging(dir: &Path, prefix: &str) -> std::io::Result<(tempfile::TempDir, Partial)> {
        let mut p = PARTIAL.lock().unwrap_or_else(|e| e.into_inner());
        let made = tempfile::Builder::new().prefix(prefix).tempdir_in(dir)?;
        p.push(made.path().to_path_buf());
        let guard = Partial(made.path().to_path_buf());
        Ok((made, guard))
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        if let Ok(mut p) = PARTIAL.lock()
            && let Some(i) = p.iter().position(|x| *x == self.0)
        {
            p.swap_remove(i);
        }
    }
}

/// Runs every registered `OnInterrupt` (each one once: the list is emptied first).
fn run_hooks() {
    let hooks = std::mem::take(&mut *HOOKS.lock().unwrap_or_else(|e| e.into_inner()));
    for (_, hook) in hooks {
        hook();
    }
}

/// Something a command does when interrupted, before the tool exits (the precision search
/// marks its report interrupted), while this guard lives. Keep it short: the process ends
/// right after it.
pub struct OnInterrupt(u64);

impl OnInterrupt {
    pub fn new(hook: impl Fn() + Send + 'static) -> OnInterrupt {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut h) = HOOKS.lock() {
            h.push((id, Box::new(hook)));
        }
        OnInterrupt(id)
    }
}

impl Drop for OnInterrupt {
    fn drop(&mut self) {
        if let Ok(mut h) = HOOKS.lock() {
            h.retain(|(id, _)| *id != self.0);
        }
    }
}

/// A running child process, stopped when the tool is interrupted while this guard lives.
pub struct Child(u32);

impl Child {
    pub fn new(pid: u32) -> Child {
        if let Ok(mut c) = CHILDREN.lock() {
            c.push(pid);
        }
        Child(pid)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if let Ok(mut c) = CHILDREN.lock()
            && let Some(i) = c.iter().position(|x| *x == self.0)
        {
            c.swap_remove(i);
        }
    }
}
