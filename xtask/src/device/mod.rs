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
pub mod ssh;
pub mod url;

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use self::ssh::{Ssh, quote};
pub use self::url::DeviceUrl;
use crate::recipe::Component;
use crate::tensor::Tensor;
use crate::toolchain::sdk::NativeIo;
use crate::toolchain::sdk::profile::{ExecuteStats, TIMING_SOURCE, execute_samples_us};

/// Files of the device SDK that `doctor --device` reports (`{a}` = the arch folder).
const SDK_FILES: [&str; 5] = [
    "bin/{a}/qnn-net-run",
    "bin/{a}/qnn-profile-viewer",
    "lib/{a}/libQnnHtp.so",
    "lib/{a}/libQnnHtpV73Stub.so",
    "lib/hexagon-v73/unsigned/libQnnHtpV73Skel.so",
];
const ARCH_DIRS: [&str; 3] = [
    "aarch64-oe-linux-gcc11.2",
    "aarch64-ubuntu-gcc9.4",
    "x86_64-linux-clang",
];
/// Bytes kept free on the device beyond what a run writes.
const DISK_MARGIN: u64 = 16 << 20;

/// What the device said about itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// `ssh://user@host:port/workdir`.
    pub url: String,
    /// `uname -m`.
    pub arch: String,
    /// The SDK's tools/libraries folder for that arch (None: not an arch QAIRT ships for).
    pub arch_dir: Option<String>,
    pub sdk_root: Option<String>,
    /// `ssh-env` (the command's environment) or `login-shell`.
    pub sdk_root_from: Option<String>,
    pub sdk_is_dir: bool,
    pub sdk_version: Option<String>,
    /// `bin/<dir>` folders of the SDK.
    pub sdk_bin_dirs: Vec<String>,
    /// Which of the SDK files (paths relative to the SDK root) exist.
    pub present: BTreeSet<String>,
    pub free_bytes: u64,
    pub workdir_abs: String,
}

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
    crate::toolchain::sdk::step_timeout()
}

