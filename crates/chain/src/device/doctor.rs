//! `doctor --device ssh://…`: what the board has for running context binaries.

use anyhow::Result;

use super::{Device, sdk_files};
use xtask_base::vocab::Outcome;

/// Prints the device's arch, SDK, HTP libraries and free disk; a gate failure when it cannot
/// run `qairt` context binaries (connection errors are errors).
pub fn report(url: &str, qairt: &str, soc: xtask_base::soc::Soc) -> Result<Outcome> {
    let device = Device::connect(url, soc)?;
    let i = &device.info;
    xtask_base::outln!("device        {}", i.url);
    xtask_base::outln!(
        "arch          {} (uname -m) -> SDK folder {}",
        i.arch,
        i.arch_dir
            .as_deref()
            .unwrap_or("NONE (not an arch QAIRT ships for)")
    );
    xtask_base::outln!(
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
        xtask_base::outln!(
            "  {:<48} {}",
            i.file(&f),
            if i.has(&f) { "present" } else { "MISSING" }
        );
    }
    xtask_base::outln!("SDK lib folders searched (HTP stubs in each):");
    for (dir, stubs) in &i.lib_stubs {
        xtask_base::outln!(
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
        Some(v) => xtask_base::outln!(
            "DSP_LIBRARY_PATH is set on the device ({v}): fastrpc uses it instead of ADSP_LIBRARY_PATH (quic/fastrpc apps_std_imp.c); runs set both, the SDK's {} first",
            device.soc.dsp_lib_dir()
        ),
        None => xtask_base::outln!(
            "DSP_LIBRARY_PATH unset on the device; runs set it and ADSP_LIBRARY_PATH (fastrpc prefers DSP_LIBRARY_PATH when set)"
        ),
    }
    xtask_base::outln!(
        "free disk     {:.1} MiB in {}",
        i.free_bytes as f64 / (1 << 20) as f64,
        i.workdir_abs
    );
    let problems = device.problems(qairt);
    if problems.is_empty() {
        xtask_base::outln!("device ready for `--device {}`", i.url);
        Ok(Outcome::Success)
    } else {
        for p in &problems {
            xtask_base::outln!("problem: {p}");
        }
        Ok(Outcome::GateFailed)
    }
}
