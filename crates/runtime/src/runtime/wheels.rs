//! Pinned PyPI wheels: fetched once with `python3 -m pip download` for this platform's tags,
//! refused unless their sha256 matches the pin committed with the code, and unpacked (their
//! shared libraries only) into a staging folder that is renamed into place when complete.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::platform::{Platform, WheelPin};
use xtask_base::hashing::sha256_file;

/// A pip download that hangs (a dead proxy, a stalled index) is stopped after this long.
const PIP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(900);

/// One unpacked file of the runtime, as recorded when it was unpacked.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RuntimeFile {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

/// Returns the path of a wheel whose sha256 matches its pin, downloading it with pip if needed.
/// A wheel with a wrong hash is refused and removed, never unpacked.
pub fn fetch_verified_wheel(
    wheel_dir: &Path,
    pin: &WheelPin,
    platform: Platform,
) -> Result<PathBuf> {
    let path = wheel_dir.join(pin.file);
    if !path.is_file() {
        download_wheel(wheel_dir, pin, platform)?;
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
        let removed = fs::remove_file(path).is_ok();
        bail!(
            "refusing {}: sha256 {actual} does not match the pinned {} (xtask/src/runtime/platform.rs); \
             nothing was unpacked{}",
            path.display(),
            pin.sha256,
            if removed {
                "; the file was removed, run again to download it again"
            } else {
                "; delete the file and run again to download it again"
            }
        );
    }
    Ok(())
}

fn download_wheel(wheel_dir: &Path, pin: &WheelPin, platform: Platform) -> Result<()> {
    // The offline test tier proves it needs no network: any download is refused there.
    if std::env::var_os("XTASK_OFFLINE").is_some_and(|v| v == "1") {
        anyhow::bail!(
            "XTASK_OFFLINE=1: {} would be downloaded; this command needs the runtime",
            pin.requirement
        );
    }
    fs::create_dir_all(wheel_dir)?;
    xtask_base::errln!(
        "fetching {} for {} (pinned wheel, once) ...",
        pin.requirement,
        platform.name()
    );
    let args = pip_download_args(wheel_dir, pin.requirement, platform);
    xtask_base::proc::Proc::new("python3")
        .args(&args)
        .timeout(PIP_TIMEOUT)
        .hint(
            "a package registry must be reachable once (python3 -m pip download); or set \
             ORT_DYLIB_PATH (and QNN_LIB_DIR) to libraries you already have; nothing was unpacked",
        )
        .run()?;
    Ok(())
}

/// The pip argv: pinning the Python version and the platform's manylinux tags makes the same
/// files, and hashes, come back whatever Python (and whatever machine) runs pip.
pub fn pip_download_args(wheel_dir: &Path, requirement: &str, platform: Platform) -> Vec<String> {
    let mut args: Vec<String> = [
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
        "3.11",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for tag in platform.pip_platforms() {
        args.extend(["--platform".to_string(), tag.to_string()]);
    }
    args.extend([
        "--disable-pip-version-check".to_string(),
        "-d".to_string(),
        wheel_dir.display().to_string(),
        requirement.to_string(),
    ]);
    args
}

/// Unpacks the shared libraries of the wheels into a temporary folder beside `runtime_dir`,
/// writes `manifest` (given the unpacked files) there, then renames it into place, so an
/// interrupted unpack never looks complete.
pub fn unpack_runtime(
    wheels: &[PathBuf],
    runtime_dir: &Path,
    manifest: impl FnOnce(Vec<RuntimeFile>) -> Result<Vec<u8>>,
) -> Result<()> {
    let parent = runtime_dir.parent().context("runtime dir has no parent")?;
    fs::create_dir_all(parent)?;
    let staging = tempfile::Builder::new()
        .prefix(".unpack-")
        .tempdir_in(parent)?;
    let mut files = Vec::new();
    for wheel in wheels {
        files.extend(unpack_shared_libraries(wheel, staging.path())?);
    }
    fs::write(staging.path().join("manifest.json"), manifest(files)?)?;
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
fn unpack_shared_libraries(wheel: &Path, dest: &Path) -> Result<Vec<RuntimeFile>> {
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
        fs::write(&out, &bytes)?;
        written.push(RuntimeFile {
            path: name,
            bytes: bytes.len() as u64,
            sha256: xtask_base::hashing::sha256_bytes(&bytes),
        });
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::platform::{ORT_WHEEL_X86_64, QNN_WHEEL_X86_64};

    #[test]
    fn a_wheel_with_a_wrong_hash_is_refused_and_removed() {
        let root = tempfile::tempdir().unwrap();
        let wheel_dir = root.path().join("target/qnn-runtime/wheels");
        fs::create_dir_all(&wheel_dir).unwrap();
        fs::write(
            wheel_dir.join(ORT_WHEEL_X86_64.file),
            b"not the pinned wheel",
        )
        .unwrap();
        let err = fetch_verified_wheel(&wheel_dir, &ORT_WHEEL_X86_64, Platform::LinuxX86_64)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("refusing") && err.contains(ORT_WHEEL_X86_64.sha256),
            "{err}"
        );
        assert!(
            !wheel_dir.join(ORT_WHEEL_X86_64.file).exists(),
            "the refused wheel is removed"
        );
    }

    #[test]
    fn pip_is_asked_for_the_pinned_platforms_and_python() {
        let args = pip_download_args(
            Path::new("w"),
            QNN_WHEEL_X86_64.requirement,
            Platform::LinuxX86_64,
        )
        .join(" ");
        assert!(
            args.contains("--only-binary=:all: --python-version 3.11"),
            "{args}"
        );
        assert!(
            args.contains("--platform manylinux_2_35_x86_64 --platform manylinux_2_28_x86_64"),
            "{args}"
        );
        assert!(args.ends_with("onnxruntime-qnn==2.3.0"), "{args}");
        let arm = pip_download_args(
            Path::new("w"),
            "onnxruntime==1.24.4",
            Platform::LinuxAarch64,
        )
        .join(" ");
        assert!(
            arm.contains("--python-version 3.11 --platform manylinux_2_28_aarch64 --disable"),
            "{arm}"
        );
        assert!(!arm.contains("x86_64"), "{arm}");
    }
}
