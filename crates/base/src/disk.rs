//! Free space, asked of the kernel before a long step writes gigabytes: at the bundle's size
//! (1.8 GB binaries, a 10 GB bundle) a full disk half-way through is the failure to prevent.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Free bytes (for an unprivileged writer) of the filesystem holding `path`, or of its nearest
/// existing parent when `path` does not exist yet; None when the kernel cannot say.
pub fn free_bytes(path: &Path) -> Option<f64> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let c = std::ffi::CString::new(existing.as_os_str().as_encoded_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated path and `st` a writable statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail as f64 * st.f_frsize as f64)
}

/// Whether `a` and (the nearest existing parent of) `b` are on one filesystem, where a hard
/// link costs no space.
pub fn same_filesystem(a: &Path, b: &Path) -> bool {
    let dev = |p: &Path| {
        p.ancestors()
            .find(|p| p.exists())
            .and_then(|p| std::fs::metadata(p).ok())
            .map(|m| m.dev())
    };
    matches!((dev(a), dev(b)), (Some(x), Some(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_path_is_measured_at_its_nearest_existing_parent() {
        let dir = std::env::temp_dir();
        let free = free_bytes(&dir.join("not/yet/made")).unwrap();
        assert!(free > 0.0);
        assert!(same_filesystem(&dir, &dir.join("not/yet/made")));
    }
}
