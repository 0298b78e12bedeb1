//! `--device ssh://user@host[:port][/workdir]`: where the board is and which folder on it the
//! tool works in (relative to the user's home when absent: `xtask-device`).

use anyhow::{Result, bail};

/// The remote folder used when the URL names none (relative to the remote user's home).
pub const DEFAULT_WORKDIR: &str = "xtask-device";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceUrl {
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
    /// Absolute (`/data/xtask`) or relative to the remote home (`xtask-device`).
    pub workdir: String,
}

impl DeviceUrl {
    /// Parses `ssh://[user@]host[:port][/workdir]`, refusing anything that would not reach ssh
    /// as a plain destination (an option-like host, a path with shell characters or `..`).
    pub fn parse(text: &str) -> Result<DeviceUrl> {
        let Some(rest) = text.strip_prefix("ssh://") else {
            bail!("--device {text}: expected ssh://user@host[:port][/workdir]");
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let (user, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u.to_string()), h),
            None => (None, authority),
        };
        let (host, port_text) = host_and_port(text, hostport)?;
        let port = port_text.map(|p| port_of(text, p)).transpose()?;
        if !is_name(host) {
            bail!("--device {text}: `{host}` is not a host name or address");
        }
        if let Some(u) = &user
            && !is_name(u)
        {
            bail!("--device {text}: `{u}` is not a user name");
        }
        Ok(DeviceUrl {
            user,
            host: host.into(),
            port,
            workdir: workdir_of(text, path)?,
        })
    }

    /// `user@host` as ssh takes it.
    pub fn destination(&self) -> String {
        match &self.user {
            Some(u) => format!("{u}@{}", self.host),
            None => self.host.clone(),
        }
    }

    /// `host` in scp's `host:path` form (IPv6 addresses in brackets).
    pub fn scp_destination(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match &self.user {
            Some(u) => format!("{u}@{host}"),
            None => host,
        }
    }
}

impl std::fmt::Display for DeviceUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ssh://{}", self.scp_destination())?;
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        if self.workdir.starts_with('/') {
            write!(f, "{}", self.workdir)
        } else {
            write!(f, "/~/{}", self.workdir)
        }
    }
}

/// `host`, `host:port`, `[v6]` or `[v6]:port` (RFC 3986: an IPv6 address is bracketed);
/// anything else, such as a second `:port`, is refused rather than read as a host.
fn host_and_port<'t>(text: &str, hostport: &'t str) -> Result<(&'t str, Option<&'t str>)> {
    if let Some(inner) = hostport.strip_prefix('[') {
        let Some((h, after)) = inner.split_once(']') else {
            bail!("--device {text}: `[` without `]`");
        };
        if h.parse::<std::net::Ipv6Addr>().is_err() {
            bail!("--device {text}: `[{h}]` is not an IPv6 address");
        }
        return match after {
            "" => Ok((h, None)),
            p => match p.strip_prefix(':') {
                Some(p) => Ok((h, Some(p))),
                None => bail!("--device {text}: `{after}` after `]` is not `:port`"),
            },
        };
    }
    match hostport.split_once(':') {
        None => Ok((hostport, None)),
        Some((h, p)) if !p.contains(':') => Ok((h, Some(p))),
        Some(_) => bail!(
            "--device {text}: `{hostport}` has more than one `:`: write host:port (an IPv6 address in brackets, [::1]:22)"
        ),
    }
}

/// A TCP port, 1 to 65535.
fn port_of(text: &str, p: &str) -> Result<u16> {
    p.parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| anyhow::anyhow!("--device {text}: `{p}` is not a port"))
}

/// A host or user name ssh takes as one: never empty, never starting with `-` (an option).
fn is_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-:".contains(c))
}

/// The work folder from the URL's path (`DEFAULT_WORKDIR` when none): letters, digits and
/// `/._-` only, no `..`, because it is spliced into the device's shell commands.
fn workdir_of(text: &str, path: &str) -> Result<String> {
    let workdir = match path.trim_end_matches('/') {
        "" => DEFAULT_WORKDIR.to_string(),
        p => p.to_string(),
    };
    if workdir
        .chars()
        .any(|c| !(c.is_ascii_alphanumeric() || "/._-".contains(c)))
        || workdir.split('/').any(|s| s == "..")
    {
        bail!(
            "--device {text}: the work folder `{workdir}` may hold only letters, digits, `/._-` and no `..`"
        );
    }
    Ok(workdir)
}

/// The `--device` flag's value checked when the command line is parsed (before any runtime is
/// loaded or downloaded), so a typo is refused at once; the text is kept as given.
pub fn parse_device_arg(text: &str) -> std::result::Result<String, String> {
    DeviceUrl::parse(text)
        .map(|_| text.to_string())
        .map_err(|e| format!("{e:#}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_and_without_parts() {
        let u = DeviceUrl::parse("ssh://root@127.0.0.1:2222/tmp/dev").unwrap();
        assert_eq!(u.user.as_deref(), Some("root"));
        assert_eq!(u.host, "127.0.0.1");
        assert_eq!(u.port, Some(2222));
        assert_eq!(u.workdir, "/tmp/dev");
        assert_eq!(u.to_string(), "ssh://root@127.0.0.1:2222/tmp/dev");
        let u = DeviceUrl::parse("ssh://board").unwrap();
        assert_eq!((u.user.as_deref(), u.port), (None, None));
        assert_eq!(u.workdir, DEFAULT_WORKDIR);
        assert_eq!(u.destination(), "board");
        let u = DeviceUrl::parse("ssh://me@[::1]:22/w").unwrap();
        assert_eq!(u.host, "::1");
        assert_eq!(u.scp_destination(), "me@[::1]");
    }

    #[test]
    fn bad_urls_are_refused() {
        for bad in [
            "root@host",
            "ssh://",
            "ssh://host:0",
            "ssh://host:x",
            "ssh://-oProxyCommand=x",
            "ssh://host/a b",
            "ssh://host/../etc",
            "ssh://host/$(x)",
            "ssh://root@127.0.0.1:1:2",
            "ssh://::1",
            "ssh://[::1]x",
            "ssh://[nothost]:22",
        ] {
            assert!(DeviceUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
