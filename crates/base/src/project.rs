//! The project layout: where recipes, ONNX, golden tensors, contexts and reports live.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

/// Finds the project root: `--root`, else the nearest folder upwards from the working
/// directory that holds both `Cargo.toml` and `recipes/`.
pub fn find_root(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(root) = explicit {
        if !root.join("recipes").is_dir() {
            bail!("--root {} has no recipes/ folder", root.display());
        }
        return Ok(std::path::absolute(root)?);
    }
    let cwd = std::env::current_dir()?;
    for dir in cwd.ancestors() {
        if dir.join("Cargo.toml").is_file() && dir.join("recipes").is_dir() {
            return Ok(dir.to_path_buf());
        }
    }
    bail!(
        "no project root (a folder with Cargo.toml and recipes/) above {}; pass --root",
        cwd.display()
    )
}

/// The root whose `target/qnn-runtime/` a command outside any project uses (`verify DIR` of a
/// bundle anywhere): the usual root when there is one, else the checkout this binary was built
/// in (`<root>/target/<profile>/xtask`). Elsewhere, `ORT_DYLIB_PATH` + `QNN_LIB_DIR` name the
/// libraries and the root only holds logs.
pub fn find_root_or_tool_home(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Ok(root) = find_root(explicit) {
        return Ok(root);
    }
    if explicit.is_some() {
        return find_root(explicit);
    }
    let exe = std::env::current_exe()?;
    if let Some(dir) = exe
        .ancestors()
        .find(|d| d.join("Cargo.toml").is_file() && d.join("recipes").is_dir())
    {
        return Ok(dir.to_path_buf());
    }
    if std::env::var_os("ORT_DYLIB_PATH").is_some() {
        return Ok(std::env::temp_dir().join("xtask-no-project"));
    }
    bail!(
        "no project root above {} nor around this binary: pass --root <checkout>, or set \
         ORT_DYLIB_PATH and QNN_LIB_DIR to the runtime libraries",
        std::env::current_dir()?.display()
    )
}

pub fn ctx_dir(root: &Path, model: &str) -> PathBuf {
    root.join("ctx").join(model)
}

pub fn reports_dir(root: &Path, model: &str) -> PathBuf {
    root.join("reports").join(model)
}

/// Shows a path relative to the root when it is inside it (reports never hold machine paths).
pub fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Removes the project root from a message, so reports never carry this machine's paths.
pub fn scrub(root: &Path, text: &str) -> String {
    let prefix = format!("{}/", root.display());
    text.replace(&prefix, "")
}

/// The tool's own scratch folder `target/<name>` of the project (runtime, staging copies,
/// logs of native libraries): one place that says where scratch files go, inside the project.
pub fn scratch_dir(root: &Path, name: &str) -> PathBuf {
    root.join("target").join(name)
}

/// Where a command's native output goes (see `ui::stdio`): the model's
/// `reports/<model>/logs/native-<command>.log` when the command names a model that exists,
/// else `target/xtask-native.log` (no folder made for a mistyped model).
pub fn native_log_path(root: &Path, model: Option<&str>, command: &str) -> PathBuf {
    match model.filter(|m| root.join("recipes").join(m).is_dir()) {
        Some(m) => reports_dir(root, m)
            .join("logs")
            .join(format!("native-{command}.log")),
        None => scratch_dir(root, "xtask-native.log"),
    }
}

/// Where the rewritten copies of ONNX graphs live (`[rewrite] apply`), relative to the root.
pub const REWRITE_DIR: &str = "target/rewrite";
