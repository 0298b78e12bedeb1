//! Validation on a board over ssh (`--device ssh://user@host[:port][/workdir]`): the context
//! binaries run on the device's HTP through the device's own QAIRT SDK (`qnn-net-run
//! --retrieve_context`, profiled), orchestrated from this host.
//!
//! - The SDK is the device's: `QNN_SDK_ROOT` as the command ssh runs sees it (sshd `SetEnv`,
//!   `~/.ssh/environment` with `PermitUserEnvironment`, or `~/.bashrc` before its interactive
//!   guard), else as a login shell (`$SHELL -lc 'printenv QNN_SDK_ROOT'`: `/etc/profile`,
//!   `~/.profile`). Its tools' folder follows the device's `uname -m`: aarch64 →
//!   `aarch64-oe-linux-gcc11.2` when the SDK has it (Qualcomm Linux), else
//!   `aarch64-ubuntu-gcc9.4`; x86_64 → `x86_64-linux-clang`. Its `sdk.yaml` `version:` must be
//!   the recipe's `[target] qairt`.
//! - Work folder on the device: `bin/<sha256>.bin` holds each context binary once
//!   (content-addressed: copied only when missing, uploaded under a hidden `.part` name,
//!   checked with `sha256sum`, then renamed); `runs/<id>/` holds one run's `.raw` inputs, input
//!   list and outputs (uploaded as `runs/.<id>.part`, renamed, removed after the run).
//! - One `qnn-net-run` call per component run: an input list of `warmup + iters` lines,
//!   `--profiling_level basic`; the device's `qnn-profile-viewer` turns the log into the CSV,
//!   which is copied back with `Result_0/` and read by `toolchain::sdk::profile` (NETRUN
//!   EXECUTE rows; the first `warmup` are dropped).

pub mod chain;
pub mod doctor;
mod run;
pub mod ssh;
pub mod url;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use self::ssh::{Ssh, quote};
pub use self::url::DeviceUrl;
use crate::chain::device_figures::DeviceInfo;
use xtask_ctx_build::toolchain::sdk::NativeIo;
use xtask_ctx_build::toolchain::sdk::profile::{ExecuteStats, TIMING_SOURCE, execute_samples_us};
use xtask_onnx::tensor::Tensor;
use xtask_recipe::recipe::Component;

/// Files of the device SDK that `doctor --device` reports for a board of `soc` (`{a}` = the
/// arch folder): the tools, the HTP backend, and the SoC's stub and DSP-side skel.
pub fn sdk_files(soc: &xtask_base::soc::Soc) -> [String; 5] {
    [
        "bin/{a}/qnn-net-run".to_string(),
        "bin/{a}/qnn-profile-viewer".to_string(),
        "lib/{a}/libQnnHtp.so".to_string(),
        format!("lib/{{a}}/{}", soc.stub_lib()),
        format!("{}/{}", soc.dsp_lib_dir(), soc.skel_lib()),
    ]
}
const ARCH_DIRS: [&str; 3] = [
    "aarch64-oe-linux-gcc11.2",
    "aarch64-ubuntu-gcc9.4",
    "x86_64-linux-clang",
];
/// Bytes kept free on the device beyond what a run writes.
const DISK_MARGIN: u64 = 16 << 20;

impl DeviceInfo {
    pub fn file(&self, pattern: &str) -> String {
        pattern.replace("{a}", self.arch_dir.as_deref().unwrap_or("?"))
    }

    pub fn has(&self, pattern: &str) -> bool {
        self.present.contains(&self.file(pattern))
    }

    /// One line naming the device and its SDK, for reports.
    pub fn label(&self) -> String {
        format!(
            "{}, arch {} ({}), QAIRT SDK {}",
            self.url,
            self.arch,
            self.arch_dir.as_deref().unwrap_or("no SDK folder"),
            self.sdk_version.as_deref().unwrap_or("unknown")
        )
    }
}

/// A connected device.
pub struct Device {
    ssh: Ssh,
    pub info: DeviceInfo,
    /// The SoC whose binaries run here: its stub, skel and DSP folder are the ones looked for.
    pub soc: xtask_base::soc::Soc,
    uploads: Cell<usize>,
    runs: Cell<usize>,
}

/// One component run on the device.
pub struct DeviceRun {
    /// The first inference's outputs.
    pub outputs: BTreeMap<String, Tensor>,
    /// NETRUN execute times (µs) of the timed inferences (warm-up ones dropped).
    pub samples_us: Vec<f64>,
    pub stats: ExecuteStats,
}

