//! `doctor --device ssh://…`: what the board has for running context binaries.

use anyhow::Result;

use super::{Device, sdk_files};
use crate::vocab::Outcome;

/// Prints the device's arch, SDK, HTP libraries and free disk; a gate failure when it cannot
/// run `qairt` context binaries (connection errors are errors).
pub fn report(url: &str, qairt: &str, soc: crate::soc::Soc) -> Result<Outcome> {
    let device = Device::connect(url, soc)?;
    let i = &device.info;
    crate::outln!("device        {}", i.url);
    crate::outln!(
        "arch          {} (uname -m) -> SDK folder {}",
        i.arch,
        i.arch_dir
            .as_deref()
            .unwrap_or("NONE (not an arch QAIRT ships for)")
    );
    crate::outln!(
        "QAIRT SDK     {}",
        match (&i.sdk_root, i.sdk_is_dir) {
            (None, _) => "MISSING: QNN_SDK_ROOT is not set on the device".to_string(),
            (Some(r), false) => format!("MISSING: QNN_SDK_ROOT={r} is not a folder"),
            (Some(r), true) => format!(
                "{} at {r} (QNN_SDK_ROOT from {}; recipe wants {qairt})",
                i.sdk_version.as_deref().unwrap_or("version unknown"),
                i.sdk_root_from.as_deref().unwrap_or("?")
            ),
        }
    );
    for f in sdk_files(&device.soc) {
        crate::outln!(
            "  {:<48} {}",
            i.file(&f),
            if i.has(&f) { "present" } else { "MISSING" }
        );
    }
    crate::outln!("SDK lib folders searched (HTP stubs in each):");
    for (dir, stubs) in &i.lib_stubs {
        crate::outln!(
            "  lib/{dir:<40} {}{}",
            if stubs.is_empty() {
                "no libQnnHtpV*Stub.so".to_string()
            } else {
                stubs.join(", ")
            },
            if i.arch_dir.as_deref() == Some(dir.as_str()) {
                "   <- used"
            } else {
                ""
            }
        );
    }
    match &i.dsp_library_path {
        Some(v) => crate::outln!(
            "DSP_LIBRARY_PATH is set on the device ({v}): fastrpc uses it instead of ADSP_LIBRARY_PATH (quic/fastrpc apps_std_imp.c); runs set both, the SDK's {} first",
            device.soc.dsp_lib_dir()
        ),
        None => crate::outln!(
            "DSP_LIBRARY_PATH unset on the device; runs set it and ADSP_LIBRARY_PATH (fastrpc prefers DSP_LIBRARY_PATH when set)"
        ),
    }
    crate::outln!(
        "free disk     {:.1} MiB in {}",
        i.free_bytes as f64 / (1 << 20) as f64,
        i.workdir_abs
    );
    let problems = device.problems(qairt);
    if problems.is_empty() {
        crate::outln!("device ready for `--device {}`", i.url);
        Ok(Outcome::Success)
    } else {
        for p in &problems {
            crate::outln!("problem: {p}");
        }
        Ok(Outcome::GateFailed)
    }
}
