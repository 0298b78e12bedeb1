//! Obtains the embedded QNN 2.47 runtime: two pinned PyPI wheels, verified by sha256 and
//! unpacked under `target/qnn-runtime/`, then reused without any network.
//!
//! Why wheels: PyPI's `onnxruntime==1.24.4` carries the plain C library the `ort` crate loads,
//! and `onnxruntime-qnn==2.3.0` carries the real QNN 2.47.0 CPU, HTP (emulated on x86_64) and
//! IR backends plus the ORT plugin EP. A user can bring their own libraries instead
//! (`ORT_DYLIB_PATH` + `QNN_LIB_DIR`, as on the device).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::hashing::sha256_file;

/// One pinned wheel: the file pip must return and its sha256, committed with the code.
pub struct WheelPin {
    pub requirement: &'static str,
    pub file: &'static str,
    pub sha256: &'static str,
}

pub const ORT_WHEEL: WheelPin = WheelPin {
    requirement: "onnxruntime==1.24.4",
    file: "onnxruntime-1.24.4-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    sha256: "e54ad52e61d2d4618dcff8fa1480ac66b24ee2eab73331322db1049f11ccf330",
};

pub const QNN_WHEEL: WheelPin = WheelPin {
    requirement: "onnxruntime-qnn==2.3.0",
    file: "onnxruntime_qnn-2.3.0-cp311-cp311-manylinux_2_35_x86_64.whl",
    sha256: "087bb672ca0cabd3c7fed07084478fe78658cfa09fae1cb013099d7b2289dc72",
};

/// The ORT version the pinned wheel carries (also checked against the loaded library).
pub const PINNED_ORT_VERSION: &str = "1.24.4";
/// The QNN SDK build the pinned plugin wheel carries.
pub const PINNED_QNN_VERSION: &str = "2.47.0";

const ORT_LIB_IN_WHEEL: &str = "onnxruntime/capi/libonnxruntime.so.1.24.4";
const QNN_DIR_IN_WHEEL: &str = "onnxruntime_qnn";
/// A pip download that hangs (a dead proxy, a stalled index) is stopped after this long.
const PIP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(900);
const RUNTIME_DIR_NAME: &str = "ort-1.24.4-qnn-2.3.0";

/// Where the libraries of this run come from.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RuntimeLibs {
    /// `libonnxruntime.so.*` loaded by `ort::init_from`.
    pub ort_dylib: PathBuf,
    /// Folder holding `libonnxruntime_providers_qnn.so` and the `libQnn*.so` backends.
    pub qnn_dir: PathBuf,
    /// `embedded` (pinned wheels) or `user` (environment variables).
    pub source: &'static str,
}

impl RuntimeLibs {
    pub fn qnn_plugin(&self) -> PathBuf {
        self.qnn_dir.join("libonnxruntime_providers_qnn.so")
    }
}

/// Returns the runtime libraries, fetching and unpacking the pinned wheels on first need.
pub fn ensure_runtime(root: &Path) -> Result<RuntimeLibs> {
    if let Some(libs) = user_libs()? {
        return Ok(libs);
    }
    let runtime_dir = root.join("target/qnn-runtime").join(RUNTIME_DIR_NAME);
    if !runtime_dir.join("manifest.json").is_file() {
        let wheel_dir = root.join("target/qnn-runtime/wheels");
        let wheels = [
            fetch_verified_wheel(&wheel_dir, &ORT_WHEEL)?,
            fetch_verified_wheel(&wheel_dir, &QNN_WHEEL)?,
        ];
        unpack_runtime(&wheels, &runtime_dir)?;
    }
    Ok(RuntimeLibs {
        ort_dylib: runtime_dir.join(ORT_LIB_IN_WHEEL),
        qnn_dir: runtime_dir.join(QNN_DIR_IN_WHEEL),
        source: "embedded",
    })
}

