//! The test fixture: a real `sshd` on 127.0.0.1 in front of a fake device folder holding the
//! SDK double (see the module's documentation for the layout), the tiny project built once with
//! the SDK double, and the tool run against the device.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{Run, copy_tree, repo_root};

fn double_root() -> PathBuf {
    crate::common::double_root()
}

/// The OpenSSH the tests run.
pub(super) struct OpenSsh {
    /// The server, by absolute path (sshd re-executes itself by the path it was started with).
    sshd: PathBuf,
    /// The folder of `ssh`, `scp` and `ssh-keygen` put first on `PATH` (none: the system's).
    bin: Option<PathBuf>,
    /// The server's `Subsystem sftp` (OpenSSH 9.0 and later copy with SFTP).
    sftp: String,
    /// `SshdSessionPath` (9.8+) and `SshdAuthPath` (10.0+) lines for a relocated server.
    helpers: String,
    /// Where it came from, for messages.
    origin: String,
}

/// Where apt-get exists, always the OpenSSH fetched into `target/test-tools/openssh` by
/// `xtask/tests/tools/ensure-openssh.sh` (without root, .debs checked by apt against the signed
/// index), whatever the machine has installed; elsewhere the system's, when all of it is there.
/// A machine with neither fails the tests with one line saying what to install.
pub(super) fn openssh() -> &'static OpenSsh {
    static OPENSSH: OnceLock<OpenSsh> = OnceLock::new();
    OPENSSH.get_or_init(|| {
        if on_path("apt-get").is_some() {
            let dir = PathBuf::from(common::setup_script(
                &repo_root().join("xtask/tests/tools/ensure-openssh.sh"),
            ));
            let root = dir.join("root");
            let mut helpers = String::new();
            for (key, file) in [
                ("SshdSessionPath", "sshd-session"),
                ("SshdAuthPath", "sshd-auth"),
            ] {
                let path = root.join("usr/lib/openssh").join(file);
                if path.exists() {
                    helpers.push_str(&format!("{key} {}\n", path.display()));
                }
            }
            return OpenSsh {
                sshd: dir.join("bin/sshd"),
                bin: Some(dir.join("bin")),
                sftp: dir.join("bin/sftp-server").display().to_string(),
                helpers,
                origin: format!("fetched into {}", dir.display()),
            };
        }
        let sshd = on_path("sshd")
            .or_else(|| Some(PathBuf::from("/usr/sbin/sshd")).filter(|p| p.is_file()));
        let missing: Vec<&str> = [("sshd", sshd.is_some())]
            .into_iter()
            .chain(["ssh", "scp", "ssh-keygen"].map(|t| (t, on_path(t).is_some())))
            .filter(|(_, found)| !found)
            .map(|(t, _)| t)
            .collect();
        assert!(
            missing.is_empty(),
            "the device tests run a real OpenSSH server and client, and this machine has no \
             apt-get to fetch them: install OpenSSH (missing: {})",
            missing.join(", ")
        );
        OpenSsh {
            sshd: sshd.unwrap(),
            bin: None,
            sftp: "internal-sftp".into(),
            helpers: String::new(),
            origin: "the system's (no apt-get here to fetch one)".into(),
        }
    })
}

impl OpenSsh {
    /// `PATH` for a command that must find this OpenSSH's `ssh`, `scp` and `ssh-keygen`.
    pub(super) fn path(&self) -> std::ffi::OsString {
        match &self.bin {
            Some(bin) => common::path_with(bin).into(),
            None => std::env::var_os("PATH").unwrap_or_default(),
        }
    }

