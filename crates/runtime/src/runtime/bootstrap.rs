//! Obtains the embedded runtime for this platform: pinned PyPI wheels, verified by sha256 and
//! unpacked under `target/qnn-runtime/<platform folder>/`, then reused without any network.
//!
//! Linux x86_64: `onnxruntime==1.24.4` (the C library the `ort` crate loads) and
//! `onnxruntime-qnn==2.3.0` (QNN 2.47.0 CPU, HTP emulator and IR backends plus the ORT plugin EP).
//! Linux aarch64 (the board): the aarch64 `onnxruntime==1.24.4` wheel only; QNN and its plugin
//! come from the user's QAIRT SDK (see `device.rs`), and without them the ORT CPU backend still
//! works. Users can bring their own libraries instead (`ORT_DYLIB_PATH` + `QNN_LIB_DIR`).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

pub use super::device::QnnLibs;
use super::device::QnnSearch;
pub use super::platform::Platform;
pub use super::platform::WheelPin;
/// The x86_64 pins (the CI and developer machines); `Platform::ort_wheel` picks per platform.
pub use super::platform::{ORT_WHEEL_X86_64 as ORT_WHEEL, QNN_WHEEL_X86_64 as QNN_WHEEL};
pub use super::wheels::{RuntimeFile, verify_wheel_hash};
use super::wheels::{fetch_verified_wheel, unpack_runtime};

const ORT_LIB_IN_WHEEL: &str = "onnxruntime/capi/libonnxruntime.so.1.24.4";
const QNN_DIR_IN_WHEEL: &str = "onnxruntime_qnn";

/// Where the libraries of this run come from.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RuntimeLibs {
    /// `libonnxruntime.so.*` loaded by `ort::init_from`.
    pub ort_dylib: PathBuf,
    /// The QNN backends and plugin; None where none was found (a board without the SDK).
    pub qnn: Option<QnnLibs>,
    /// Why QNN is absent: where it was looked for and what to set.
    pub qnn_missing: Option<String>,
    /// `embedded` (pinned wheels), `user` (environment variables), or `embedded ORT + user QNN`.
    pub source: &'static str,
}

impl RuntimeLibs {
    /// `libonnxruntime_providers_qnn.so`, when QNN is available.
    pub fn qnn_plugin(&self) -> Option<&Path> {
        self.qnn.as_ref().map(|q| q.plugin.as_path())
    }

    /// The folder of the `libQnn*.so` backends, or the reason QNN is not available.
    pub fn qnn_dir(&self) -> Result<&Path> {
        match &self.qnn {
            Some(q) => Ok(&q.dir),
            None => bail!(
                "{}",
                self.qnn_missing
                    .as_deref()
                    .unwrap_or("QNN is not available (run `cargo xtask doctor`)")
            ),
        }
    }
}

/// The folder of the unpacked runtime of a platform (one per platform: they never collide).
pub fn runtime_dir(root: &Path, platform: Platform) -> PathBuf {
    xtask_base::project::scratch_dir(root, "qnn-runtime").join(platform.runtime_dir_name())
}

/// Returns the runtime libraries, fetching and unpacking the pinned wheels on first need.
pub fn ensure_runtime(root: &Path) -> Result<RuntimeLibs> {
    let platform = Platform::host();
    if let Some(libs) = user_libs(platform)? {
        return Ok(libs);
    }
    let dir = runtime_dir(root, platform);
    if read_runtime_manifest(&dir).is_none() {
        if dir.join("manifest.json").is_file() {
            xtask_base::errln!(
                "note: the unpacked runtime predates per-file hashes; unpacking it again"
            );
        }
        unpack_from_verified_wheels(root, &dir, platform)?;
    }
    // Before anything is loaded or handed to a compiler: a truncated library would kill the
    // process with SIGBUS when mapped, an edited one would compile or measure with other code.
    // Files unchanged (inode, size, ctime) since their last full hash are not hashed again.
    check_runtime_files(root, &dir, false)?;
    Ok(embedded_libs(&dir, platform))
}

