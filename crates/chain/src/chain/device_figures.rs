//! The device section of a chain run report (`run --backend htp --device ssh://…`): which
//! board ran the components, the device's own execute times per component, how many calls one
//! chain makes, and their sum labelled as an *estimate* of the resident chain on the device.
//! The run's boundaries, gates and verdict are the report's, judged as for every run
//! (`chain::run`); this section adds timing only.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use xtask_ctx_build::toolchain::sdk::profile::TIMING_SOURCE;
use xtask_runtime::report::latency::ExecuteStats;

/// What the estimate leaves out, said beside it in every report.
pub const ESTIMATE_NOTE: &str = "estimate of the resident chain on the device: the sum over components of calls per chain x the median device execute time; ssh/scp copies, session loads and the host steps (scatter, Euler loop, de-normalisation) are not included";

/// One component's device execute times over the chain.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceComponentTimes {
    pub component: String,
    /// How many times one chain calls it (action_step: once per Euler step).
    pub calls_per_chain: usize,
    /// Every timed inference of every call.
    pub execute: ExecuteStats,
    /// `calls_per_chain × p50`, µs.
    #[serde(deserialize_with = "xtask_recipe::recipe::gate::f64_or_nan")]
    pub per_chain_us: f64,
}

/// The device's figures of a chain run on it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceFigures {
    /// The board and its SDK, as it described itself.
    pub info: DeviceInfo,
    /// Where the times come from (`device::timing_note`).
    pub timing: String,
    /// In chain order.
    pub components: Vec<DeviceComponentTimes>,
    /// Sum of `per_chain_us`: an estimate of one resident chain's device execute time.
    #[serde(deserialize_with = "xtask_recipe::recipe::gate::f64_or_nan")]
    pub chain_estimate_us: f64,
    pub chain_estimate_note: String,
    /// Context binaries copied to the device by this run.
    pub binaries_uploaded: usize,
}

impl DeviceFigures {
    /// The figures of `components` (each with its calls per chain), the estimate summed.
    pub fn new(
        info: &DeviceInfo,
        components: Vec<DeviceComponentTimes>,
        binaries_uploaded: usize,
    ) -> Self {
        DeviceFigures {
            timing: timing_note(info),
            info: info.clone(),
            chain_estimate_us: components.iter().map(|c| c.per_chain_us).sum(),
            chain_estimate_note: ESTIMATE_NOTE.into(),
            components,
            binaries_uploaded,
        }
    }

    /// How `iters` and `warmup` are counted on a board, for the report's header.
    pub fn counts_sentence(iters: usize, warmup: usize) -> String {
        format!(
            "{iters} timed inferences per component call after {warmup} warm-up (one `qnn-net-run` call each); orchestrated from the host, host steps on the host."
        )
    }

    /// The Markdown section: the device, the timing source, the execute-time table and the
    /// estimate.
    pub fn markdown(&self) -> String {
        let mut md = String::new();
        let _ = writeln!(md, "\nDevice: {}\n", self.info.label());
        let _ = writeln!(md, "Timing: {}\n", self.timing);
        let _ = writeln!(md, "## Device execute time ({TIMING_SOURCE} rows)\n");
        md.push_str(&xtask_runtime::report::md_table(
            &[
                "component",
                "calls/chain",
                "min µs",
                "p50 µs",
                "p90 µs",
                "max µs",
                "per chain µs",
            ],
            self.components.iter().map(|c| {
                let e = &c.execute;
                let mut row = vec![c.component.clone(), c.calls_per_chain.to_string()];
                row.extend(
                    [e.min_us, e.p50_us, e.p90_us, e.max_us, c.per_chain_us]
                        .map(|x| format!("{x:.1}")),
                );
                row
            }),
        ));
        let _ = writeln!(
            md,
            "\n**Chain estimate: {:.1} µs** — {}.",
            self.chain_estimate_us, self.chain_estimate_note
        );
        let _ = writeln!(
            md,
            "\n{} context binar(y/ies) copied to the device by this run.",
            self.binaries_uploaded
        );
        md
    }

    /// The terminal lines: the timing source, the execute-time table and the estimate.
    pub fn print(&self) {
        xtask_base::outln!("timing: {}", self.timing);
        xtask_base::outln!(
            "  {:<16} {:>5} {:>10} {:>10} {:>10} {:>12}",
            "component",
            "calls",
            "p50 µs",
            "p90 µs",
            "max µs",
            "per chain µs"
        );
        for c in &self.components {
            xtask_base::outln!(
                "  {:<16} {:>5} {:>10.1} {:>10.1} {:>10.1} {:>12.1}",
                c.component,
                c.calls_per_chain,
                c.execute.p50_us,
                c.execute.p90_us,
                c.execute.max_us,
                c.per_chain_us
            );
        }
        xtask_base::outln!(
            "chain estimate {:.1} µs ({})",
            self.chain_estimate_us,
            self.chain_estimate_note
        );
        xtask_base::outln!(
            "{} context binar(y/ies) copied to the device",
            self.binaries_uploaded
        );
    }
}

/// What the device said about itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// `ssh://user@host:port/workdir`.
    pub url: String,
    /// `uname -m`.
    pub arch: String,
    /// The SDK's tools/libraries folder for that arch (None: not an arch QAIRT ships for).
    pub arch_dir: Option<String>,
    pub sdk_root: Option<String>,
    /// `ssh-env` (the command's environment) or `login-shell`.
    pub sdk_root_from: Option<String>,
    pub sdk_is_dir: bool,
    pub sdk_version: Option<String>,
    /// `bin/<dir>` folders of the SDK.
    pub sdk_bin_dirs: Vec<String>,
    /// Which of the SDK files (paths relative to the SDK root) exist.
    pub present: BTreeSet<String>,
    pub free_bytes: u64,
    pub workdir_abs: String,
    /// Every SDK `lib/<arch>/` folder searched, with the `libQnnHtpV*Stub.so` it holds (only
    /// `aarch64-oe-linux-gcc11.2` holds the V73 stub in the SDK layout that could be checked).
    #[serde(default)]
    pub lib_stubs: Vec<(String, Vec<String>)>,
    /// `DSP_LIBRARY_PATH` as the device's shell has it: when set, fastrpc uses it instead of
    /// `ADSP_LIBRARY_PATH` (quic/fastrpc `apps_std_imp.c`), so runs set both.
    #[serde(default)]
    pub dsp_library_path: Option<String>,
}

/// What the report says about where the times come from.
pub fn timing_note(info: &DeviceInfo) -> String {
    format!(
        "measured on the device via ssh ({}): `qnn-profile-viewer` {TIMING_SOURCE} EXECUTE rows of the device's own `qnn-net-run --profiling_level basic` (the timing source is whatever that SDK's HTP backend is on that device; copies over ssh not included)",
        info.label()
    )
}