    /// The server with `config`. As root, sshd needs its privilege-separation user `sshd`; a
    /// machine without OpenSSH installed has none, so the server then runs in a private mount
    /// namespace whose `/etc/passwd` (the machine's plus `sshd`, as nobody) lends it one, and
    /// nothing of the machine changes.
    fn server(&self, d: &Path, config: &Path) -> Command {
        let mut cmd = Command::new(&self.sshd);
        cmd.args(["-D", "-e", "-f"]).arg(config);
        if lends_privsep_user() {
            let passwd = d.join("passwd");
            let mut text = std::fs::read_to_string("/etc/passwd").unwrap();
            text.push_str(
                "sshd:x:65534:65534:sshd privilege separation:/run/sshd:/usr/sbin/nologin\n",
            );
            std::fs::write(&passwd, text).unwrap();
            let passwd =
                std::ffi::CString::new(passwd.into_os_string().into_encoded_bytes()).unwrap();
            use std::os::unix::process::CommandExt;
            // SAFETY: only system calls between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    let ok = libc::unshare(libc::CLONE_NEWNS) == 0
                        && libc::mount(
                            c"none".as_ptr(),
                            c"/".as_ptr(),
                            std::ptr::null(),
                            libc::MS_REC | libc::MS_PRIVATE,
                            std::ptr::null(),
                        ) == 0
                        && libc::mount(
                            passwd.as_ptr(),
                            c"/etc/passwd".as_ptr(),
                            std::ptr::null(),
                            libc::MS_BIND,
                            std::ptr::null(),
                        ) == 0;
                    if ok {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        }
        cmd
    }
}

/// Whether the server runs in a mount namespace that lends it the user `sshd` (root, none here).
fn lends_privsep_user() -> bool {
    unsafe { libc::geteuid() == 0 && libc::getpwnam(c"sshd".as_ptr()).is_null() }
}

/// `tool`'s path when it is on `PATH`.
fn on_path(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(tool))
            .find(|p| p.is_file())
    })
}

/// The tiny model built once with the SDK double (`build-ctx --toolchain sdk`), shared by the
/// tests of this module, in a fixed folder under the tests' target tmpdir (rebuilt every run).
pub(super) fn project() -> &'static Path {
    static PROJECT: OnceLock<PathBuf> = OnceLock::new();
    PROJECT.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("device_ssh_cli/project");
        let _ = std::fs::remove_dir_all(&dir);
        for rel in ["recipes", "onnx/tiny", "golden/tiny"] {
            copy_tree(&common::committed().join(rel), &dir.join(rel));
        }
        std::fs::create_dir_all(dir.join("target")).unwrap();
        std::os::unix::fs::symlink(
            repo_root().join("target/qnn-runtime"),
            dir.join("target/qnn-runtime"),
        )
        .unwrap();
        let run = Run::from(
            tool(
                &dir,
                &["build-ctx", "--soc", "77", "--toolchain", "sdk"],
                None,
            )
            .env(
                "PATH",
                common::path_with(&double_root().join("bin/x86_64-linux-clang")),
            )
            .env("QAIRT_SDK_ROOT", double_root())
            .output()
            .unwrap(),
        );
        run.assert_code(0);
        dir
    })
}

/// The tool on `project` with the SDK double's binary and no SDK of the caller's environment;
/// `ssh_config` as `XTASK_SSH_CONFIG`, or none.
pub(super) fn tool(project: &Path, args: &[&str], ssh_config: Option<&Path>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
    cmd.arg("--root").arg(project).args(args);
    cmd.env("QAIRT_DOUBLE_BIN", crate::common::sdk_double_bin())
        .env_remove("QAIRT_DOUBLE_FAIL")
        .env_remove("XTASK_SDK_TIMEOUT_SECS")
        .env_remove("QAIRT_SDK_ROOT")
        .env_remove("QNN_SDK_ROOT");
    cmd.env("PATH", openssh().path());
    match ssh_config {
        Some(c) => cmd.env("XTASK_SSH_CONFIG", c),
        None => cmd.env_remove("XTASK_SSH_CONFIG"),
    };
    cmd
}

/// How the fake device's SDK is laid out.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Sdk {
    Good,
    /// `QNN_SDK_ROOT` names a folder that does not exist.
    Missing,
    /// `sdk.yaml` says another QAIRT version.
    OtherVersion,
}

