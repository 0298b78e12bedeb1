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