fn short() -> Duration {
    Duration::from_secs(120)
}

fn transfer_timeout() -> Duration {
    xtask_ctx_build::toolchain::sdk::step_timeout()
}

impl Device {
    /// Connects (one shared connection) and asks the device about itself, a board of `soc`.
    pub fn connect(url: &str, soc: xtask_base::soc::Soc) -> Result<Device> {
        let url = DeviceUrl::parse(url)?;
        let ssh = Ssh::new(url.clone())?;
        let out = ssh
            .exec(
                &probe_script(&url, &soc),
                short(),
                "asking the device about itself",
            )
            .context("cannot use the device")?;
        let info = DeviceInfo::from_probe(&url, &Probe::parse(&out))?;
        Ok(Device {
            ssh,
            info,
            soc,
            uploads: Cell::new(0),
            runs: Cell::new(0),
        })
    }

    /// Every reason this device cannot run the model's context binaries (empty: it can).
    pub fn problems(&self, qairt: &str) -> Vec<String> {
        let i = &self.info;
        let mut p = Vec::new();
        let Some(root) = &i.sdk_root else {
            p.push(format!(
                "QNN_SDK_ROOT is not set on the device {} (read with `printenv QNN_SDK_ROOT` in the environment of the command ssh runs, then from a login shell): install the QAIRT SDK there and export QNN_SDK_ROOT (sshd SetEnv, ~/.ssh/environment with PermitUserEnvironment, or ~/.profile)",
                i.url
            ));
            return p;
        };
        if !i.sdk_is_dir {
            p.push(format!(
                "the QAIRT SDK is missing on the device: QNN_SDK_ROOT={root} is not a folder there"
            ));
            return p;
        }
        let Some(dir) = &i.arch_dir else {
            p.push(format!(
                "wrong architecture: the device is `{}` (uname -m); QAIRT's device tools exist for aarch64 (and x86_64)",
                i.arch
            ));
            return p;
        };
        if !i.sdk_bin_dirs.contains(dir) {
            p.push(format!(
                "wrong architecture: the SDK at {root} has no bin/{dir}/ for this `{}` device (it has: {})",
                i.arch,
                if i.sdk_bin_dirs.is_empty() {
                    "no bin/ folders".to_string()
                } else {
                    i.sdk_bin_dirs.join(", ")
                }
            ));
        }
        match &i.sdk_version {
            None => p.push(format!(
                "cannot tell the device SDK's version: {root}/sdk.yaml has no `version:`"
            )),
            Some(v) if !(v == qairt || v.starts_with(&format!("{qairt}."))) => p.push(format!(
                "the device's QAIRT SDK is {v}, the recipe asks for {qairt} (model.toml [target] qairt): context binaries are tied to the SDK that built them; install {qairt} on the device"
            )),
            _ => {}
        }
        let files = sdk_files(&self.soc);
        // On a board the HTP is reached through the SoC's stub and skel.
        let needed = if i.arch != "x86_64" { 5 } else { 3 };
        for f in &files[..needed] {
            if !i.has(f) && i.sdk_bin_dirs.contains(dir) {
                p.push(format!("the device SDK has no {}", i.file(f)));
            }
        }
        p
    }

    /// Refuses a device that cannot run the model (every reason listed).
    pub fn require_runnable(&self, qairt: &str) -> Result<()> {
        let p = self.problems(qairt);
        if !p.is_empty() {
            bail!("cannot run on the device:\n  {}", p.join("\n  "));
        }
        Ok(())
    }

    /// Context binaries copied to the device by this tool run.
    pub fn uploads(&self) -> usize {
        self.uploads.get()
    }
}