/// A real sshd on 127.0.0.1 in front of a fake device folder.
pub(super) struct Server {
    pub(super) dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

impl Server {
    /// Starts `sshd` in front of a new device whose SDK is laid out as `sdk`, once it listens.
    pub(super) fn start(sdk: Sdk) -> Server {
        let openssh = openssh();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for key in ["host_key", "user_key", "other_key"] {
            let out = Command::new("ssh-keygen")
                .env("PATH", openssh.path())
                .args(["-q", "-t", "ed25519", "-N", "", "-C", key, "-f"])
                .arg(d.join(key))
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
        }
        std::fs::copy(d.join("user_key.pub"), d.join("authorized_keys")).unwrap();
        let sdk_env = lay_out_device(d, sdk);
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        write_configs(d, port, &sdk_env, openssh);
        // As root, sshd needs its privilege-separation folder.
        if unsafe { libc::geteuid() } == 0 {
            std::fs::create_dir_all("/run/sshd").unwrap();
        }
        // The configuration and keys checked first (`sshd -t`): a server that cannot run here
        // fails with its own one line.
        let check = openssh
            .server(d, &d.join("sshd_config"))
            .arg("-t")
            .output()
            .unwrap_or_else(|e| {
                let how = if lends_privsep_user() {
                    " in a private mount namespace, which root without the privilege-separation \
                     user `sshd` needs (run the tests as another user, or add it: useradd \
                     --system sshd)"
                } else {
                    ""
                };
                panic!("cannot start sshd ({}){how}: {e}", openssh.origin)
            });
        assert!(
            check.status.success(),
            "sshd ({}) cannot run here: {}",
            openssh.origin,
            String::from_utf8_lossy(&check.stderr).trim()
        );
        let child = openssh
            .server(d, &d.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(d.join("sshd.log")).unwrap())
            .spawn()
            .unwrap();
        let server = Server {
            dir,
            port,
            child: Some(child),
        };
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "sshd did not start: {}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    pub(super) fn url(&self) -> String {
        let user = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_string();
        format!(
            "ssh://{user}@127.0.0.1:{}{}",
            self.port,
            self.work().display()
        )
    }

    pub(super) fn work(&self) -> PathBuf {
        self.dir.path().join("device/work")
    }

    pub(super) fn config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    /// The tool on the shared project against this device.
    pub(super) fn run(&self, args: &[&str]) -> Run {
        self.run_with(args, &self.config())
    }

    pub(super) fn run_with(&self, args: &[&str], config: &Path) -> Run {
        let url = self.url();
        let mut all = args.to_vec();
        all.extend(["--device", &url]);
        Run::from(tool(project(), &all, Some(config)).output().unwrap())
    }

