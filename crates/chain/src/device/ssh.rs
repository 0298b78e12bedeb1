//! The transport to a board: the system `ssh` and `scp` (never an ssh library), through
//! [`xtask_base::proc::Proc`], over ONE multiplexed connection per tool run (`ControlMaster=auto`,
//! a private `ControlPath` folder, `ControlPersist=60`, closed with `ssh -O exit` when done).
//! `BatchMode=yes` (no password prompt ever), `ConnectTimeout`, keep-alives that notice a dead
//! link, and a timeout on every command.
//!
//! Host keys are checked as the user's ssh configuration says: the tool never relaxes
//! `StrictHostKeyChecking`. `XTASK_SSH_CONFIG=<file>` passes `-F <file>` (an ssh_config of
//! its own: `UserKnownHostsFile`, `IdentityFile`, …); the tests use it for their loopback
//! server. `XTASK_SSH_CONNECT_TIMEOUT` (seconds, default 10) sets `ConnectTimeout`.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Result, bail};

use super::url::DeviceUrl;
use xtask_base::proc::Proc;

/// Why a command on the device did not run to the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The server refused our key (or asked for a password, which BatchMode refuses).
    Auth,
    /// The host key is unknown or changed.
    HostKey,
    /// Nothing answered (refused, unreachable, name unknown, connect timeout).
    Unreachable,
    /// The connection was up and went away during the run.
    Dropped,
    /// The command ran on the device and failed.
    Remote,
}

pub struct Ssh {
    pub url: DeviceUrl,
    control: tempfile::TempDir,
    config: Option<PathBuf>,
    connect_timeout: u64,
    connected: Cell<bool>,
    scp_run: Cell<bool>,
}

/// `s` as one word for a POSIX shell.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

impl Ssh {
    pub fn new(url: DeviceUrl) -> Result<Ssh> {
        // A short folder: a control socket path must fit in sun_path (~108 bytes).
        let control = tempfile::Builder::new()
            .prefix("xtask-ssh-")
            .tempdir_in("/tmp")?;
        let config = std::env::var_os("XTASK_SSH_CONFIG")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        if let Some(c) = &config
            && !c.is_file()
        {
            bail!("XTASK_SSH_CONFIG={} is not a file", c.display());
        }
        let connect_timeout =
            connect_timeout_from(std::env::var("XTASK_SSH_CONNECT_TIMEOUT").ok())?;
        Ok(Ssh {
            url,
            control,
            config,
            connect_timeout,
            connected: Cell::new(false),
            scp_run: Cell::new(false),
        })
    }

    /// Options shared by ssh and scp.
    fn options(&self) -> Vec<String> {
        let mut o = Vec::new();
        if let Some(c) = &self.config {
            o.extend(["-F".to_string(), c.display().to_string()]);
        }
        for opt in [
            "BatchMode=yes".to_string(),
            format!("ConnectTimeout={}", self.connect_timeout),
            "ControlMaster=auto".into(),
            format!("ControlPath={}/%C", self.control.path().display()),
            "ControlPersist=60".into(),
            "ServerAliveInterval=5".into(),
            "ServerAliveCountMax=3".into(),
        ] {
            o.extend(["-o".to_string(), opt]);
        }
        o
    }

    fn ssh(&self) -> Proc {
        let mut p = Proc::new("ssh").args(self.options());
        if let Some(port) = self.url.port {
            p = p.args(["-p".to_string(), port.to_string()]);
        }
        p.hint("ssh is OpenSSH's client (apt-get install openssh-client)")
    }

    fn scp(&self) -> Proc {
        let mut p = Proc::new("scp").args(self.options()).arg("-q");
        if let Some(port) = self.url.port {
            p = p.args(["-P".to_string(), port.to_string()]);
        }
        p
    }

