//! The quantize step's Python environment, `target/quant-venv`: made by the tool from the
//! runtime's own verified onnxruntime wheel (the version whose libraries it loads) plus the
//! hash-pinned packages of `crates/runtime/scripts/quantize/requirements.txt`, and checked before every
//! use: every file each installed package's `RECORD` lists is hashed against it (pip writes
//! those sha256 from the pinned wheels), and the packages and versions must be exactly the
//! pinned ones. A changed or missing file is refused with the command that makes the
//! environment again; nothing is quantized with it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use sha2::{Digest, Sha256};

/// The pins, committed with the code (the step's key holds their hash).
pub const REQUIREMENTS: &str = include_str!("../../scripts/quantize/requirements.txt");
/// The quantize script the step runs (its hash enters the step's key).
pub const SCRIPT: &str = include_str!("../../scripts/quantize/quantize.py");
/// The CPython the pinned wheels are built for.
pub const PYTHON_VERSION: &str = "3.11";
/// What remakes the environment from the pins.
pub const REMAKE_COMMAND: &str = "rm -rf target/quant-venv";

/// A ready environment: its python and what it holds.
#[derive(Debug, Clone)]
pub struct QuantEnv {
    pub dir: PathBuf,
    pub python: PathBuf,
    /// Package name -> version, as installed.
    pub packages: BTreeMap<String, String>,
}

/// The folder of the environment.
pub fn env_dir(root: &Path) -> PathBuf {
    xtask_base::project::scratch_dir(root, "quant-venv")
}

/// The environment, made on first use (about a minute: pip installs ten wheels), then checked.
pub fn ensure(root: &Path) -> Result<QuantEnv> {
    let dir = env_dir(root);
    if !dir.join("pyvenv.cfg").is_file() {
        make(root, &dir)?;
    }
    check(&dir)
}

/// Removes and makes the environment again from the pins.
pub fn remake(root: &Path) -> Result<QuantEnv> {
    let dir = env_dir(root);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    make(root, &dir)?;
    check(&dir)
}

/// Makes the venv in a staging folder beside `dir`, installs the pins, renames it into place.
fn make(root: &Path, dir: &Path) -> Result<()> {
    if std::env::var_os("XTASK_OFFLINE").is_some_and(|v| v == "1") {
        bail!("XTASK_OFFLINE=1: the quantize environment would be made (pip downloads its wheels)");
    }
    let python = xtask_base::proc::on_path("python3").context(
        "python3 is not on PATH: the quantize step runs ONNX Runtime's quantizer in Python",
    )?;
    require_python_version(&python)?;
    let wheel = crate::runtime::bootstrap::verified_ort_wheel(root)?;
    let parent = dir
        .parent()
        .context("the environment's folder has no parent")?;
    std::fs::create_dir_all(parent)?;
    let staging = tempfile::Builder::new()
        .prefix(".quant-venv-staging-")
        .tempdir_in(parent)?;
    let venv = staging.path().join("venv");
    xtask_base::errln!(
        "making target/quant-venv: onnxruntime {} from the runtime's verified wheel and the \
         hash-pinned packages of crates/runtime/scripts/quantize/requirements.txt (about a minute, once)",
        xtask_base::vocab::PINNED_ORT_VERSION
    );
    xtask_base::proc::Proc::new(&python)
        .args(["-m", "venv"])
        .arg(&venv)
        .heartbeat("making target/quant-venv: python -m venv")
        .timeout(Duration::from_secs(300))
        .run()?;
    let pins = staging.path().join("requirements.txt");
    let ort_pin = crate::runtime::platform::Platform::host().ort_wheel();
    std::fs::write(
        &pins,
        format!(
            "{REQUIREMENTS}\nonnxruntime @ file://{} --hash=sha256:{}\n",
            wheel.display(),
            ort_pin.sha256
        ),
    )?;
    xtask_base::proc::Proc::new(venv.join("bin/python"))
        .args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
            "--require-hashes",
            "--no-deps",
            "--only-binary=:all:",
            "-r",
        ])
        .arg(&pins)
        .heartbeat("making target/quant-venv: pip install")
        .log(staging.path().join("pip.log"))
        .timeout(Duration::from_secs(900))
        .hint(
            "the pins are in crates/runtime/scripts/quantize/requirements.txt; pip needs the package index",
        )
        .run()?;
    std::fs::rename(&venv, dir)
        .with_context(|| format!("cannot move the new environment to {}", dir.display()))?;
    Ok(())
}

/// The pinned wheels are CPython 3.11 builds: another python cannot load them.
fn require_python_version(python: &Path) -> Result<()> {
    let out = xtask_base::proc::Proc::new(python)
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        .timeout(Duration::from_secs(60))
        .run()?;
    let found = out.output.trim();
    if found != PYTHON_VERSION {
        bail!(
            "{} is Python {found}; the quantize step needs CPython {PYTHON_VERSION} (its pinned \
             wheels, onnxruntime {} among them, are cp311 builds)",
            python.display(),
            xtask_base::vocab::PINNED_ORT_VERSION
        );
    }
    Ok(())
}