/// The libraries of an unpacked runtime: QNN from its wheel, or (aarch64) from the user.
fn embedded_libs(dir: &Path, platform: Platform) -> RuntimeLibs {
    let ort_dylib = dir.join(ORT_LIB_IN_WHEEL);
    if platform.qnn_wheel().is_some() {
        let qnn_dir = dir.join(QNN_DIR_IN_WHEEL);
        return RuntimeLibs {
            ort_dylib,
            qnn: Some(QnnLibs {
                plugin: qnn_dir.join(super::platform::QNN_PLUGIN_FILE),
                dir: qnn_dir,
            }),
            qnn_missing: None,
            source: "embedded",
        };
    }
    let found = QnnSearch::from_env(Some(&ort_dylib)).locate(platform);
    RuntimeLibs {
        ort_dylib,
        source: if found.is_ok() {
            "embedded ORT + user QNN"
        } else {
            "embedded"
        },
        qnn_missing: found.as_ref().err().cloned(),
        qnn: found.ok(),
    }
}

/// The host's onnxruntime wheel, fetched when missing and checked against its pin (the
/// quantize environment installs this very file: the Python quantizer and the libraries the
/// tool loads are one ONNX Runtime).
pub fn verified_ort_wheel(root: &Path) -> Result<std::path::PathBuf> {
    let platform = Platform::host();
    let wheel_dir = xtask_base::project::scratch_dir(root, "qnn-runtime/wheels");
    fetch_verified_wheel(&wheel_dir, platform.ort_wheel(), platform)
}