    /// Runs a POSIX shell script on the device (in the remote user's home); its output.
    pub fn exec(&self, script: &str, timeout: Duration, what: &str) -> Result<String> {
        let p = self
            .ssh()
            .arg(self.url.destination())
            .arg("--")
            .arg(format!("sh -c {}", quote(script)))
            .timeout(timeout);
        self.finish(p, what)
    }

    /// Copies a local file or folder to `remote` (relative to the remote home, or absolute).
    pub fn upload(&self, local: &Path, remote: &str, timeout: Duration, what: &str) -> Result<()> {
        let p = self
            .scp()
            .arg("-r")
            .arg(local)
            .arg(format!("{}:{remote}", self.url.scp_destination()))
            .timeout(timeout);
        self.finish_scp(p, what)
    }

    /// Copies `remote` (a file or folder) to `local`.
    pub fn download(
        &self,
        remote: &str,
        local: &Path,
        timeout: Duration,
        what: &str,
    ) -> Result<()> {
        let p = self
            .scp()
            .arg("-r")
            .arg(format!("{}:{remote}", self.url.scp_destination()))
            .arg(local)
            .timeout(timeout);
        self.finish_scp(p, what)
    }

    /// scp exits 1 for every error, its own and the remote side's: a lost link is told by its
    /// message.
    fn finish_scp(&self, p: Proc, what: &str) -> Result<()> {
        self.scp_run.set(true);
        let r = self.finish(p, what).map(|_| ());
        self.scp_run.set(false);
        r
    }

    fn finish(&self, p: Proc, what: &str) -> Result<String> {
        let p = p.heartbeat(format!("device: {what}"));
        let (status, output) = match p.run_unchecked() {
            Ok(r) => r,
            Err(e) => {
                return Err(DeviceError {
                    failure: if self.connected.get() {
                        Failure::Dropped
                    } else {
                        Failure::Unreachable
                    },
                    message: format!("{what} on {}: {e:#}", self.url),
                }
                .into());
            }
        };
        if status.success() {
            self.connected.set(true);
            return Ok(output);
        }
        let failure = self.classify(status.code(), &output);
        let tail = xtask_base::proc::tail(&output, 12);
        let message = match failure {
            Failure::Auth => format!(
                "authentication to {} failed (BatchMode: key only, no password prompt): {tail}\nhint: check the user, that your key is in the device's ~/.ssh/authorized_keys, and the IdentityFile of your ssh config (XTASK_SSH_CONFIG)",
                self.url
            ),
            Failure::HostKey => format!(
                "the host key of {} is not known or has changed: {tail}\nhint: add the device's key to your known_hosts (ssh-keyscan, checked against the board), or point XTASK_SSH_CONFIG at an ssh_config with its UserKnownHostsFile; the tool never disables host key checking",
                self.url
            ),
            Failure::Unreachable => format!(
                "the device {} is unreachable: {tail}\nhint: is it powered, on the network, and is sshd listening on that port?",
                self.url
            ),
            Failure::Dropped => format!(
                "the connection to {} dropped during {what}: {tail}\nthe work folder on the device stays consistent (uploads only get their final name once complete); run again when the device is back",
                self.url
            ),
            Failure::Remote => format!(
                "{what} failed on the device {} ({status}):\n{tail}",
                self.url
            ),
        };
        Err(DeviceError { failure, message }.into())
    }

    fn classify(&self, code: Option<i32>, output: &str) -> Failure {
        let has = |s: &str| output.contains(s);
        let link_lost = [
            "lost connection",
            "Connection closed",
            "closed by remote host",
            "Broken pipe",
            "Connection reset",
            "Connection refused",
            "Connection timed out",
            "No route to host",
            "Could not resolve hostname",
            "Permission denied (publickey",
            "Host key verification failed",
        ]
        .iter()
        .any(|s| has(s));
        // ssh exits 255 for its own errors; anything else is the remote command's status
        // (scp exits 1 for everything: its link errors are told by their message).
        if code.is_some() && code != Some(255) && !(self.scp_run.get() && link_lost) {
            return Failure::Remote;
        }
        if has("Host key verification failed") || has("REMOTE HOST IDENTIFICATION HAS CHANGED") {
            Failure::HostKey
        } else if has("Permission denied") || has("Too many authentication failures") {
            Failure::Auth
        } else if self.connected.get() || code.is_none() {
            Failure::Dropped
        } else {
            Failure::Unreachable
        }
    }
}

