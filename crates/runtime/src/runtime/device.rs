//! Where the QNN libraries of a board come from, and what is present or missing there.
//!
//! No wheel carries QNN for Linux aarch64: the user points the tool at the QAIRT SDK
//! (`QNN_SDK_ROOT` or `QAIRT_SDK_ROOT`, whose `lib/aarch64-ubuntu-gcc9.4/` or
//! `lib/aarch64-oe-linux-gcc11.2/` hold `libQnnHtp.so`, `libQnnHtpV73Stub.so`, `libQnnSystem.so`),
//! or directly at a folder (`QNN_LIB_DIR`), plus the ORT QNN plugin (`QNN_EP_PLUGIN`, else
//! `libonnxruntime_providers_qnn.so` in that folder or beside `libonnxruntime.so`). The DSP side,
//! `libQnnHtpV73Skel.so`, is found by the FastRPC loader through `ADSP_LIBRARY_PATH`.

use std::path::{Path, PathBuf};

use super::platform::{Platform, QNN_PLUGIN_FILE};

/// The environment that decides where QNN is looked for (a snapshot, so tests pass their own).
#[derive(Debug, Clone, Default)]
pub struct QnnSearch {
    /// `QNN_LIB_DIR`: a folder holding `libQnn*.so` (and possibly the plugin).
    pub qnn_lib_dir: Option<PathBuf>,
    /// `QNN_SDK_ROOT` (or `QAIRT_SDK_ROOT`): the QAIRT SDK root.
    pub sdk_root: Option<PathBuf>,
    /// `QNN_EP_PLUGIN`: the ORT QNN plugin library itself.
    pub plugin: Option<PathBuf>,
    /// `ADSP_LIBRARY_PATH`, as set (`;`- or `:`-separated folders).
    pub adsp_library_path: Option<String>,
    /// The folder of the loaded `libonnxruntime.so` (the plugin may sit beside it).
    pub ort_dir: Option<PathBuf>,
    /// The SoC whose DSP libraries are looked for (none: the card's board, `soc::board`).
    pub soc: Option<xtask_base::soc::Soc>,
}

/// One library (or setting) of the QNN stack: where it was found, or everywhere it was looked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub what: String,
    pub found: Option<PathBuf>,
    pub looked: Vec<String>,
}

/// The QNN folder and plugin that were found.
#[derive(Debug, Clone, serde::Serialize)]
pub struct QnnLibs {
    /// Folder holding the `libQnn*.so` backends.
    pub dir: PathBuf,
    /// `libonnxruntime_providers_qnn.so`.
    pub plugin: PathBuf,
}