/// The runtime when it is already unpacked (or user-provided), without fetching anything.
pub fn runtime_if_present(root: &Path) -> Option<RuntimeLibs> {
    if let Ok(Some(libs)) = user_libs() {
        return Some(libs);
    }
    let runtime_dir = root.join("target/qnn-runtime").join(RUNTIME_DIR_NAME);
    runtime_dir
        .join("manifest.json")
        .is_file()
        .then(|| RuntimeLibs {
            ort_dylib: runtime_dir.join(ORT_LIB_IN_WHEEL),
            qnn_dir: runtime_dir.join(QNN_DIR_IN_WHEEL),
            source: "embedded",
        })
}

/// `ORT_DYLIB_PATH` + `QNN_LIB_DIR` select user libraries (both or neither).
fn user_libs() -> Result<Option<RuntimeLibs>> {
    let ort = std::env::var_os("ORT_DYLIB_PATH").filter(|v| !v.is_empty());
    let qnn = std::env::var_os("QNN_LIB_DIR").filter(|v| !v.is_empty());
    match (ort, qnn) {
        (None, None) => Ok(None),
        (Some(ort), Some(qnn)) => {
            let libs = RuntimeLibs {
                ort_dylib: PathBuf::from(ort),
                qnn_dir: PathBuf::from(qnn),
                source: "user",
            };
            if !libs.ort_dylib.is_file() {
                bail!("ORT_DYLIB_PATH={} is not a file", libs.ort_dylib.display());
            }
            if !libs.qnn_plugin().is_file() {
                bail!(
                    "QNN_LIB_DIR={} does not hold libonnxruntime_providers_qnn.so",
                    libs.qnn_dir.display()
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

/// Returns the path of a wheel whose sha256 matches its pin, downloading it with pip if needed.
/// A wheel with a wrong hash is refused and removed, never unpacked.
fn fetch_verified_wheel(wheel_dir: &Path, pin: &WheelPin) -> Result<PathBuf> {
    let path = wheel_dir.join(pin.file);
    if !path.is_file() {
        download_wheel(wheel_dir, pin)?;
    }
    if !path.is_file() {
        bail!(
            "pip did not produce {} in {}: the index returned a different file for {}",
            pin.file,
            wheel_dir.display(),
            pin.requirement
        );
    }
    verify_wheel_hash(&path, pin)?;
    Ok(path)
}

pub fn verify_wheel_hash(path: &Path, pin: &WheelPin) -> Result<()> {
    let actual = sha256_file(path)?;
    if actual != pin.sha256 {
        bail!(
            "refusing {}: sha256 {actual} does not match the pinned {} (xtask/src/runtime/bootstrap.rs); \
             nothing was unpacked. Delete the file and run again to re-download it.",
            path.display(),
            pin.sha256
        );
    }
    Ok(())
}

fn download_wheel(wheel_dir: &Path, pin: &WheelPin) -> Result<()> {
    fs::create_dir_all(wheel_dir)?;
    eprintln!("fetching {} (pinned wheel, once) ...", pin.requirement);
    let args = pip_download_args(wheel_dir, pin.requirement);
    crate::proc::Proc::new("python3")
        .args(&args)
        .timeout(PIP_TIMEOUT)
        .hint(
            "a package registry must be reachable once (python3 -m pip download); or set \
             ORT_DYLIB_PATH and QNN_LIB_DIR to libraries you already have; nothing was unpacked",
        )
        .run()?;
    Ok(())
}

/// The pip argv: pinning the Python version and both manylinux tags makes the same files,
/// and hashes, come back whatever Python the host runs.
pub fn pip_download_args(wheel_dir: &Path, requirement: &str) -> Vec<String> {
    [
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
        "3.11",
        "--platform",
        "manylinux_2_35_x86_64",
        "--platform",
        "manylinux_2_28_x86_64",
        "--disable-pip-version-check",
        "-d",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([wheel_dir.display().to_string(), requirement.to_string()])
    .collect()
}

/// Unpacks the shared libraries of both wheels into a temporary folder, then renames it into
/// place, so an interrupted unpack never looks complete.
fn unpack_runtime(wheels: &[PathBuf], runtime_dir: &Path) -> Result<()> {
    let parent = runtime_dir.parent().context("runtime dir has no parent")?;
    fs::create_dir_all(parent)?;
    let staging = tempfile::Builder::new()
        .prefix(".unpack-")
        .tempdir_in(parent)?;
    let mut files = Vec::new();
    for wheel in wheels {
        files.extend(unpack_shared_libraries(wheel, staging.path())?);
    }
    let manifest = serde_json::json!({
        "ort_wheel": ORT_WHEEL.file, "ort_wheel_sha256": ORT_WHEEL.sha256,
        "qnn_wheel": QNN_WHEEL.file, "qnn_wheel_sha256": QNN_WHEEL.sha256,
        "files": files,
    });
    fs::write(
        staging.path().join("manifest.json"),
        serde_json::to_vec_pretty(&manifest)?,
    )?;
    if runtime_dir.exists() {
        fs::remove_dir_all(runtime_dir)?;
    }
    fs::rename(staging.keep(), runtime_dir).with_context(|| {
        format!(
            "cannot move the unpacked runtime to {}",
            runtime_dir.display()
        )
    })?;
    Ok(())
}

/// Extracts every `*.so*` member, keeping the wheel's relative layout: the QNN plugin expects
/// its bundled libc++ in `../onnxruntime_qnn.libs` and silently falls back to CPU without it.
fn unpack_shared_libraries(wheel: &Path, dest: &Path) -> Result<Vec<String>> {
    let file = fs::File::open(wheel).with_context(|| format!("open {}", wheel.display()))?;
    let mut archive =
        zip::ZipArchive::new(file).with_context(|| format!("{} is not a zip", wheel.display()))?;
    let mut written = Vec::new();
    for i in 0..archive.len() {
        let mut member = archive.by_index(i)?;
        let Some(rel) = member.enclosed_name() else {
            continue;
        };
        let name = rel.to_string_lossy().to_string();
        let is_lib = name.contains(".so") && !name.contains("pybind11") && !name.ends_with(".py");
        if !is_lib || member.is_dir() {
            continue;
        }
        let out = dest.join(&rel);
        fs::create_dir_all(out.parent().unwrap_or(dest))?;
        let mut bytes = Vec::with_capacity(member.size() as usize);
        member.read_to_end(&mut bytes)?;
        fs::write(&out, bytes)?;
        written.push(name);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wheel_with_a_wrong_hash_is_refused_and_nothing_is_unpacked() {
        let root = tempfile::tempdir().unwrap();
        let wheel_dir = root.path().join("target/qnn-runtime/wheels");
        fs::create_dir_all(&wheel_dir).unwrap();
        fs::write(wheel_dir.join(ORT_WHEEL.file), b"not the pinned wheel").unwrap();
        let err = fetch_verified_wheel(&wheel_dir, &ORT_WHEEL)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("refusing") && err.contains(ORT_WHEEL.sha256),
            "{err}"
        );
        assert!(
            !root
                .path()
                .join("target/qnn-runtime")
                .join(RUNTIME_DIR_NAME)
                .exists()
        );
    }

    #[test]
    fn pip_is_asked_for_the_pinned_platforms_and_python() {
        let args = pip_download_args(Path::new("w"), QNN_WHEEL.requirement).join(" ");
        assert!(
            args.contains("--only-binary=:all: --python-version 3.11"),
            "{args}"
        );
        assert!(
            args.contains("--platform manylinux_2_35_x86_64 --platform manylinux_2_28_x86_64"),
            "{args}"
        );
        assert!(args.ends_with("onnxruntime-qnn==2.3.0"), "{args}");
    }
}