impl Drop for Ssh {
    /// Closes the shared connection (it would otherwise linger for ControlPersist seconds).
    fn drop(&mut self) {
        let _ = self
            .ssh()
            .args(["-O", "exit"])
            .arg(self.url.destination())
            .timeout(Duration::from_secs(10))
            .run_unchecked();
    }
}

/// An error of the device transport, with its kind (for messages and tests).
#[derive(Debug)]
pub struct DeviceError {
    pub failure: Failure,
    pub message: String,
}

impl std::fmt::Display for DeviceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DeviceError {}

/// `XTASK_SSH_CONNECT_TIMEOUT`: whole seconds, 1 to 3600, default 10 when unset or empty; any
/// other value is refused by name rather than silently replaced.
fn connect_timeout_from(value: Option<String>) -> Result<u64> {
    let Some(v) = value.filter(|v| !v.is_empty()) else {
        return Ok(10);
    };
    match v.trim().parse::<u64>() {
        Ok(s) if (1..=3600).contains(&s) => Ok(s),
        _ => bail!(
            "XTASK_SSH_CONNECT_TIMEOUT={v:?} is not a timeout: give whole seconds from 1 to 3600 (default 10)"
        ),
    }
}

/// Whether `e` is the link to the device failing (auth, host key, unreachable, dropped), not
/// a command failing on it.
pub fn is_link_failure(e: &anyhow::Error) -> bool {
    e.downcast_ref::<DeviceError>()
        .is_some_and(|d| d.failure != Failure::Remote)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connect_timeout_is_whole_seconds_or_refused() {
        assert_eq!(connect_timeout_from(None).unwrap(), 10);
        assert_eq!(connect_timeout_from(Some("30".into())).unwrap(), 30);
        for bad in ["ten", "-1", "0", "1.5", "99999"] {
            let err = connect_timeout_from(Some(bad.into()))
                .unwrap_err()
                .to_string();
            assert!(err.contains("XTASK_SSH_CONNECT_TIMEOUT"), "{err}");
        }
    }

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn failures_are_told_apart() {
        let s = Ssh::new(DeviceUrl::parse("ssh://u@127.0.0.1:1/w").unwrap()).unwrap();
        let c = |code, out| s.classify(Some(code), out);
        assert_eq!(
            c(255, "u@127.0.0.1: Permission denied (publickey)."),
            Failure::Auth
        );
        assert_eq!(c(255, "Host key verification failed."), Failure::HostKey);
        assert_eq!(
            c(
                255,
                "ssh: connect to host 127.0.0.1 port 1: Connection refused"
            ),
            Failure::Unreachable
        );
        assert_eq!(c(3, "no such file"), Failure::Remote);
        assert_eq!(
            c(1, "lost connection"),
            Failure::Remote,
            "ssh: the remote status"
        );
        s.scp_run.set(true);
        assert_eq!(
            c(
                1,
                "ssh: connect to host 127.0.0.1 port 1: Connection refused\nlost connection"
            ),
            Failure::Unreachable
        );
        assert_eq!(c(1, "scp: open: No such file"), Failure::Remote);
        s.scp_run.set(false);
        s.connected.set(true);
        assert_eq!(
            c(255, "Connection to 127.0.0.1 closed by remote host."),
            Failure::Dropped
        );
        s.scp_run.set(true);
        assert_eq!(c(1, "lost connection"), Failure::Dropped);
        s.scp_run.set(false);
        assert_eq!(
            c(
                255,
                "ssh: connect to host 127.0.0.1 port 1: Connection refused"
            ),
            Failure::Dropped,
            "after a successful command, losing the device is a dropped connection"
        );
    }
}
