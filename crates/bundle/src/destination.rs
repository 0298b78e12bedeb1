//! Where `package` may write and when: the bundle folder is resolved first (links followed,
//! `..` applied) and refused when it overlaps what the project reads or builds from, so
//! `--out dist/a/../../onnx` can neither replace nor sit inside the inputs; and a package never
//! runs beside a build of the same model (it would read artifacts being replaced).

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The project folders a bundle may never be, contain, or be inside of.
const PROJECT_INPUTS: [&str; 8] = [
    "recipes",
    "onnx",
    "golden",
    "ctx",
    "reports",
    "target",
    "xtask",
    "test-doubles",
];

/// The bundle folder `out` as it really is, refused (nothing created) when it overlaps the
/// project root itself, one of its input folders or the data root, or is not a folder.
pub fn check_out(root: &Path, out: &Path) -> Result<PathBuf> {
    use xtask_recipe::recipe::paths::{data_root, resolve};
    let real = resolve(out);
    let shown = xtask_base::project::rel(root, out);
    let root_real = resolve(root);
    let mut protected: Vec<(String, PathBuf)> = PROJECT_INPUTS
        .iter()
        .map(|d| (format!("{d}/"), resolve(&root.join(d))))
        .collect();
    if let Some(d) = data_root() {
        protected.push(("XTASK_DATA_ROOT".into(), resolve(&d)));
    }
    if root_real.starts_with(&real) {
        bail!(
            "--out {shown} is the project root or holds it: choose a new folder such as dist/<model>"
        );
    }
    if let Some((name, _)) = protected
        .iter()
        .find(|(_, p)| real.starts_with(p) || p.starts_with(&real))
    {
        bail!(
            "--out {shown} resolves into the project's {name}, which the tool reads and builds from: choose a new folder such as dist/<model>"
        );
    }
    match std::fs::metadata(&real) {
        Ok(m) if !m.is_dir() => bail!("--out {shown} exists and is not a folder"),
        Ok(_) if std::fs::read_dir(&real)?.next().is_some() => bail!(
            "{shown} exists and is not empty: remove it or choose another --out (a bundle is never written over)"
        ),
        _ => Ok(real),
    }
}

/// Holds the model's build lock for the whole package, or refuses at once when a
/// `build-ctx` of the model holds it (its artifacts are being replaced).
pub fn no_running_build(root: &Path, model: &str) -> Result<Option<File>> {
    let dir = xtask_base::project::ctx_dir(root, model);
    if !dir.is_dir() {
        return Ok(None); // nothing built: the checks that follow say so
    }
    let lock = dir.join(".build.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock)
        .with_context(|| format!("cannot open the lock {}", lock.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => bail!(
            "a build-ctx of model `{model}` is running ({} is held): wait for it to finish, then package",
            xtask_base::project::rel(root, &lock)
        ),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("cannot lock {}", lock.display()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_overlapping_the_inputs_are_refused_before_anything_is_created() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::create_dir_all(r.join("onnx/m")).unwrap();
        std::fs::write(r.join("onnx/m/a.onnx"), b"x").unwrap();
        for bad in [
            "dist/a/../../onnx",
            "onnx/new",
            ".",
            "..",
            "ctx",
            "recipes/x/../y",
        ] {
            let err = check_out(r, &r.join(bad)).unwrap_err().to_string();
            assert!(err.contains("--out"), "{bad}: {err}");
        }
        assert!(!r.join("dist").exists());
        assert_eq!(
            check_out(r, &r.join("dist/m")).unwrap(),
            resolve_for_test(&r.join("dist/m"))
        );
        std::fs::write(r.join("file"), b"x").unwrap();
        assert!(
            check_out(r, &r.join("file"))
                .unwrap_err()
                .to_string()
                .contains("not a folder")
        );
    }

    fn resolve_for_test(p: &Path) -> PathBuf {
        xtask_recipe::recipe::paths::resolve(p)
    }
}
