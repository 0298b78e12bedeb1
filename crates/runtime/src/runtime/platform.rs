//! The platform this binary runs on, and what follows from it for the runtime: which ONNX
//! Runtime wheel (pinned by sha256), whether a QNN wheel exists at all, which folder under
//! `target/qnn-runtime/` holds the unpacked runtime, and which QAIRT SDK lib folder matches.
//!
//! On Linux x86_64 both ORT and QNN 2.47 come from PyPI wheels (the HTP is Qualcomm's
//! emulator). On Linux aarch64 (the IQ-9075 board) PyPI has ORT but no `onnxruntime-qnn`
//! wheel: the QNN libraries and the ORT QNN plugin come from the user's QAIRT SDK.

/// One pinned wheel: the file pip must return and its sha256, committed with the code.
#[derive(Debug)]
pub struct WheelPin {
    pub requirement: &'static str,
    pub file: &'static str,
    pub sha256: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    LinuxX86_64,
    LinuxAarch64,
}

pub const ORT_WHEEL_X86_64: WheelPin = WheelPin {
    requirement: "onnxruntime==1.24.4",
    file: "onnxruntime-1.24.4-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    sha256: "e54ad52e61d2d4618dcff8fa1480ac66b24ee2eab73331322db1049f11ccf330",
};

pub const ORT_WHEEL_AARCH64: WheelPin = WheelPin {
    requirement: "onnxruntime==1.24.4",
    file: "onnxruntime-1.24.4-cp311-cp311-manylinux_2_27_aarch64.manylinux_2_28_aarch64.whl",
    sha256: "046ff290045a387676941a02a8ae5c3ebec6b4f551ae228711968c4a69d8f6b7",
};

/// QNN 2.47 and the ORT QNN plugin: Linux x86_64 only (no Linux aarch64 wheel exists).
pub const QNN_WHEEL_X86_64: WheelPin = WheelPin {
    requirement: "onnxruntime-qnn==2.3.0",
    file: "onnxruntime_qnn-2.3.0-cp311-cp311-manylinux_2_35_x86_64.whl",
    sha256: "087bb672ca0cabd3c7fed07084478fe78658cfa09fae1cb013099d7b2289dc72",
};

/// The ORT QNN plugin EP's file name (in the QNN wheel, or brought by the user on a board).
pub const QNN_PLUGIN_FILE: &str = "libonnxruntime_providers_qnn.so";

impl Platform {
    /// The platform this binary was built for.
    pub fn host() -> Platform {
        if cfg!(target_arch = "aarch64") {
            Platform::LinuxAarch64
        } else {
            Platform::LinuxX86_64
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Platform::LinuxX86_64 => "linux-x86_64",
            Platform::LinuxAarch64 => "linux-aarch64",
        }
    }

    pub fn ort_wheel(self) -> &'static WheelPin {
        match self {
            Platform::LinuxX86_64 => &ORT_WHEEL_X86_64,
            Platform::LinuxAarch64 => &ORT_WHEEL_AARCH64,
        }
    }

    /// The wheel carrying QNN and its plugin; None where the user must bring them.
    pub fn qnn_wheel(self) -> Option<&'static WheelPin> {
        match self {
            Platform::LinuxX86_64 => Some(&QNN_WHEEL_X86_64),
            Platform::LinuxAarch64 => None,
        }
    }

    /// The folder under `target/qnn-runtime/`: one per platform, so they never collide.
    pub fn runtime_dir_name(self) -> &'static str {
        match self {
            Platform::LinuxX86_64 => "ort-1.24.4-qnn-2.3.0",
            Platform::LinuxAarch64 => "ort-1.24.4-linux-aarch64",
        }
    }

    /// The `--platform` tags pip is asked for: with the Python version pinned too, the same
    /// file (and hash) comes back whatever Python the host runs.
    pub fn pip_platforms(self) -> &'static [&'static str] {
        match self {
            Platform::LinuxX86_64 => &["manylinux_2_35_x86_64", "manylinux_2_28_x86_64"],
            Platform::LinuxAarch64 => &["manylinux_2_28_aarch64"],
        }
    }

    /// The QAIRT SDK's library folders for this platform (`lib/<name>/`), in search order.
    pub fn sdk_lib_dirs(self) -> &'static [&'static str] {
        match self {
            Platform::LinuxX86_64 => &["x86_64-linux-clang"],
            Platform::LinuxAarch64 => &["aarch64-ubuntu-gcc9.4", "aarch64-oe-linux-gcc11.2"],
        }
    }

    /// libQnnHtp.so on x86_64 is Qualcomm's emulator; on aarch64 it drives the NPU.
    pub fn htp_is_emulated(self) -> bool {
        self == Platform::LinuxX86_64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_platform_has_its_own_wheel_pin_and_runtime_folder() {
        let x86 = Platform::LinuxX86_64;
        let arm = Platform::LinuxAarch64;
        assert!(x86.ort_wheel().file.contains("x86_64"));
        assert!(arm.ort_wheel().file.contains("aarch64"));
        assert_eq!(
            arm.ort_wheel().sha256,
            "046ff290045a387676941a02a8ae5c3ebec6b4f551ae228711968c4a69d8f6b7"
        );
        assert_eq!(arm.ort_wheel().requirement, x86.ort_wheel().requirement);
        assert_ne!(x86.runtime_dir_name(), arm.runtime_dir_name());
        assert_eq!(x86.runtime_dir_name(), "ort-1.24.4-qnn-2.3.0");
        assert!(x86.qnn_wheel().is_some());
        assert!(
            arm.qnn_wheel().is_none(),
            "no onnxruntime-qnn wheel for linux aarch64"
        );
        assert_eq!(arm.pip_platforms(), ["manylinux_2_28_aarch64"]);
        assert!(x86.pip_platforms().iter().all(|p| p.ends_with("x86_64")));
    }

    #[test]
    fn the_sdk_lib_folder_follows_the_platform() {
        assert_eq!(
            Platform::LinuxAarch64.sdk_lib_dirs(),
            ["aarch64-ubuntu-gcc9.4", "aarch64-oe-linux-gcc11.2"]
        );
        assert_eq!(Platform::LinuxX86_64.sdk_lib_dirs(), ["x86_64-linux-clang"]);
        assert!(Platform::LinuxX86_64.htp_is_emulated());
        assert!(!Platform::LinuxAarch64.htp_is_emulated());
    }

    #[test]
    fn the_host_platform_matches_the_build_target() {
        let host = Platform::host();
        assert_eq!(
            host == Platform::LinuxAarch64,
            cfg!(target_arch = "aarch64")
        );
    }
}