impl Device {
    /// Connects (one shared connection) and asks the device about itself.
    pub fn connect(url: &str) -> Result<Device> {
        let url = DeviceUrl::parse(url)?;
        let ssh = Ssh::new(url.clone())?;
        let w = quote(&url.workdir);
        let mut checks = String::new();
        for dir in ARCH_DIRS {
            for f in SDK_FILES {
                let rel = f.replace("{a}", dir);
                checks.push_str(&format!(
                    "[ -f \"$root\"/{rel} ] && echo \"present={rel}\"\n"
                ));
            }
        }
        let script = format!(
            r#"echo "arch=$(uname -m)"
root="${{QNN_SDK_ROOT:-}}"; from=ssh-env
if [ -z "$root" ]; then root=$("${{SHELL:-sh}}" -lc 'printenv QNN_SDK_ROOT' </dev/null 2>/dev/null | tail -n 1); from=login-shell; fi
[ -n "$root" ] && echo "sdk_root=$root" && echo "sdk_root_from=$from"
if [ -n "$root" ] && [ -d "$root" ]; then
  echo sdk_is_dir=1
  [ -f "$root/sdk.yaml" ] && echo "sdk_version=$(sed -n 's/^version:[[:space:]]*//p' "$root/sdk.yaml" | head -n 1 | tr -d '"\r')"
  for d in "$root"/bin/*/; do [ -d "$d" ] && echo "bin_dir=$(basename "$d")"; done
{checks}fi
mkdir -p {w}/bin {w}/runs || exit 3
echo "workdir_abs=$(cd {w} && pwd)"
echo "free_kb=$(df -Pk {w} | awk 'NR==2 {{print $4}}')"
true"#
        );
        let out = ssh
            .exec(&script, short(), "asking the device about itself")
            .context("cannot use the device")?;
        let mut kv: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for line in out.lines() {
            if let Some((k, v)) = line.split_once('=') {
                kv.entry(k.trim()).or_default().push(v.trim());
            }
        }
        let one = |k: &str| kv.get(k).and_then(|v| v.last()).map(|s| s.to_string());
        let arch = one("arch").context("the device did not report `uname -m`")?;
        let bin_dirs: Vec<String> = kv
            .get("bin_dir")
            .map(|v| v.iter().map(|s| s.to_string()).collect())
            .unwrap_or_default();
        let arch_dir = match arch.as_str() {
            "aarch64" | "arm64" => Some(
                if bin_dirs.iter().any(|d| d == ARCH_DIRS[0]) {
                    ARCH_DIRS[0]
                } else {
                    ARCH_DIRS[1]
                }
                .to_string(),
            ),
            "x86_64" => Some(ARCH_DIRS[2].to_string()),
            _ => None,
        };
        let info = DeviceInfo {
            url: url.to_string(),
            arch,
            arch_dir,
            sdk_root: one("sdk_root"),
            sdk_root_from: one("sdk_root_from"),
            sdk_is_dir: one("sdk_is_dir").is_some(),
            sdk_version: one("sdk_version").filter(|v| !v.is_empty()),
            sdk_bin_dirs: bin_dirs,
            present: kv
                .get("present")
                .map(|v| v.iter().map(|s| s.to_string()).collect())
                .unwrap_or_default(),
            free_bytes: one("free_kb")
                .and_then(|v| v.parse::<u64>().ok())
                .map_or(0, |kb| kb * 1024),
            workdir_abs: one("workdir_abs").unwrap_or_else(|| url.workdir.clone()),
        };
        Ok(Device {
            ssh,
            info,
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
        let mut needed = vec![SDK_FILES[0], SDK_FILES[1], SDK_FILES[2]];
        if i.arch != "x86_64" {
            // On a board the HTP is reached through the v73 stub and skel.
            needed.extend([SDK_FILES[3], SDK_FILES[4]]);
        }
        for f in needed {
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

    /// The context binary `bin` on the device as `bin/<sha256>.bin`, copied only when missing.
    fn ensure_binary(&self, comp: &str, bin: &Path, reserve: u64) -> Result<String> {
        let sha = crate::hashing::sha256_file(bin)?;
        let size = std::fs::metadata(bin)?.len();
        let w = quote(&self.ssh.url.workdir);
        let fin = format!("bin/{sha}.bin");
        let out = self.ssh.exec(
            &format!(
                "cd {w} && mkdir -p bin runs && if [ -f {fin} ]; then echo present=1; fi; echo \"free_kb=$(df -Pk . | awk 'NR==2 {{print $4}}')\""
            ),
            short(),
            "checking the device's work folder",
        )?;
        let present = out.lines().any(|l| l.trim() == "present=1");
        let free = out
            .lines()
            .find_map(|l| l.trim().strip_prefix("free_kb="))
            .and_then(|v| v.parse::<u64>().ok())
            .map(|kb| kb * 1024);
        let need = reserve + if present { 0 } else { size } + DISK_MARGIN;
        if let Some(free) = free
            && free < need
        {
            bail!(
                "disk full on the device: {} free in {}, this run of {comp} needs about {} (binary {}, inputs and outputs, {} margin); free space there or use another work folder",
                mib(free),
                self.info.workdir_abs,
                mib(need),
                if present {
                    "already there".to_string()
                } else {
                    mib(size)
                },
                mib(DISK_MARGIN)
            );
        }
        if present {
            crate::outln!(
                "      device: {comp} context binary already on the device ({fin}), not copied"
            );
            return Ok(fin);
        }
        let part = format!("bin/.{sha}.bin.part-{}", nonce());
        self.ssh.upload(
            bin,
            &format!("{}/{part}", self.ssh.url.workdir),
            transfer_timeout(),
            &format!("copying the context binary of {comp}"),
        )?;
        self.ssh.exec(
            &format!(
                "cd {w} && if [ \"$(sha256sum {part} | cut -d ' ' -f 1)\" = {sha} ]; then mv -f {part} {fin}; else rm -f {part}; echo 'the copied binary does not match its sha256' >&2; exit 4; fi"
            ),
            short(),
            &format!("checking the copied context binary of {comp}"),
        )?;
        self.uploads.set(self.uploads.get() + 1);
        crate::outln!("      device: uploaded {comp} context binary ({size} bytes) as {fin}");
        Ok(fin)
    }

    /// Runs `comp`'s context binary on the device with `inputs`: `warmup + iters` inferences
    /// in one profiled `qnn-net-run` call; `log` keeps the device tools' output.
    pub fn run_component(
        &self,
        comp: &Component,
        bin: &Path,
        inputs: &BTreeMap<String, Tensor>,
        warmup: usize,
        iters: usize,
        log: &Path,
    ) -> Result<DeviceRun> {
        let name = comp.name();
        let lines = warmup + iters.max(1);
        let native = NativeIo::of(comp);
        let staging = tempfile::tempdir()?;
        let id = format!("{}-{}", nonce(), self.runs.get());
        self.runs.set(self.runs.get() + 1);
        let run_dir = format!("runs/{id}");
        let local = staging.path().join("in");
        std::fs::create_dir_all(&local)?;
        let mut entries = Vec::new();
        let mut in_bytes = 0u64;
        for (i, spec) in comp.file.inputs.iter().enumerate() {
            let t = inputs
                .get(spec.name.get_ref())
                .with_context(|| format!("no input `{}` for {name}", spec.name.get_ref()))?;
            let bytes = crate::toolchain::sdk::steps::raw_bytes(t, native.inputs);
            in_bytes += bytes.len() as u64;
            std::fs::write(local.join(format!("input_{i}.raw")), bytes)?;
            entries.push(format!("{}:={run_dir}/input_{i}.raw", spec.name.get_ref()));
        }
        std::fs::write(
            local.join("input_list.txt"),
            format!("{}\n", entries.join(" ")).repeat(lines),
        )?;
        let out_bytes: u64 = comp
            .file
            .outputs
            .iter()
            .map(|o| o.shape.iter().product::<usize>() as u64 * 8)
            .sum();
        let fin = self.ensure_binary(name, bin, in_bytes + out_bytes * lines as u64)?;
        let w = &self.ssh.url.workdir;
        let wq = quote(w);
        let part = format!("runs/.{id}.part");
        self.ssh.upload(
            &local,
            &format!("{w}/{part}"),
            transfer_timeout(),
            &format!("copying the inputs of {name}"),
        )?;
        let result = (|| -> Result<DeviceRun> {
            self.ssh.exec(
                &format!("cd {wq} && mv {part} {run_dir}"),
                short(),
                "naming the uploaded inputs",
            )?;
            let (root, dir) = (
                self.info.sdk_root.as_deref().unwrap_or_default(),
                self.info.arch_dir.as_deref().unwrap_or_default(),
            );
            let r = quote(root);
            let flags = native.flags().join(" ");
            let script = format!(
                "cd {wq} && export LD_LIBRARY_PATH={r}/lib/{dir}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}} \
                 && export ADSP_LIBRARY_PATH=\"{r}/lib/hexagon-v73/unsigned${{ADSP_LIBRARY_PATH:+;$ADSP_LIBRARY_PATH}}\" \
                 && {r}/bin/{dir}/qnn-net-run --retrieve_context {fin} --backend {r}/lib/{dir}/libQnnHtp.so \
                 --input_list {run_dir}/input_list.txt --output_dir {run_dir}/out --profiling_level basic {flags} \
                 && {r}/bin/{dir}/qnn-profile-viewer --input_log {run_dir}/out/qnn-profiling-data_0.log --output {run_dir}/out/profile.csv"
            );
            let out = self.ssh.exec(
                &script,
                crate::toolchain::sdk::step_timeout(),
                &format!("qnn-net-run of {name}"),
            );
            if let Some(parent) = log.parent() {
                std::fs::create_dir_all(parent)?;
            }
            match &out {
                Ok(text) => std::fs::write(log, format!("$ {script}\n{text}"))?,
                Err(e) => std::fs::write(log, format!("$ {script}\n{e:#}"))?,
            }
            out?;
            let back = staging.path().join("out");
            std::fs::create_dir_all(&back)?;
            for f in ["Result_0", "profile.csv"] {
                self.ssh.download(
                    &format!("{w}/{run_dir}/out/{f}"),
                    &back.join(f),
                    transfer_timeout(),
                    &format!("copying back the outputs of {name}"),
                )?;
            }
            let outputs = crate::toolchain::sdk::steps::read_result_outputs(comp, &back, native)?;
            let csv = std::fs::read_to_string(back.join("profile.csv"))?;
            let all = execute_samples_us(&csv, TIMING_SOURCE)
                .context("reading the device's qnn-profile-viewer CSV")?;
            if all.len() != lines {
                bail!(
                    "the device's profile of {name} has {} {TIMING_SOURCE} EXECUTE rows for {lines} inferences",
                    all.len()
                );
            }
            let samples_us = all[warmup..].to_vec();
            let stats = ExecuteStats::of(TIMING_SOURCE, &samples_us);
            Ok(DeviceRun {
                outputs,
                samples_us,
                stats,
            })
        })();
        // The run's folder is scratch: removed whatever happened (best effort).
        let _ = self.ssh.exec(
            &format!("cd {wq} && rm -rf {run_dir} {part}"),
            short(),
            "cleaning up",
        );
        result.with_context(|| format!("running {name} on the device {}", self.info.url))
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

/// What the report says about where the times come from.
pub fn timing_note(info: &DeviceInfo) -> String {
    format!(
        "measured on the device via ssh ({}): `qnn-profile-viewer` {TIMING_SOURCE} EXECUTE rows of the device's own `qnn-net-run --profiling_level basic` (the timing source is whatever that SDK's HTP backend is on that device; copies over ssh not included)",
        info.label()
    )
}
