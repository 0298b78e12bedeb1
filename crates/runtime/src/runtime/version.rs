//! Versions reported by the libraries themselves (never inferred from file names): reports
//! carry them, and fingerprints include them.

use std::ffi::{CStr, c_char};
use std::path::Path;

use anyhow::{Context, Result};

#[repr(C)]
struct OrtApiBase {
    get_api: unsafe extern "C" fn(u32) -> *const std::ffi::c_void,
    get_version_string: unsafe extern "C" fn() -> *const c_char,
}

/// Asks `OrtGetApiBase()->GetVersionString()` of the library file.
pub fn ort_library_version(lib: &Path) -> Result<String> {
    // SAFETY: loading ONNX Runtime runs no user-visible initialisers; the symbol has the
    // documented C signature `const OrtApiBase* OrtGetApiBase(void)`.
    unsafe {
        let lib = libloading::Library::new(lib)
            .with_context(|| format!("cannot load ONNX Runtime library {}", lib.display()))?;
        let get: libloading::Symbol<unsafe extern "C" fn() -> *const OrtApiBase> = lib
            .get(b"OrtGetApiBase\0")
            .context("library has no OrtGetApiBase")?;
        let base = get();
        let version = CStr::from_ptr(((*base).get_version_string)());
        let version = version.to_string_lossy().into_owned();
        std::mem::forget(lib); // keep it loaded: `ort` uses the same handle
        Ok(version)
    }
}

/// Finds the QNN build version (`v2.47.0.…`) the QNN EP logs when it loads a backend.
pub fn qnn_build_version_from_log(log: &[String]) -> Option<String> {
    log.iter().find_map(|line| {
        let lower = line.to_ascii_lowercase();
        if !lower.contains("build") || !lower.contains("version") {
            return None;
        }
        line.split(|c: char| c.is_whitespace() || c == ',' || c == ':')
            .find(|w| {
                w.starts_with('v')
                    && w.len() > 5
                    && w[1..].starts_with(|c: char| c.is_ascii_digit())
            })
            .map(str::to_string)
    })
}

/// `v2.47.0.260601114230` → (2, 47, 0).
pub fn parse_qnn_version(v: &str) -> Option<(u32, u32, u32)> {
    let mut parts = v
        .trim()
        .trim_start_matches('v')
        .split('.')
        .map(|p| p.parse::<u32>().ok());
    Some((parts.next()??, parts.next()??, parts.next()??))
}

/// Checked before a context binary is loaded: a binary built by a newer QNN than the runtime's
/// is refused (the "error 5000" class of load failures on devices), naming both versions and
/// the fix; an older one loads, with a note.
pub fn check_context_version(
    binary: &str,
    built_with: Option<&str>,
    runtime: &str,
    rebuild: &str,
) -> anyhow::Result<Option<String>> {
    let Some(built_with) = built_with else {
        return Ok(Some(format!(
            "{binary} records no QNN version; it is loaded with QNN {runtime} unchecked"
        )));
    };
    let (Some(b), Some(r)) = (parse_qnn_version(built_with), parse_qnn_version(runtime)) else {
        anyhow::bail!(
            "cannot compare QNN versions {built_with:?} ({binary}) and {runtime:?} (runtime)"
        );
    };
    if b > r {
        anyhow::bail!(
            "{binary} was built with QNN {built_with}, but this runtime is QNN {runtime}: an older QNN \
             runtime cannot load a newer context binary. Use a runtime of QNN {}.{}.{} or later \
             (QNN_LIB_DIR and ORT_DYLIB_PATH), or rebuild it with this one: `{rebuild} --force`",
            b.0,
            b.1,
            b.2
        );
    }
    Ok((b < r).then(|| {
        format!("{binary} was built with QNN {built_with} and is loaded by the newer QNN {runtime}")
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_binary_is_refused_naming_both_versions() {
        let err = check_context_version(
            "x.bin",
            Some("v2.48.40.1"),
            "v2.47.0.260601114230",
            "cargo xtask build-ctx",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("v2.48.40.1") && err.contains("v2.47.0.260601114230"),
            "{err}"
        );
        assert!(
            check_context_version("x.bin", Some("v2.46.0.1"), "v2.47.0.2", "b")
                .unwrap()
                .unwrap()
                .contains("newer QNN")
        );
        assert!(
            check_context_version("x.bin", Some("v2.47.0.1"), "v2.47.0.2", "b")
                .unwrap()
                .is_none()
        );
    }
}
