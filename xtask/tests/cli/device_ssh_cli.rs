//! `--device ssh://…` against a real OpenSSH server on 127.0.0.1 (only loopback, ever).
//!
//! Each test starts its own `sshd -D -e -f <cfg>` (generated host key, generated user key, a
//! free high port, `ListenAddress 127.0.0.1`, `PasswordAuthentication no`, `UsePAM no`,
//! `StrictModes no` for the temp folders, `PidFile` in the temp folder) and kills it (and its
//! session processes) on drop, also on panic. Tests run as root here, so the server allows
//! `PermitRootLogin prohibit-password`: key only, never a password; as another user the server
//! logs that user in (sshd run unprivileged can only authenticate its own user).
//!
//! The client side uses the tool's `XTASK_SSH_CONFIG` (an ssh_config with the generated
//! `IdentityFile` and a `UserKnownHostsFile` holding the server's host key: host keys are
//! checked). The "device" is a temporary folder holding the QAIRT SDK test double laid out as
//! the SDK's device side (`bin/x86_64-linux-clang/`, `lib/x86_64-linux-clang/libQnnHtp.so`,
//! `libQnnHtpV73Stub.so`, `lib/hexagon-v73/unsigned/libQnnHtpV73Skel.so`, `sdk.yaml`); the
//! server's `SetEnv` gives remote commands `QNN_SDK_ROOT` (read by the tool on the device) and
//! `QAIRT_DOUBLE_BIN`. The device's work folder holds `target/qnn-runtime` (the shared
//! runtime) and `target/qairt-sdk-test-double` (the double's record of the binaries it built,
//! from the project), since the double reads both from its current folder. The loopback device
//! is x86_64, so the tool picks `x86_64-linux-clang` from its `uname -m`.
//!
//! OpenSSH (`sshd`, `ssh`, `scp`, `ssh-keygen`) must be installed (`.ci/run` installs it); a
//! missing one fails the tests with that message rather than skipping them.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{Run, copy_tree, read_json, repo_root};

const SSHD: &str = "/usr/sbin/sshd";

fn double_root() -> PathBuf {
    crate::common::double_root()
}

fn require_openssh() {
    for tool in [SSHD, "ssh", "scp", "ssh-keygen"] {
        let found = if tool.starts_with('/') {
            Path::new(tool).is_file()
        } else {
            Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .is_ok_and(|o| o.status.success())
        };
        assert!(
            found,
            "{tool} is missing: these tests need OpenSSH (apt-get install openssh-server openssh-client; .ci/run does it)"
        );
    }
}

