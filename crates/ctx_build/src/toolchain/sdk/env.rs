//! The environment the SDK's tools run in, set by the tool from the SDK root exactly as the
//! SDK's own `bin/envsetup.sh` sets it (QAIRT 2.2x–2.4x editions of that script, as mirrored
//! publicly, e.g. `peyer/qcom_qnn` `bin/envsetup.sh`):
//!
//! - `PYTHONPATH=$SDK/benchmarks/QNN/:$SDK/lib/python/:$PYTHONPATH` (`qairt-converter` is a
//!   Python script whose first imports are `qti.aisw.converters…`, from `lib/python`; without
//!   it the converter dies with `ModuleNotFoundError: No module named 'qti'`, even for `--help`);
//! - `PATH=$SDK/bin/x86_64-linux-clang:$PATH`;
//! - `LD_LIBRARY_PATH=$SDK/lib/x86_64-linux-clang:$LD_LIBRARY_PATH` (the converter's compiled
//!   modules and the tools load the SDK's libraries);
//! - `QAIRT_SDK_ROOT=$SDK` and `QNN_SDK_ROOT=$SDK` (the script exports both; the SDK's Python
//!   tools locate the SDK from them).
//!
//! The user only names the root (`QAIRT_SDK_ROOT`); sourcing `envsetup.sh` is not needed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Result, bail};

use super::{HOST, Sdk};

impl Sdk {
    /// `(variable, value)` pairs for every SDK tool run, the current values appended after the
    /// SDK's folders as `envsetup.sh` does (an empty current value adds no separator).
    pub fn env(&self) -> Vec<(String, String)> {
        let root = &self.root;
        let mut python = Vec::new();
        let bench = root.join("benchmarks/QNN");
        if bench.is_dir() {
            python.push(bench);
        }
        python.push(root.join("lib/python"));
        vec![
            ("PYTHONPATH".into(), prepend(&python, "PYTHONPATH")),
            (
                "PATH".into(),
                prepend(&[root.join("bin").join(HOST)], "PATH"),
            ),
            (
                "LD_LIBRARY_PATH".into(),
                prepend(&[root.join("lib").join(HOST)], "LD_LIBRARY_PATH"),
            ),
            ("QAIRT_SDK_ROOT".into(), root.display().to_string()),
            ("QNN_SDK_ROOT".into(), root.display().to_string()),
        ]
    }

    /// The SDK's part of [`Sdk::env`] for reports: the variables with only the SDK's folders
    /// (what the current environment adds after them is the machine's, not the build's).
    pub fn env_record(&self) -> std::collections::BTreeMap<String, String> {
        let mut m = std::collections::BTreeMap::new();
        for (k, v) in self.env() {
            let own: Vec<&str> = v
                .split(':')
                .filter(|p| Path::new(p).starts_with(&self.root))
                .collect();
            m.insert(k, own.join(":"));
        }
        m.insert(
            "source".into(),
            "set by xtask from QAIRT_SDK_ROOT as the SDK's bin/envsetup.sh does".into(),
        );
        m
    }

    /// Runs `qairt-converter --help` in the SDK environment (what `doctor` checks): the
    /// converter's imports of `qti.aisw…` and its libraries load, or the output says why not.
    pub fn check_converter(&self) -> Result<()> {
        let tool = self.tool("qairt-converter")?;
        let mut p = xtask_base::proc::Proc::new(&tool)
            .arg("--help")
            .timeout(Duration::from_secs(120));
        for (k, v) in self.env() {
            p = p.env(k, v);
        }
        let (status, out) = p.run_unchecked()?;
        if !status.success() {
            bail!(
                "`{} --help` failed in the SDK environment ({status}): {}",
                tool.display(),
                xtask_base::proc::tail(&out, 6)
            );
        }
        Ok(())
    }
}

/// `a:b:$VAR` (no trailing `:` when `$VAR` is unset or empty).
fn prepend(dirs: &[PathBuf], var: &str) -> String {
    let mut parts: Vec<OsString> = dirs.iter().map(|d| d.clone().into_os_string()).collect();
    if let Some(cur) = std::env::var_os(var).filter(|v| !v.is_empty()) {
        parts.push(cur);
    }
    parts
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_is_envsetups() {
        let t = tempfile::tempdir().unwrap();
        let sdk = Sdk {
            root: t.path().to_path_buf(),
            version: "2.47.0".into(),
        };
        let env: std::collections::BTreeMap<_, _> = sdk.env().into_iter().collect();
        let root = t.path().display().to_string();
        assert!(
            env["PYTHONPATH"].starts_with(&format!("{root}/lib/python")),
            "{env:?}"
        );
        assert!(
            env["PATH"].starts_with(&format!("{root}/bin/x86_64-linux-clang:")),
            "{env:?}"
        );
        assert!(
            env["LD_LIBRARY_PATH"].starts_with(&format!("{root}/lib/x86_64-linux-clang")),
            "{env:?}"
        );
        assert_eq!(env["QNN_SDK_ROOT"], root);
        assert_eq!(env["QAIRT_SDK_ROOT"], root);
        std::fs::create_dir_all(t.path().join("benchmarks/QNN")).unwrap();
        let rec = sdk.env_record();
        assert_eq!(
            rec["PYTHONPATH"],
            format!("{root}/benchmarks/QNN:{root}/lib/python"),
            "{rec:?}"
        );
        assert_eq!(
            rec["PATH"],
            format!("{root}/bin/x86_64-linux-clang"),
            "{rec:?}"
        );
    }
}