fn unpack_from_verified_wheels(root: &Path, runtime_dir: &Path, platform: Platform) -> Result<()> {
    let wheel_dir = xtask_base::project::scratch_dir(root, "qnn-runtime/wheels");
    let ort = platform.ort_wheel();
    let mut wheels = vec![fetch_verified_wheel(&wheel_dir, ort, platform)?];
    if let Some(qnn) = platform.qnn_wheel() {
        wheels.push(fetch_verified_wheel(&wheel_dir, qnn, platform)?);
    }
    unpack_runtime(&wheels, runtime_dir, |files| {
        let manifest = RuntimeManifest {
            ort_wheel_sha256: ort.sha256.into(),
            qnn_wheel_sha256: platform.qnn_wheel().map(|q| q.sha256.into()),
            files,
        };
        Ok(serde_json::to_vec_pretty(&manifest)?)
    })
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct RuntimeManifest {
    ort_wheel_sha256: String,
    #[serde(default)]
    qnn_wheel_sha256: Option<String>,
    files: Vec<RuntimeFile>,
}

/// The manifest of an unpacked runtime; None when absent or of the old format (no hashes).
fn read_runtime_manifest(runtime_dir: &Path) -> Option<RuntimeManifest> {
    let bytes = fs::read(runtime_dir.join("manifest.json")).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The command that rebuilds a damaged runtime from the verified wheels.
pub const REPAIR_COMMAND: &str = "cargo xtask doctor --repair-runtime";

/// Checks every unpacked file against the manifest: its size, then its sha256, re-hashed unless
/// `trust_stamp` saw the same inode, size and ctime match before (`full` re-hashes all). Names
/// each damaged file and the command that repairs the runtime.
pub fn check_runtime_files(root: &Path, runtime_dir: &Path, full: bool) -> Result<usize> {
    let manifest = read_runtime_manifest(runtime_dir).with_context(|| {
        format!(
            "{} has no readable manifest: run `{REPAIR_COMMAND}`",
            xtask_base::project::rel(root, runtime_dir)
        )
    })?;
    let mut damaged = Vec::new();
    for f in &manifest.files {
        match fs::symlink_metadata(runtime_dir.join(&f.path)) {
            Err(_) => damaged.push(format!("{} is missing", f.path)),
            Ok(m) if m.len() != f.bytes => damaged.push(format!(
                "{} has {} bytes, {} when unpacked (truncated or replaced)",
                f.path,
                m.len(),
                f.bytes
            )),
            Ok(_) => {}
        }
    }
    if damaged.is_empty() {
        damaged = super::trust_stamp::check(runtime_dir, &manifest.files, full)?.mismatched;
    }
    if !damaged.is_empty() {
        bail!(
            "the embedded QNN runtime in {} is damaged:\n  {}\nnothing was loaded from it; repair it with `{REPAIR_COMMAND}` \
             (re-unpacks it from the sha256-checked wheels)",
            xtask_base::project::rel(root, runtime_dir),
            damaged.join("\n  ")
        );
    }
    Ok(manifest.files.len())
}

/// The folder of the embedded runtime in use; None when the user brings ORT (nothing to hash).
fn embedded_dir(root: &Path) -> Result<Option<PathBuf>> {
    let platform = Platform::host();
    Ok(user_libs(platform)?
        .is_none()
        .then(|| runtime_dir(root, platform)))
}

/// The runtime, every unpacked file re-hashed in full against its recorded sha256: for the
/// commands whose results can be released (`parity --backend htp`, `run`, `package`,
/// `verify`), where a library edited in place with its size and mtime kept must not pass.
/// The cost (15 files, 268 MB for the x86_64 runtime) is printed.
pub fn ensure_runtime_rehashed(root: &Path) -> Result<RuntimeLibs> {
    let libs = ensure_runtime(root)?;
    if let Some(dir) = embedded_dir(root)? {
        let started = std::time::Instant::now();
        let manifest = read_runtime_manifest(&dir);
        let n = check_runtime_files(root, &dir, true)?;
        let mb = manifest.map_or(0, |m| m.files.iter().map(|f| f.bytes).sum::<u64>()) as f64 / 1e6;
        xtask_base::errln!(
            "runtime: {n} libraries ({mb:.0} MB) re-hashed in {:.2} s, all match their recorded sha256",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(libs)
}

/// Re-hashes every file of the embedded runtime (doctor); None for user-provided libraries.
pub fn rehash_runtime(root: &Path) -> Result<Option<usize>> {
    match embedded_dir(root)? {
        Some(dir) => check_runtime_files(root, &dir, true).map(Some),
        None => Ok(None),
    }
}

/// Unpacks the runtime again from the wheels (re-checked against their pins).
pub fn repair_runtime(root: &Path) -> Result<()> {
    let platform = Platform::host();
    let dir = runtime_dir(root, platform);
    unpack_from_verified_wheels(root, &dir, platform)?;
    check_runtime_files(root, &dir, true)?;
    Ok(())
}

/// The runtime when it is already unpacked (or user-provided), without fetching anything.
pub fn runtime_if_present(root: &Path) -> Option<RuntimeLibs> {
    let platform = Platform::host();
    if let Ok(Some(libs)) = user_libs(platform) {
        return Some(libs);
    }
    let dir = runtime_dir(root, platform);
    dir.join("manifest.json")
        .is_file()
        .then(|| embedded_libs(&dir, platform))
}

/// User libraries. On x86_64, `ORT_DYLIB_PATH` + `QNN_LIB_DIR` (both or neither). On aarch64,
/// `ORT_DYLIB_PATH` alone selects the user's ORT, and QNN is looked up from `QNN_SDK_ROOT`,
/// `QNN_LIB_DIR` and `QNN_EP_PLUGIN` (optional: the ORT CPU backend works without it).
fn user_libs(platform: Platform) -> Result<Option<RuntimeLibs>> {
    let ort = std::env::var_os("ORT_DYLIB_PATH").filter(|v| !v.is_empty());
    if platform.qnn_wheel().is_none() {
        let Some(ort) = ort.map(PathBuf::from) else {
            return Ok(None);
        };
        if !ort.is_file() {
            bail!("ORT_DYLIB_PATH={} is not a file", ort.display());
        }
        let found = QnnSearch::from_env(Some(&ort)).locate(platform);
        return Ok(Some(RuntimeLibs {
            ort_dylib: ort,
            qnn_missing: found.as_ref().err().cloned(),
            qnn: found.ok(),
            source: "user",
        }));
    }
    let qnn = std::env::var_os("QNN_LIB_DIR").filter(|v| !v.is_empty());
    match (ort, qnn) {
        (None, None) => Ok(None),
        (Some(ort), Some(qnn)) => {
            let dir = PathBuf::from(qnn);
            let libs = RuntimeLibs {
                ort_dylib: PathBuf::from(ort),
                qnn: Some(QnnLibs {
                    plugin: dir.join(super::platform::QNN_PLUGIN_FILE),
                    dir,
                }),
                qnn_missing: None,
                source: "user",
            };
            if !libs.ort_dylib.is_file() {
                bail!("ORT_DYLIB_PATH={} is not a file", libs.ort_dylib.display());
            }
            if !libs.qnn_plugin().is_some_and(Path::is_file) {
                bail!(
                    "QNN_LIB_DIR={} does not hold libonnxruntime_providers_qnn.so",
                    libs.qnn_dir()?.display()
                );
            }
            Ok(Some(libs))
        }
        _ => bail!(
            "set both ORT_DYLIB_PATH (libonnxruntime.so) and QNN_LIB_DIR (folder with \
             libonnxruntime_providers_qnn.so and libQnn*.so), or neither to use the pinned wheels"
        ),
    }
}

#[cfg(test)]
#[path = "bootstrap_tests.rs"]
mod tests;
