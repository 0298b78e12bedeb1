//! The one subprocess runner. Every external program the tool starts (the QAIRT SDK's tools,
//! `hf`, `pip`, `python3`, `git`, the tool itself in benchmarks) goes through [`Proc`], so
//! every failure reads the same way: the argv, the exit status, the tail of the output, the
//! log file that holds all of it, and a `hint:` line when the cause is known. A hang is
//! stopped at the timeout instead of blocking a build forever.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};

/// Lines of output shown in an error (the log file has all of it).
const TAIL_LINES: usize = 15;

/// A program to run: argv, environment, working folder, timeout, where its output goes.
#[derive(Debug, Clone)]
pub struct Proc {
    /// A bare name is looked up on PATH; anything with a `/` is a path (as `execvp` does).
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    dir: Option<PathBuf>,
    timeout: Option<Duration>,
    log: Option<PathBuf>,
    hint: Option<String>,
    /// What a heartbeat line names while the program runs (`heartbeat`).
    beat: Option<String>,
}

/// What a finished program printed (stdout and stderr interleaved, as a terminal shows them).
#[derive(Debug, Clone)]
pub struct Finished {
    pub output: String,
}

impl Proc {
    pub fn new(program: impl Into<OsString>) -> Self {
        Proc {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            dir: None,
            timeout: None,
            log: None,
            hint: None,
            beat: None,
        }
    }

    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Keeps the whole output in this file (created with its folder); errors name it.
    pub fn log(mut self, path: impl Into<PathBuf>) -> Self {
        self.log = Some(path.into());
        self
    }

    /// A `hint:` line added to any failure of this program (what to install, what to check).
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// A heartbeat line on stderr every `XTASK_HEARTBEAT_SECS` (30 s) while it runs, naming
    /// `what` (uploads, downloads, runs on a board: long and silent otherwise); not with `-q`.
    pub fn heartbeat(mut self, what: impl Into<String>) -> Self {
        self.beat = Some(what.into());
        self
    }

    /// The command line as a person would type it (for messages and dry runs).
    pub fn argv(&self) -> String {
        std::iter::once(self.program.to_string_lossy().into_owned())
            .chain(self.args.iter().map(|a| a.to_string_lossy().into_owned()))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Runs to completion; a non-zero exit, a failure to start or a timeout is an error.
    pub fn run(self) -> Result<Finished> {
        let (status, output) = self.run_unchecked()?;
        if !status.success() {
            bail!(self.failure(&format!("failed ({status})"), &output));
        }
        Ok(Finished { output })
    }

    /// Runs to completion and returns the exit status with the output, whatever the status
    /// (for callers that read a program's verdict from its output). Start failures and
    /// timeouts are still errors.
    pub fn run_unchecked(&self) -> Result<(std::process::ExitStatus, String)> {
        // An OsStr, not a Path: duct prefixes relative *paths* with `./`, which would stop
        // a bare program name (`sh`) from being looked up on PATH.
        let mut expr = duct::cmd(self.program.as_os_str(), &self.args)
            .stderr_to_stdout()
            .unchecked();
        for (k, v) in &self.env {
            expr = expr.env(k, v);
        }
        if let Some(dir) = &self.dir {
            expr = expr.dir(dir);
        }
        let captured = match &self.log {
            Some(log) => {
                if let Some(parent) = log.parent() {
                    std::fs::create_dir_all(parent)
                        .with_context(|| format!("cannot create {}", parent.display()))?;
                }
                expr = expr.stdout_path(log);
                false
            }
            None => {
                expr = expr.stdout_capture();
                true
            }
        };
        let handle = match expr.start() {
            Ok(h) => h,
            Err(e) => {
                let mut msg = format!("cannot start `{}`: {e}", self.argv());
                if let Some(h) = &self.hint {
                    msg.push_str(&format!("\nhint: {h}"));
                }
                bail!(msg);
            }
        };
        // Stopped with the tool when it is interrupted (`ui::interrupt`).
        let _running: Vec<_> = handle
            .pids()
            .into_iter()
            .map(crate::ui::interrupt::Child::new)
            .collect();
        let _beat = self
            .beat
            .clone()
            .filter(|_| !crate::ui::quiet())
            .map(|what| {
                crate::ui::progress::Beat::start(
                    Box::new(|_: &str| {}),
                    Box::new(move |status: &str| crate::errln!("{what}: {status}")),
                )
            });
        let finished = match self.timeout {
            Some(t) => handle.wait_timeout(t)?,
            None => Some(handle.wait()?),
        };
        let Some(out) = finished else {
            handle.kill()?;
            let text = self.read_output(None);
            let secs = self.timeout.map_or(0, |t| t.as_secs());
            bail!(self.failure(
                &format!("did not finish within {secs} s and was stopped"),
                &text
            ));
        };
        let text = self.read_output(captured.then_some(&out.stdout));
        Ok((out.status, text))
    }

    fn read_output(&self, captured: Option<&Vec<u8>>) -> String {
        match (captured, &self.log) {
            (Some(bytes), _) => String::from_utf8_lossy(bytes).into_owned(),
            (None, Some(log)) => std::fs::read(log)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default(),
            (None, None) => String::new(),
        }
    }

    fn failure(&self, what: &str, output: &str) -> String {
        let mut msg = format!("`{}` {what}", self.argv());
        let tail = tail(output, TAIL_LINES);
        if !tail.is_empty() {
            msg.push_str(&format!(":\n{tail}"));
        }
        if let Some(log) = &self.log {
            msg.push_str(&format!("\n(full output: {})", log.display()));
        }
        if let Some(h) = &self.hint {
            msg.push_str(&format!("\nhint: {h}"));
        }
        msg
    }
}

/// The last `n` lines of a text.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// A program found on PATH, or None.
pub fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// `path` relative to `base` when inside it (for messages that must not leak machine paths).
pub fn shown(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_shows_argv_status_tail_log_and_hint() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("logs/step.log");
        let err = Proc::new("sh")
            .args(["-c", "echo one; echo two >&2; exit 3"])
            .log(&log)
            .hint("install the thing")
            .run()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`sh -c echo one; echo two >&2; exit 3` failed"),
            "{err}"
        );
        assert!(err.contains("exit status: 3"), "{err}");
        assert!(err.contains("one\ntwo"), "{err}");
        assert!(err.contains("step.log"), "{err}");
        assert!(err.contains("hint: install the thing"), "{err}");
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "one\ntwo\n");
    }

    #[test]
    fn a_hang_is_stopped_at_the_timeout() {
        let err = Proc::new("sleep")
            .arg("30")
            .timeout(Duration::from_millis(200))
            .run()
            .unwrap_err()
            .to_string();
        assert!(err.contains("did not finish within"), "{err}");
    }

    #[test]
    fn output_is_returned_and_a_missing_program_is_named() {
        let out = Proc::new("sh").args(["-c", "echo hi"]).run().unwrap();
        assert_eq!(out.output, "hi\n");
        let err = Proc::new("no-such-program-xyz")
            .hint("get it")
            .run()
            .unwrap_err()
            .to_string();
        assert!(err.contains("cannot start `no-such-program-xyz`"), "{err}");
        assert!(err.contains("hint: get it"), "{err}");
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("", 3), "");
    }
}