/// The shell script that asks the device about itself: `key=value` lines (`uname -m`, where
/// `QNN_SDK_ROOT` is and where it was found, the SDK's version, folders and files), and the
/// work folder created with its free space.
fn probe_script(url: &DeviceUrl, soc: &xtask_base::soc::Soc) -> String {
    let w = quote(&url.workdir);
    let mut checks = String::new();
    for dir in ARCH_DIRS {
        for f in sdk_files(soc) {
            let rel = f.replace("{a}", dir);
            checks.push_str(&format!(
                "[ -f \"$root\"/{rel} ] && echo \"present={rel}\"\n"
            ));
        }
    }
    format!(
        r#"echo "arch=$(uname -m)"
[ -n "${{DSP_LIBRARY_PATH:-}}" ] && echo "dsp_library_path=$DSP_LIBRARY_PATH"
root="${{QNN_SDK_ROOT:-}}"; from=ssh-env
if [ -z "$root" ]; then root=$("${{SHELL:-sh}}" -lc 'printenv QNN_SDK_ROOT' </dev/null 2>/dev/null | tail -n 1); from=login-shell; fi
[ -n "$root" ] && echo "sdk_root=$root" && echo "sdk_root_from=$from"
if [ -n "$root" ] && [ -d "$root" ]; then
  echo sdk_is_dir=1
  [ -f "$root/sdk.yaml" ] && echo "sdk_version=$(sed -n 's/^version:[[:space:]]*//p' "$root/sdk.yaml" | head -n 1 | tr -d '"\r')"
  for d in "$root"/bin/*/; do [ -d "$d" ] && echo "bin_dir=$(basename "$d")"; done
  for d in "$root"/lib/*/; do
    case "$(basename "$d")" in aarch64-*|x86_64-linux-clang) ;; *) continue ;; esac
    echo "lib_stubs=$(basename "$d"):$(cd "$d" && ls libQnnHtpV*Stub.so 2>/dev/null | tr '\n' ' ')"
  done
{checks}fi
mkdir -p {w}/bin {w}/runs || exit 3
echo "workdir_abs=$(cd {w} && pwd)"
echo "free_kb=$(df -Pk {w} | awk 'NR==2 {{print $4}}')"
true"#
    )
}

/// The probe's answer: every value of every key, in the order printed.
struct Probe<'a>(BTreeMap<&'a str, Vec<&'a str>>);

impl<'a> Probe<'a> {
    fn parse(out: &'a str) -> Self {
        let mut kv: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for line in out.lines() {
            if let Some((k, v)) = line.split_once('=') {
                kv.entry(k.trim()).or_default().push(v.trim());
            }
        }
        Probe(kv)
    }

    /// The last value of `key` (a key printed twice: the later one wins).
    fn one(&self, key: &str) -> Option<String> {
        self.0
            .get(key)
            .and_then(|v| v.last())
            .map(|s| s.to_string())
    }

    /// Every value of `key`.
    fn all(&self, key: &str) -> Vec<String> {
        self.0
            .get(key)
            .map(|v| v.iter().map(|s| s.to_string()).collect())
            .unwrap_or_default()
    }
}

/// The SDK folder of the device's tools for `uname -m` (None: an arch QAIRT does not ship
/// for): aarch64 prefers Qualcomm Linux's folder when the SDK has it.
fn arch_dir_for(arch: &str, bin_dirs: &[String]) -> Option<String> {
    match arch {
        "aarch64" | "arm64" if bin_dirs.iter().any(|d| d == ARCH_DIRS[0]) => {
            Some(ARCH_DIRS[0].to_string())
        }
        "aarch64" | "arm64" => Some(ARCH_DIRS[1].to_string()),
        "x86_64" => Some(ARCH_DIRS[2].to_string()),
        _ => None,
    }
}

impl DeviceInfo {
    /// What the probe reported, read into its fields.
    fn from_probe(url: &DeviceUrl, probe: &Probe<'_>) -> Result<DeviceInfo> {
        let arch = probe
            .one("arch")
            .context("the device did not report `uname -m`")?;
        let bin_dirs = probe.all("bin_dir");
        Ok(DeviceInfo {
            url: url.to_string(),
            arch_dir: arch_dir_for(&arch, &bin_dirs),
            arch,
            sdk_root: probe.one("sdk_root"),
            sdk_root_from: probe.one("sdk_root_from"),
            sdk_is_dir: probe.one("sdk_is_dir").is_some(),
            sdk_version: probe.one("sdk_version").filter(|v| !v.is_empty()),
            sdk_bin_dirs: bin_dirs,
            present: probe.all("present").into_iter().collect(),
            free_bytes: probe
                .one("free_kb")
                .and_then(|v| v.parse::<u64>().ok())
                .map_or(0, |kb| kb * 1024),
            workdir_abs: probe
                .one("workdir_abs")
                .unwrap_or_else(|| url.workdir.clone()),
            lib_stubs: probe
                .all("lib_stubs")
                .iter()
                .filter_map(|v| v.split_once(':'))
                .map(|(d, s)| {
                    (
                        d.to_string(),
                        s.split_whitespace().map(str::to_string).collect(),
                    )
                })
                .collect(),
            dsp_library_path: probe.one("dsp_library_path").filter(|v| !v.is_empty()),
        })
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

/// A name part unique to this process and moment.
fn nonce() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{t}", std::process::id())
}

#[cfg(test)]
mod tests;