    /// Stops the listener and every session process it started (a dropped connection).
    pub(super) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let mut pids = vec![child.id() as i32];
            pids.extend(descendants(child.id() as i32));
            for pid in pids {
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            let _ = child.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The device in `d/device`: the SDK double laid out as the SDK's device side in `qairt/` (of
/// `sdk`'s version) and the work folder `work/`. Returns the `QNN_SDK_ROOT` the server gives
/// remote commands.
fn lay_out_device(d: &Path, sdk: Sdk) -> PathBuf {
    let sdk_root = d.join("device/qairt");
    copy_tree(&double_root().join("bin"), &sdk_root.join("bin"));
    copy_tree(&double_root().join("lib"), &sdk_root.join("lib"));
    std::fs::write(
        sdk_root.join("lib/x86_64-linux-clang/libQnnHtpV73Stub.so"),
        "",
    )
    .unwrap();
    // The board folders as in the SDK layout that could be checked (2.25): only the
    // Qualcomm Linux folder holds the V73 stub, the Ubuntu one only the V68 stub.
    for (dir, stub) in [
        ("aarch64-oe-linux-gcc11.2", "libQnnHtpV73Stub.so"),
        ("aarch64-ubuntu-gcc9.4", "libQnnHtpV68Stub.so"),
    ] {
        std::fs::create_dir_all(sdk_root.join("lib").join(dir)).unwrap();
        std::fs::write(sdk_root.join("lib").join(dir).join(stub), "").unwrap();
    }
    std::fs::create_dir_all(sdk_root.join("lib/hexagon-v73/unsigned")).unwrap();
    std::fs::write(
        sdk_root.join("lib/hexagon-v73/unsigned/libQnnHtpV73Skel.so"),
        "",
    )
    .unwrap();
    let version = match sdk {
        Sdk::OtherVersion => "2.45.0.250101000000",
        _ => "2.47.0.260601114230",
    };
    std::fs::write(sdk_root.join("sdk.yaml"), format!("version: {version}\n")).unwrap();
    let work = d.join("device/work");
    std::fs::create_dir_all(work.join("target")).unwrap();
    std::os::unix::fs::symlink(
        repo_root().join("target/qnn-runtime"),
        work.join("target/qnn-runtime"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        project().join("target/qairt-sdk-test-double"),
        work.join("target/qairt-sdk-test-double"),
    )
    .unwrap();
    match sdk {
        Sdk::Missing => d.join("device/no-sdk-here"),
        _ => sdk_root,
    }
}

/// `d/sshd_config` (port `port`, loopback only, key only, `SetEnv` of the device's SDK root
/// `sdk_env`), `d/known_hosts` with the server's host key, and the clients' `ssh_config` (the
/// authorized key) and `ssh_config_wrong_key` (another key).
fn write_configs(d: &Path, port: u16, sdk_env: &Path, openssh: &OpenSsh) {
    std::fs::write(
            d.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {h}\nPidFile {pid}\nAuthorizedKeysFile {ak}\n\
                 PubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nSubsystem sftp {sftp}\n\
                 {helpers}SetEnv QNN_SDK_ROOT={sdk} QAIRT_DOUBLE_BIN={bin}\nLogLevel VERBOSE\n",
                h = d.join("host_key").display(),
                pid = d.join("sshd.pid").display(),
                ak = d.join("authorized_keys").display(),
                sftp = openssh.sftp,
                helpers = openssh.helpers,
                sdk = sdk_env.display(),
                bin = crate::common::sdk_double_bin().display(),
            ),
        )
        .unwrap();
    let host_pub = std::fs::read_to_string(d.join("host_key.pub")).unwrap();
    std::fs::write(
        d.join("known_hosts"),
        format!("[127.0.0.1]:{port} {host_pub}"),
    )
    .unwrap();
    for (name, key) in [
        ("ssh_config", "user_key"),
        ("ssh_config_wrong_key", "other_key"),
    ] {
        std::fs::write(
                d.join(name),
                format!(
                    "Host 127.0.0.1\n  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  StrictHostKeyChecking yes\n  LogLevel ERROR\n",
                    d.join(key).display(),
                    d.join("known_hosts").display()
                ),
            )
            .unwrap();
    }
}

/// Every process below `pid` (from /proc).
fn descendants(pid: i32) -> Vec<i32> {
    let mut parent_of: Vec<(i32, i32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: comm may hold spaces, so split after the last `)`.
        let after = stat.rsplit_once(')').map_or("", |(_, a)| a);
        if let Some(ppid) = after.split_whitespace().nth(1).and_then(|v| v.parse().ok()) {
            parent_of.push((p, ppid));
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for &(child, parent) in &parent_of {
            if parent == p && !out.contains(&child) {
                out.push(child);
                frontier.push(child);
            }
        }
    }
    out
}

/// How many binaries a run uploaded to the device.
pub(super) fn uploads(run: &Run) -> usize {
    run.stderr.matches("device: uploaded ").count()
}

/// Every `bin/*.bin` on the device holds exactly the bytes its sha256 name says.
pub(super) fn assert_bins_consistent(work: &Path) {
    for entry in std::fs::read_dir(work.join("bin")).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(sha) = name.strip_suffix(".bin") {
            assert!(!name.starts_with('.'), "{name}");
            assert_eq!(common::sha256_hex(&entry.path()), sha, "{name}");
        } else {
            assert!(
                name.starts_with('.'),
                "a temporary upload has a hidden name: {name}"
            );
        }
    }
}