fn var(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

impl QnnSearch {
    pub fn from_env(ort_dylib: Option<&Path>) -> QnnSearch {
        QnnSearch {
            qnn_lib_dir: var("QNN_LIB_DIR").map(PathBuf::from),
            sdk_root: var("QNN_SDK_ROOT")
                .or_else(|| var("QAIRT_SDK_ROOT"))
                .map(PathBuf::from),
            plugin: var("QNN_EP_PLUGIN").map(PathBuf::from),
            adsp_library_path: var("ADSP_LIBRARY_PATH").map(|v| v.to_string_lossy().into_owned()),
            ort_dir: ort_dylib.and_then(|p| p.parent()).map(Path::to_path_buf),
            // The runtime loads before any model is read: the card's board's libraries.
            soc: None,
        }
    }

    /// Folders that may hold `libQnn*.so`, in search order, each with how it was named.
    pub fn lib_dirs(&self, platform: Platform) -> Vec<(PathBuf, String)> {
        let mut dirs = Vec::new();
        if let Some(d) = &self.qnn_lib_dir {
            dirs.push((d.clone(), "QNN_LIB_DIR".to_string()));
        }
        if let Some(root) = &self.sdk_root {
            for sub in platform.sdk_lib_dirs() {
                dirs.push((
                    root.join("lib").join(sub),
                    format!("QNN_SDK_ROOT/lib/{sub}"),
                ));
            }
        }
        dirs
    }

    fn soc(&self) -> xtask_base::soc::Soc {
        self.soc.unwrap_or_else(xtask_base::soc::board)
    }

    /// Folders that may hold the SoC's DSP-side skel library: `ADSP_LIBRARY_PATH`, then the SDK.
    pub fn skel_dirs(&self) -> Vec<(PathBuf, String)> {
        let mut dirs: Vec<(PathBuf, String)> = self
            .adsp_library_path
            .iter()
            .flat_map(|v| v.split([';', ':']))
            .filter(|s| !s.is_empty())
            .map(|s| (PathBuf::from(s), "ADSP_LIBRARY_PATH".to_string()))
            .collect();
        if let Some(root) = &self.sdk_root {
            let dir = self.soc().dsp_lib_dir();
            dirs.push((root.join(&dir), format!("QNN_SDK_ROOT/{dir}")));
        }
        dirs
    }

    /// The first folder holding `libQnnHtp.so`.
    fn qnn_dir(&self, platform: Platform) -> Option<PathBuf> {
        self.lib_dirs(platform)
            .into_iter()
            .map(|(d, _)| d)
            .find(|d| d.join("libQnnHtp.so").is_file())
    }

    fn plugin_candidates(&self, platform: Platform) -> Vec<(PathBuf, String)> {
        if let Some(p) = &self.plugin {
            return vec![(p.clone(), "QNN_EP_PLUGIN".to_string())];
        }
        let mut c: Vec<(PathBuf, String)> = self
            .lib_dirs(platform)
            .into_iter()
            .map(|(d, how)| (d.join(QNN_PLUGIN_FILE), how))
            .collect();
        if let Some(d) = &self.ort_dir {
            c.push((
                d.join(QNN_PLUGIN_FILE),
                "beside libonnxruntime.so".to_string(),
            ));
        }
        c
    }

    /// The QNN libraries and plugin, or why they are not usable (names where it looked and
    /// what to set): the ORT CPU backend works without them.
    pub fn locate(&self, platform: Platform) -> Result<QnnLibs, String> {
        let dir = self.qnn_dir(platform);
        let plugin = self
            .plugin_candidates(platform)
            .into_iter()
            .map(|(p, _)| p)
            .find(|p| p.is_file());
        match (dir, plugin) {
            (Some(dir), Some(plugin)) => Ok(QnnLibs { dir, plugin }),
            _ => {
                let missing: Vec<String> = self
                    .inventory(platform)
                    .iter()
                    .take(2)
                    .filter(|f| f.found.is_none())
                    .map(|f| format!("{} (looked in: {})", f.what, looked_text(&f.looked)))
                    .collect();
                Err(format!(
                    "QNN is not available on this {} host: missing {}. {}",
                    platform.name(),
                    missing.join("; "),
                    what_to_set(&self.soc())
                ))
            }
        }
    }

    /// Every piece of the on-device QNN stack: the plugin, `libQnnHtp.so`, the v73 stub,
    /// `libQnnSystem.so`, the v73 skel and `ADSP_LIBRARY_PATH`, each found or with where it was
    /// looked for.
    pub fn inventory(&self, platform: Platform) -> Vec<Finding> {
        let find = |what: &str, cands: Vec<(PathBuf, String)>| Finding {
            what: what.to_string(),
            found: cands.iter().map(|(p, _)| p).find(|p| p.is_file()).cloned(),
            looked: cands
                .iter()
                .map(|(p, how)| format!("{} ({how})", p.display()))
                .collect(),
        };
        let in_libs = |file: &str| -> Vec<(PathBuf, String)> {
            self.lib_dirs(platform)
                .into_iter()
                .map(|(d, how)| (d.join(file), how))
                .collect()
        };
        let (skel, stub) = (self.soc().skel_lib(), self.soc().stub_lib());
        vec![
            find(QNN_PLUGIN_FILE, self.plugin_candidates(platform)),
            find("libQnnHtp.so", in_libs("libQnnHtp.so")),
            find(&stub, in_libs(&stub)),
            find("libQnnSystem.so", in_libs("libQnnSystem.so")),
            find(
                &skel,
                self.skel_dirs()
                    .into_iter()
                    .map(|(d, how)| (d.join(&skel), how))
                    .collect(),
            ),
            Finding {
                what: "ADSP_LIBRARY_PATH".into(),
                found: self.adsp_library_path.as_ref().map(PathBuf::from),
                looked: vec!["the environment".to_string()],
            },
        ]
    }
}

/// What a user sets on a board of `soc` to give the tool QNN.
pub fn what_to_set(soc: &xtask_base::soc::Soc) -> String {
    format!(
        "Set QNN_SDK_ROOT to the QAIRT SDK (or QNN_LIB_DIR to a folder with libQnnHtp.so), \
         QNN_EP_PLUGIN to libonnxruntime_providers_qnn.so, and ADSP_LIBRARY_PATH to the folder \
         with {} (QNN_SDK_ROOT/{}); the ORT CPU backend (`--backend ort`) works without them",
        soc.skel_lib(),
        soc.dsp_lib_dir()
    )
}

pub fn looked_text(looked: &[String]) -> String {
    if looked.is_empty() {
        "nowhere: QNN_SDK_ROOT, QNN_LIB_DIR and QNN_EP_PLUGIN are unset".to_string()
    } else {
        looked.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"lib").unwrap();
    }

    #[test]
    fn a_fake_sdk_with_missing_files_is_reported_file_by_file() {
        let t = tempfile::tempdir().unwrap();
        let sdk = t.path().join("qairt/2.47.0.250");
        let lib = sdk.join("lib/aarch64-oe-linux-gcc11.2");
        touch(&lib.join("libQnnHtp.so"));
        touch(&lib.join("libQnnSystem.so"));
        // no stub, no skel, no plugin, ADSP_LIBRARY_PATH unset
        let search = QnnSearch {
            sdk_root: Some(sdk.clone()),
            ort_dir: Some(t.path().join("ort")),
            ..Default::default()
        };
        let inv = search.inventory(Platform::LinuxAarch64);
        let get = |w: &str| inv.iter().find(|f| f.what == w).unwrap().clone();
        assert_eq!(get("libQnnHtp.so").found, Some(lib.join("libQnnHtp.so")));
        assert_eq!(
            get("libQnnSystem.so").found,
            Some(lib.join("libQnnSystem.so"))
        );
        let stub = get("libQnnHtpV73Stub.so");
        assert!(stub.found.is_none());
        assert!(
            stub.looked
                .iter()
                .any(|l| l.contains("aarch64-ubuntu-gcc9.4"))
                && stub
                    .looked
                    .iter()
                    .any(|l| l.contains("aarch64-oe-linux-gcc11.2")),
            "{:?}",
            stub.looked
        );
        let skel = get("libQnnHtpV73Skel.so");
        assert!(skel.found.is_none());
        assert!(skel.looked[0].contains(&xtask_base::soc::board().dsp_lib_dir()));
        assert!(get("ADSP_LIBRARY_PATH").found.is_none());
        let plugin = get(QNN_PLUGIN_FILE);
        assert!(plugin.found.is_none());
        assert!(
            plugin
                .looked
                .iter()
                .any(|l| l.contains("beside libonnxruntime.so"))
        );
        let why = search.locate(Platform::LinuxAarch64).unwrap_err();
        assert!(
            why.contains("libonnxruntime_providers_qnn.so") && why.contains("QNN_EP_PLUGIN"),
            "{why}"
        );

        // the missing pieces arrive: the skel through ADSP_LIBRARY_PATH, the plugin beside ORT
        let dsp = t.path().join("dsp");
        touch(&dsp.join("libQnnHtpV73Skel.so"));
        touch(&lib.join("libQnnHtpV73Stub.so"));
        touch(&t.path().join("ort").join(QNN_PLUGIN_FILE));
        let search = QnnSearch {
            adsp_library_path: Some(format!("/nowhere;{}", dsp.display())),
            ..search
        };
        let inv = search.inventory(Platform::LinuxAarch64);
        assert!(inv.iter().all(|f| f.found.is_some()), "{inv:?}");
        let libs = search.locate(Platform::LinuxAarch64).unwrap();
        assert_eq!(libs.dir, lib);
        assert_eq!(libs.plugin, t.path().join("ort").join(QNN_PLUGIN_FILE));
    }

    /// Each SoC of the table is searched for with its own skel, stub and DSP folder.
    #[test]
    fn each_soc_is_searched_with_its_own_dsp_libraries() {
        for soc in xtask_base::soc::KNOWN_SOCS {
            let search = QnnSearch {
                sdk_root: Some(PathBuf::from("/sdk")),
                soc: Some(*soc),
                ..Default::default()
            };
            let inv = search.inventory(Platform::LinuxAarch64);
            let v = soc.htp_arch;
            let skel = inv
                .iter()
                .find(|f| f.what == format!("libQnnHtpV{v}Skel.so"))
                .unwrap_or_else(|| panic!("{soc}: {inv:?}"));
            assert!(
                skel.looked[0].contains(&format!("/sdk/lib/hexagon-v{v}/unsigned")),
                "{soc}: {:?}",
                skel.looked
            );
            assert!(
                inv.iter()
                    .any(|f| f.what == format!("libQnnHtpV{v}Stub.so"))
            );
            let why = search.locate(Platform::LinuxAarch64).unwrap_err();
            assert!(why.contains(&format!("lib/hexagon-v{v}/unsigned")), "{why}");
        }
    }

    #[test]
    fn nothing_set_names_what_to_set() {
        let why = QnnSearch::default()
            .locate(Platform::LinuxAarch64)
            .unwrap_err();
        assert!(
            why.contains("QNN_SDK_ROOT") && why.contains("--backend ort"),
            "{why}"
        );
        assert!(why.contains("linux-aarch64"), "{why}");
    }

    #[test]
    fn qnn_lib_dir_comes_before_the_sdk_and_qnn_ep_plugin_wins() {
        let t = tempfile::tempdir().unwrap();
        let own = t.path().join("own");
        touch(&own.join("libQnnHtp.so"));
        let plugin = t.path().join("p/libonnxruntime_providers_qnn.so");
        touch(&plugin);
        let search = QnnSearch {
            qnn_lib_dir: Some(own.clone()),
            sdk_root: Some(t.path().join("sdk")),
            plugin: Some(plugin.clone()),
            ..Default::default()
        };
        let libs = search.locate(Platform::LinuxAarch64).unwrap();
        assert_eq!((libs.dir, libs.plugin), (own, plugin));
    }
}