/// The tiny model built once with the SDK double (`build-ctx --toolchain sdk`), shared by the
/// tests of this file, in a fixed folder under the tests' target tmpdir (rebuilt every run).
fn project() -> &'static Path {
    static PROJECT: OnceLock<PathBuf> = OnceLock::new();
    PROJECT.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("device_ssh_cli/project");
        let _ = std::fs::remove_dir_all(&dir);
        let repo = repo_root();
        for rel in ["recipes", "onnx/tiny", "golden/tiny"] {
            copy_tree(&repo.join(rel), &dir.join(rel));
        }
        std::fs::create_dir_all(dir.join("target")).unwrap();
        std::os::unix::fs::symlink(
            repo.join("target/qnn-runtime"),
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

fn tool(project: &Path, args: &[&str], ssh_config: Option<&Path>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
    cmd.arg("--root").arg(project).args(args);
    cmd.env("QAIRT_DOUBLE_BIN", crate::common::sdk_double_bin())
        .env_remove("QAIRT_DOUBLE_FAIL")
        .env_remove("XTASK_SDK_TIMEOUT_SECS")
        .env_remove("QAIRT_SDK_ROOT")
        .env_remove("QNN_SDK_ROOT");
    match ssh_config {
        Some(c) => cmd.env("XTASK_SSH_CONFIG", c),
        None => cmd.env_remove("XTASK_SSH_CONFIG"),
    };
    cmd
}

/// How the fake device's SDK is laid out.
#[derive(Clone, Copy, PartialEq)]
enum Sdk {
    Good,
    /// `QNN_SDK_ROOT` names a folder that does not exist.
    Missing,
    /// `sdk.yaml` says another QAIRT version.
    OtherVersion,
}

/// A real sshd on 127.0.0.1 in front of a fake device folder.
struct Server {
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

impl Server {
    fn start(sdk: Sdk) -> Server {
        require_openssh();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for key in ["host_key", "user_key", "other_key"] {
            let out = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-C", key, "-f"])
                .arg(d.join(key))
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
        }
        std::fs::copy(d.join("user_key.pub"), d.join("authorized_keys")).unwrap();
        // The device: the SDK double laid out as the SDK's device side.
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
        let sdk_env = match sdk {
            Sdk::Missing => d.join("device/no-sdk-here"),
            _ => sdk_root,
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        std::fs::write(
            d.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {h}\nPidFile {pid}\nAuthorizedKeysFile {ak}\n\
                 PubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nSubsystem sftp internal-sftp\n\
                 SetEnv QNN_SDK_ROOT={sdk} QAIRT_DOUBLE_BIN={bin}\nLogLevel VERBOSE\n",
                h = d.join("host_key").display(),
                pid = d.join("sshd.pid").display(),
                ak = d.join("authorized_keys").display(),
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
        // As root, sshd needs its privilege-separation folder.
        if unsafe { libc::geteuid() } == 0 {
            std::fs::create_dir_all("/run/sshd").unwrap();
        }
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
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

    fn url(&self) -> String {
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

    fn work(&self) -> PathBuf {
        self.dir.path().join("device/work")
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    /// The tool on the shared project against this device.
    fn run(&self, args: &[&str]) -> Run {
        self.run_with(args, &self.config())
    }

    fn run_with(&self, args: &[&str], config: &Path) -> Run {
        let url = self.url();
        let mut all = args.to_vec();
        all.extend(["--device", &url]);
        Run::from(tool(project(), &all, Some(config)).output().unwrap())
    }

    /// Stops the listener and every session process it started (a dropped connection).
    fn stop(&mut self) {
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

fn uploads(run: &Run) -> usize {
    run.stdout.matches("device: uploaded ").count()
}

/// Every `bin/*.bin` on the device holds exactly the bytes its sha256 name says.
fn assert_bins_consistent(work: &Path) {
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

#[test]
fn parity_and_run_on_a_loopback_device() {
    let server = Server::start(Sdk::Good);
    let doctor = server.run(&["doctor"]);
    doctor.assert_code(0);
    for want in [
        "arch          x86_64 (uname -m) -> SDK folder x86_64-linux-clang",
        "2.47.0.260601114230",
        "lib/x86_64-linux-clang/libQnnHtp.so",
        "lib/x86_64-linux-clang/libQnnHtpV73Stub.so",
        "lib/hexagon-v73/unsigned/libQnnHtpV73Skel.so",
        "free disk",
        "device ready",
        "SDK lib folders searched",
        "DSP_LIBRARY_PATH unset on the device",
    ] {
        assert!(doctor.stdout.contains(want), "{want}: {}", doctor.all());
    }
    // Every lib folder searched, with the stubs it holds.
    for (dir, stub) in [
        ("lib/aarch64-oe-linux-gcc11.2 ", "libQnnHtpV73Stub.so"),
        ("lib/aarch64-ubuntu-gcc9.4 ", "libQnnHtpV68Stub.so"),
        ("lib/x86_64-linux-clang ", "libQnnHtpV73Stub.so   <- used"),
    ] {
        assert!(
            doctor
                .stdout
                .lines()
                .any(|l| l.contains(dir) && l.contains(stub)),
            "{dir}{stub}: {}",
            doctor.all()
        );
    }
    assert!(!doctor.stdout.contains("MISSING"), "{}", doctor.all());

    let args = [
        "parity",
        "--backend",
        "htp",
        "--only",
        "action_context,action_step",
        "--iters",
        "3",
    ];
    let first = server.run(&args);
    first.assert_code(0);
    assert_eq!(uploads(&first), 2, "{}", first.all());
    let report = read_json(&project().join("reports/tiny/parity-htp-device.json"));
    assert_eq!(report["pass"], true);
    assert!(report["htp_emulated"].is_null(), "{report}");
    let device = report["device"].as_str().unwrap();
    assert!(
        device.contains("measured on the device via ssh")
            && device.contains("arch x86_64 (x86_64-linux-clang)")
            && device.contains("QAIRT SDK 2.47.0.260601114230")
            && device.contains(&server.url()),
        "{device}"
    );
    assert!(
        !device.contains("emulated") && !device.contains("NPU"),
        "{device}"
    );
    let md = std::fs::read_to_string(project().join("reports/tiny/parity-htp-device.md")).unwrap();
    assert!(md.contains("## Execute time"), "{md}");
    for c in report["components"].as_array().unwrap() {
        let l = &c["latency"];
        assert_eq!(l["timing_source"], "NETRUN", "{c}");
        assert_eq!(l["samples"], 3, "{c}");
        let (min, p50, max) = (
            l["min_us"].as_f64().unwrap(),
            l["p50_us"].as_f64().unwrap(),
            l["max_us"].as_f64().unwrap(),
        );
        assert!(0.0 < min && min <= p50 && p50 <= max, "{l}");
        assert!(c["outputs"][0]["metrics"]["cosine"].as_f64().unwrap() >= 0.999);
    }
    assert_bins_consistent(&server.work());
    // The run folders are removed after each run.
    assert_eq!(
        std::fs::read_dir(server.work().join("runs"))
            .unwrap()
            .count(),
        0
    );

    // Again: the binary is on the device already (content-addressed), nothing is copied.
    let second = server.run(&["parity", "--backend", "htp", "--only", "action_context"]);
    second.assert_code(0);
    assert_eq!(uploads(&second), 0, "{}", second.all());
    assert_eq!(
        second.stdout.matches("already on the device").count(),
        1,
        "{}",
        second.all()
    );

    // The chain: every component on the device, host steps here.
    let chain = server.run(&["run", "--backend", "htp", "--iters", "2", "--warmup", "1"]);
    chain.assert_code(0);
    assert_eq!(
        uploads(&chain),
        5,
        "only the 5 binaries not there yet: {}",
        chain.all()
    );
    let r = read_json(&project().join("reports/tiny/run-htp-device.json"));
    assert_eq!(r["pass"], true, "{r}");
    let d = &r["device"];
    assert_eq!(d["binaries_uploaded"], 5);
    let boundaries = r["boundaries"].as_array().unwrap();
    assert!(boundaries.len() >= 10, "{r}");
    assert!(boundaries.iter().any(|b| b["name"] == "actions"));
    let comps = d["components"].as_array().unwrap();
    assert_eq!(comps.len(), 7);
    let step = comps
        .iter()
        .find(|c| c["component"] == "action_step")
        .unwrap();
    assert_eq!(step["calls_per_chain"], 2, "one call per Euler step");
    assert_eq!(step["execute"]["samples"], 4, "2 timed inferences per call");
    let sum: f64 = comps
        .iter()
        .map(|c| c["per_chain_us"].as_f64().unwrap())
        .sum();
    assert!(sum > 0.0 && (d["chain_estimate_us"].as_f64().unwrap() - sum).abs() < 1e-6);
    assert!(
        d["chain_estimate_note"]
            .as_str()
            .unwrap()
            .contains("copies")
    );
    assert!(d["timing"].as_str().unwrap().contains("via ssh"));
    assert_bins_consistent(&server.work());
}

#[test]
fn failures_end_in_clear_errors() {
    let mut server = Server::start(Sdk::Good);
    let parity = [
        "parity",
        "--backend",
        "htp",
        "--only",
        "vision",
        "--iters",
        "200",
    ];

    // A key the device does not know.
    let wrong = server.run_with(&parity, &server.dir.path().join("ssh_config_wrong_key"));
    wrong
        .assert_refused(2, "authentication to ssh://")
        .assert_refused(2, "failed");

    // The server goes away in the middle of a run: the connection drops.
    let url = server.url();
    let mut cmd = tool(project(), &parity, Some(&server.config()));
    cmd.args(["--device", &url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let runs = server.work().join("runs");
    let started = Instant::now();
    while std::fs::read_dir(&runs).map_or(0, |d| d.count()) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no run started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    server.stop();
    let dropped = Run::from(child.wait_with_output().unwrap());
    dropped.assert_code(2);
    assert!(
        dropped.stderr.contains("dropped") || dropped.stderr.contains("unreachable"),
        "{}",
        dropped.all()
    );
    assert_bins_consistent(&server.work());

    // Stopped between runs: nothing answers.
    let gone = server.run(&parity);
    gone.assert_code(2);
    assert!(gone.stderr.contains("unreachable"), "{}", gone.all());
    assert!(gone.stderr.contains("Connection refused"), "{}", gone.all());

    // The SDK is missing on the device.
    let missing = Server::start(Sdk::Missing);
    let run = missing.run(&parity);
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("the QAIRT SDK is missing on the device"),
        "{}",
        run.all()
    );
    let doctor = missing.run(&["doctor"]);
    doctor.assert_code(1);
    assert!(doctor.stdout.contains("MISSING"), "{}", doctor.all());

    // Another SDK version than the recipe's.
    let other = Server::start(Sdk::OtherVersion);
    let run = other.run(&parity);
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("the device's QAIRT SDK is 2.45.0.250101000000, the recipe asks for 2.47.0"),
        "{}",
        run.all()
    );
}
