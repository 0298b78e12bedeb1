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
//! OpenSSH (`sshd`, `ssh`, `scp`, `ssh-keygen`, `sftp-server`): where apt-get exists, always
//! the one `xtask/tests/tools/ensure-openssh.sh` fetches without root into
//! `target/test-tools/openssh/` (Debian packages checked by apt against the signed index,
//! unpacked with `dpkg-deb -x`), so an sshd the machine lacks or cannot run does not matter;
//! the server's `Subsystem sftp` is that `sftp-server` (scp speaks SFTP since OpenSSH 9.0).
//! As root without the privilege-separation user `sshd` (no OpenSSH installed), the server runs
//! in a private mount namespace whose `/etc/passwd` lends it one. Without apt-get, the system's
//! OpenSSH; when it is missing, or `sshd -t` refuses the configuration, the tests fail with one
//! line saying what to install, never skip.
//!
//! The server, the fake device and the shared project are in `sshd`; the tests are split by
//! what they check.

mod failures;
mod loopback;
mod sshd;