/// The pinned package names and versions (`name==version` lines), plus onnxruntime.
pub fn pinned_packages() -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = REQUIREMENTS
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let spec = l.split_whitespace().next()?;
            let (name, version) = spec.split_once("==")?;
            Some((normalize(name), version.to_string()))
        })
        .collect();
    out.insert(
        "onnxruntime".into(),
        xtask_base::vocab::PINNED_ORT_VERSION.into(),
    );
    out
}

/// PEP 503 name normalisation (`typing_extensions` and `typing-extensions` are one package).
fn normalize(name: &str) -> String {
    name.to_ascii_lowercase().replace(['_', '.'], "-")
}

/// Checks the environment: exactly the pinned packages, every file as its RECORD says.
pub fn check(dir: &Path) -> Result<QuantEnv> {
    let site = site_packages(dir)?;
    let mut packages = BTreeMap::new();
    for entry in std::fs::read_dir(&site)
        .with_context(|| format!("cannot read {}", site.display()))?
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".dist-info") else {
            continue;
        };
        let Some((pkg, version)) = stem.rsplit_once('-') else {
            continue;
        };
        check_record(&site, &entry.path().join("RECORD"))?;
        packages.insert(normalize(pkg), version.to_string());
    }
    // pip and setuptools come with the venv (Python's own `ensurepip`); they run nothing of
    // the step, and their files are checked against their RECORDs like the rest.
    packages.retain(|name, _| name != "pip" && name != "setuptools");
    let pinned = pinned_packages();
    if packages != pinned {
        bail!(
            "{} holds {:?}, not the pinned {:?}; `{REMAKE_COMMAND}` and run again: the next quantize step makes it from the pins",
            dir.display(),
            packages,
            pinned
        );
    }
    Ok(QuantEnv {
        dir: dir.to_path_buf(),
        python: dir.join("bin/python"),
        packages,
    })
}

fn site_packages(dir: &Path) -> Result<PathBuf> {
    let site = dir
        .join("lib")
        .join(format!("python{PYTHON_VERSION}"))
        .join("site-packages");
    if !site.is_dir() {
        bail!(
            "{} is not a CPython {PYTHON_VERSION} environment (no {}); `{REMAKE_COMMAND}` and run again: the next quantize step makes it from the pins",
            dir.display(),
            site.display()
        );
    }
    Ok(site)
}

/// Every file a package's RECORD lists with a hash has that sha256 (urlsafe base64, as pip
/// writes it) and that size.
fn check_record(site: &Path, record: &Path) -> Result<()> {
    let text = std::fs::read_to_string(record).with_context(|| {
        format!(
            "cannot read {}; `{REMAKE_COMMAND}` and run again",
            record.display()
        )
    })?;
    for line in text.lines() {
        let mut parts = line.rsplitn(3, ',');
        let (size, hash, path) = (parts.next(), parts.next(), parts.next());
        let (Some(size), Some(hash), Some(path)) = (size, hash, path) else {
            continue;
        };
        let Some(b64) = hash.strip_prefix("sha256=") else {
            continue; // RECORD and compiled files carry no hash
        };
        let file = site.join(path);
        let bytes = std::fs::read(&file).with_context(|| {
            format!(
                "{} is missing from the quantize environment; `{REMAKE_COMMAND}` and run again: the next quantize step makes it from the pins",
                file.display()
            )
        })?;
        let digest = Sha256::digest(&bytes);
        let got = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
        if got != b64 || size.parse::<usize>().is_ok_and(|s| s != bytes.len()) {
            bail!(
                "{} does not match its package's RECORD (sha256 {got}, recorded {b64}): the \
                 quantize environment was changed; `{REMAKE_COMMAND}` and run again: the next quantize step makes it from the pins",
                file.display()
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pins_name_every_package_once_with_onnxruntime_from_the_runtime() {
        let pins = pinned_packages();
        assert_eq!(pins["onnxruntime"], xtask_base::vocab::PINNED_ORT_VERSION);
        assert_eq!(pins["typing-extensions"], "4.16.0");
        assert_eq!(pins.len(), 10);
        for line in REQUIREMENTS
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            assert!(line.contains("--hash=sha256:"), "{line}");
        }
    }

    #[test]
    fn a_changed_file_is_refused_by_its_record() {
        let dir = tempfile::tempdir().unwrap();
        let site = dir.path();
        std::fs::write(site.join("a.py"), b"print(1)\n").unwrap();
        let digest = Sha256::digest(b"print(1)\n");
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
        let record = site.join("RECORD");
        std::fs::write(&record, format!("a.py,sha256={b64},9\nRECORD,,\n")).unwrap();
        check_record(site, &record).unwrap();
        std::fs::write(site.join("a.py"), b"print(2)\n").unwrap();
        let err = check_record(site, &record).unwrap_err().to_string();
        assert!(
            err.contains("a.py does not match its package's RECORD"),
            "{err}"
        );
        assert!(err.contains(REMAKE_COMMAND), "{err}");
    }
}
