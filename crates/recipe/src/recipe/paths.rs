//! Every path a recipe names (ONNX, golden, trace) and every external-data file an ONNX graph
//! names must resolve, symlinks followed, inside the project root: a recipe is data, and data
//! must not make the tool read (or write next to) files elsewhere on the machine.
//!
//! Real bundles are tens of GB and may live on another disk. The one opt-in is the
//! `XTASK_DATA_ROOT` environment variable: a second folder where resolved paths may land
//! (typically through a symlink such as `onnx/<model> -> $XTASK_DATA_ROOT/onnx`). It is
//! recorded in every report (`versions.data_root`).

use std::path::{Component as PathPart, Path, PathBuf};

use anyhow::{Result, bail};

/// The environment variable that names the one folder outside the project data may live in.
pub const DATA_ROOT_VAR: &str = "XTASK_DATA_ROOT";

/// The opted-in data root, as given (None when unset or empty).
pub fn data_root() -> Option<PathBuf> {
    std::env::var_os(DATA_ROOT_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Where `path` really is, part by part as the kernel would walk it: each existing prefix
/// canonicalized (symlinks followed), `..` taken from the real parent, `.` dropped; parts that
/// do not exist yet are appended as written.
pub fn resolve(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            PathPart::CurDir => {}
            PathPart::ParentDir => {
                out.pop();
            }
            PathPart::Normal(name) => {
                out.push(name);
                if let Ok(real) = std::fs::canonicalize(&out) {
                    out = real;
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Refuses `rel` (relative to `root`, as a recipe or graph names it) unless it resolves inside
/// the project root or the opted-in data root. `what` says where it was named (file:line key).
pub fn require_inside(root: &Path, rel: &Path, what: &str) -> Result<()> {
    let resolved = resolve(&root.join(rel));
    let inside_root = resolved.starts_with(resolve(root));
    let inside_data = data_root().is_some_and(|d| resolved.starts_with(resolve(&d)));
    if inside_root || inside_data {
        return Ok(());
    }
    let opt_in = match data_root() {
        Some(d) => format!("nor inside {DATA_ROOT_VAR}={}", d.display()),
        None => format!(
            "large data may live elsewhere only through {DATA_ROOT_VAR} (see README, \"Where data may live\")"
        ),
    };
    bail!(
        "{what} = {:?} resolves to {}, outside the project root; {opt_in}",
        rel.display().to_string(),
        resolved.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_leave_the_project_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::create_dir_all(r.join("onnx/m")).unwrap();
        std::fs::write(r.join("onnx/m/a.onnx"), b"x").unwrap();
        require_inside(r, Path::new("onnx/m/a.onnx"), "c.toml:3: component.onnx").unwrap();
        require_inside(r, Path::new("onnx/m/not-yet.onnx"), "k").unwrap();
        for bad in [
            "/etc/passwd",
            "../../../etc/passwd",
            "onnx/m/../../../x",
            "dist/a/../../../x",
        ] {
            let err = require_inside(r, Path::new(bad), "c.toml:3: component.onnx")
                .unwrap_err()
                .to_string();
            assert!(err.contains("outside the project root"), "{bad}: {err}");
            assert!(err.starts_with("c.toml:3: component.onnx"), "{err}");
        }
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), r.join("onnx/link")).unwrap();
        assert!(require_inside(r, Path::new("onnx/link/w.bin"), "k").is_err());
    }
}
