//! Runner sizing of a CI matrix entry: ESTIMATES of peak memory, disk and duration, and the
//! runner they need.
//!
//! Components measured at the real size (`[estimate.<c>.measured]` in model.toml, from
//! `cargo xtask bench build --real-size`) are sized from those figures: peak RSS × 1.25,
//! the measured DLC and binary bytes per ONNX byte, the measured build and HTP parity seconds
//! (scaled linearly in layers when measured at fewer; HTP parity from the per-layer figure
//! when only a smaller graph's was measured), plus the recipe level's compile when the
//! measured build ran at another O level. Basis of the size model for the others
//! (stated with every estimate in `plan --json`):
//! - Peak memory ≈ 0.5 GB + 3 × W, W = ONNX + external-data bytes. The 0.5 GB is the tiny
//!   model's runtime footprint (41–298 MB peak per command); the factor 3 is an assumption the
//!   real-size steps stay under (their added RSS: 1.1–2.0 × W, vision's O2 compile 3.65 × W).
//! - Disk ≈ 2 GB + 2 × B + 2.1 × W, B = W + golden (+ trace): the tool's release build and the
//!   QNN runtime (1.3 GB + 0.4 GB measured here), the download staged then laid out (2 × B),
//!   the f32 DLC (≈ W) and the context binary (≤ 1.1 × W: measured at the real size, 0.50 ×
//!   for fp16-stored weights, 0.94–1.10 × for action_context's).
//! - Duration ≈ 20 min setup (assumed: tool build, runtime bootstrap, download) + layers ×
//!   (HTP compile + HTP parity emulation per layer) from the recipe's `[estimate.<component>]`
//!   (measured on 2 cores, emulated HTP); convert and CPU parity are not measured and not added.

use serde::Serialize;

mod by_size;
mod measured;

use xtask_recipe::recipe::ComponentEstimate;

const GB: f64 = 1e9;
/// GitHub's standard hosted Linux runner (ubuntu-24.04): 16 GB memory, ~14 GB free disk
/// before the workflow frees preinstalled toolchains (the freed space is margin, not counted).
pub const STANDARD: &str = "ubuntu-24.04";
const STANDARD_MEMORY_GB: f64 = 16.0;
const STANDARD_DISK_GB: f64 = 14.0;
/// A GitHub-hosted job stops after 6 hours.
const MAX_JOB_MINUTES: u32 = 360;
const SETUP_MINUTES: f64 = 20.0;

pub struct Runner {
    pub label: String,
    pub memory_gb: f64,
    pub disk_gb: f64,
}

pub struct Runners {
    pub large: Option<Runner>,
}

pub struct Choice {
    pub label: String,
    pub blocker: Option<String>,
}

pub struct Estimate {
    memory_gb: Option<f64>,
    disk_gb: Option<f64>,
    minutes: Option<f64>,
    /// Whether `minutes` is only a lower bound (a slow step's figure is missing).
    minutes_partial: bool,
    basis: Vec<String>,
}

/// `recipe_level` is the O level the component's recipe compiles at (a measured build at
/// another level is corrected with the per-layer compile estimate).
/// `precision` is the component's (`[quantize]`): a quantized one is sized from its own
/// measured figures when the recipe has them, else from the float ones, said in the basis.
pub fn estimate(
    bytes: Option<(u64, u64)>,
    per_layer: Option<&ComponentEstimate>,
    recipe_level: u8,
    precision: xtask_base::vocab::Precision,
) -> Estimate {
    let mut est = float_estimate(bytes, per_layer, recipe_level, precision);
    if precision.is_quantized() && !est.basis.iter().any(|b| b.starts_with(precision.label())) {
        est.basis.insert(
            0,
            format!(
                "the float build's figures: {precision} not measured at the real size (quantized builds measured 0.05-0.52× the float's compile seconds and 0.11-0.13× its HTP parity: an upper bound)"
            ),
        );
    }
    est
}

fn float_estimate(
    bytes: Option<(u64, u64)>,
    per_layer: Option<&ComponentEstimate>,
    recipe_level: u8,
    precision: xtask_base::vocab::Precision,
) -> Estimate {
    if let Some(e) = per_layer
        && let Some(m) = e.quantized.get(&precision)
    {
        let mut est = measured::from_measured(bytes, e, m, recipe_level);
        est.basis
            .insert(0, format!("{precision} build measured at the real size"));
        return est;
    }
    if let Some(e) = per_layer
        && let Some(m) = &e.measured
    {
        return measured::from_measured(bytes, e, m, recipe_level);
    }
    let mut basis = vec![];
    let (memory_gb, disk_gb) = match bytes {
        Some((w, b)) => {
            let (w, b) = (w as f64 / GB, b as f64 / GB);
            basis.push(format!(
                "peak memory ≈ 0.5 GB (measured runtime footprint) + 3 × {w:.3} GB ONNX+external data (factor assumed, not measured)"
            ));
            basis.push(format!(
                "disk ≈ 2 GB tool+runtime + 2 × {b:.3} GB inputs (staged, laid out) + 2.1 × {w:.3} GB (DLC + context binary)"
            ));
            (Some(0.5 + 3.0 * w), Some(2.0 + 2.0 * b + 2.1 * w))
        }
        None => {
            basis.push("memory and disk unknown: the inputs are not on disk and no --manifest gave their sizes".into());
            (None, None)
        }
    };
    let (minutes, minutes_partial) = match per_layer {
        Some(e) => {
            let mut per = 0.0;
            let mut partial = false;
            for (what, s) in [
                ("HTP compile", e.htp_compile_s_per_layer),
                ("HTP parity (emulated)", e.htp_parity_s_per_layer),
            ] {
                match s {
                    Some(s) => per += s,
                    None => {
                        partial = true;
                        basis.push(format!(
                            "{what} per layer not measured: the duration is a lower bound"
                        ));
                    }
                }
            }
            basis.push(format!(
                "duration ≈ {SETUP_MINUTES} min setup (assumed) + {} layers × {per:.0} s ({})",
                e.layers, e.basis
            ));
            (Some(SETUP_MINUTES + e.layers as f64 * per / 60.0), partial)
        }
        None => match bytes {
            Some((w, _)) => {
                let (minutes, why) = by_size::guess(w as f64 / GB, SETUP_MINUTES);
                basis.push(why);
                (Some(minutes), false)
            }
            None => {
                basis.push(
                    "duration unknown: no [estimate] for this component in model.toml and its size is not known"
                        .into(),
                );
                (None, false)
            }
        },
    };
    Estimate {
        memory_gb,
        disk_gb,
        minutes,
        minutes_partial,
        basis,
    }
}

/// The chain job of the regeneration workflow (`plan --chain`): the measured `[chain_estimate]`
/// of model.toml (from `bench real-size`) when there is one: its peak RSS × 1.25, its disk,
/// 20 min setup + its wall time; else the components' measured HTP parity seconds summed (each
/// component runs once per chain, the action step once per Euler step: an upper bound, as a
/// parity run also loads its binary), memory 2 GB + 2 × the binaries' bytes (resident, an
/// assumption) and disk 2 GB + the inputs + the binaries.
pub fn chain_estimate(
    measured: Option<&xtask_recipe::recipe::ChainEstimate>,
    components: &[(
        Option<&ComponentEstimate>,
        xtask_base::vocab::Precision,
        u32,
        Option<u64>,
    )],
) -> Estimate {
    if let Some(m) = measured {
        return Estimate {
            memory_gb: Some(m.peak_rss_mb / 1024.0 * 1.25),
            disk_gb: Some(m.disk_bytes as f64 / GB),
            minutes: Some(SETUP_MINUTES + m.wall_s / 60.0),
            minutes_partial: false,
            basis: vec![format!(
                "measured at the real size ({}): peak RSS {:.1} GB × 1.25, {:.1} GB on disk, {SETUP_MINUTES} min setup (assumed) + {:.0} min ({})",
                m.precision,
                m.peak_rss_mb / 1024.0,
                m.disk_bytes as f64 / GB,
                m.wall_s / 60.0,
                m.basis
            )],
        };
    }
    let mut seconds = 0.0;
    let mut binaries = 0u64;
    let mut inputs = 0u64;
    let mut partial = false;
    let mut basis = Vec::new();
    for (est, precision, calls, input_bytes) in components {
        let m = est.and_then(|e| e.quantized.get(precision).or(e.measured.as_ref()));
        match m.and_then(|m| m.htp_parity_s.map(|s| (s, m.binary_bytes))) {
            Some((s, b)) => {
                seconds += s * *calls as f64;
                binaries += b;
            }
            None => partial = true,
        }
        inputs += input_bytes.unwrap_or(0);
    }
    if partial {
        basis.push("a component's HTP parity was not measured at the real size: the duration is a lower bound".into());
    }
    basis.push(format!(
        "duration ≈ {SETUP_MINUTES} min setup (assumed) + the components' measured HTP parity seconds, once per call of a chain ({:.0} min: an upper bound of the calls, each parity run also loads its binary)",
        seconds / 60.0
    ));
    basis.push("memory ≈ 2 GB + 2 × the binaries' bytes (every session resident; factor assumed, not measured)".into());
    Estimate {
        memory_gb: Some(2.0 + 2.0 * binaries as f64 / GB),
        disk_gb: Some(2.0 + (inputs + binaries) as f64 / GB),
        minutes: Some(SETUP_MINUTES + seconds / 60.0),
        minutes_partial: partial,
        basis,
    }
}

impl Estimate {
    /// 1.5 × the estimate + 10 min, capped at GitHub's 6 h; 6 h when unknown or a lower bound.
    pub fn timeout_minutes(&self) -> u32 {
        match self.minutes {
            Some(m) if !self.minutes_partial => {
                ((m * 1.5 + 10.0).ceil() as u32).min(MAX_JOB_MINUTES)
            }
            _ => MAX_JOB_MINUTES,
        }
    }

    /// The estimate as `plan --json` shows it (figures rounded up to a tenth).
    pub fn shown(&self) -> ShownEstimate {
        let num = |v: Option<f64>| v.map_or(Figure::Unknown, |v| Figure::Value(up_to_tenth(v)));
        ShownEstimate {
            kind: "estimate",
            peak_memory_gb: num(self.memory_gb),
            disk_gb: num(self.disk_gb),
            minutes: num(self.minutes),
            minutes_is_lower_bound: self.minutes_partial,
            basis: self.basis.clone(),
        }
    }

    fn fits(&self, memory_gb: f64, disk_gb: f64) -> bool {
        self.memory_gb.is_none_or(|m| m <= memory_gb) && self.disk_gb.is_none_or(|d| d <= disk_gb)
    }

    fn needs(&self) -> String {
        let f = |v: Option<f64>| {
            v.map_or("unknown".to_string(), |v| {
                format!("{:.1} GB", up_to_tenth(v))
            })
        };
        format!(
            "~{} memory, ~{} disk (estimates)",
            f(self.memory_gb),
            f(self.disk_gb)
        )
    }
}

/// A figure of `plan --json`: a number, or the word `unknown` (the workflow shows either).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Figure<T = f64> {
    Value(T),
    #[serde(serialize_with = "unknown_word")]
    Unknown,
}

fn unknown_word<S: serde::Serializer>(s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str("unknown")
}

/// An estimate as `plan --json` writes it (read by the regenerate workflow).
#[derive(Debug, Clone, Serialize)]
pub struct ShownEstimate {
    /// Always `estimate`: these are not measurements.
    pub kind: &'static str,
    pub peak_memory_gb: Figure,
    pub disk_gb: Figure,
    pub minutes: Figure,
    pub minutes_is_lower_bound: bool,
    pub basis: Vec<String>,
}

/// Estimates are shown rounded up to a tenth (they size a runner: never under-state), the
/// same in the JSON and in a blocker's sentence.
fn up_to_tenth(v: f64) -> f64 {
    (v * 10.0).ceil() / 10.0
}

impl Runners {
    /// The standard runner when the estimate fits it; else the larger one when configured and
    /// it fits; else a blocker naming what is needed. Unknown sizes take the larger runner
    /// when there is one. A duration over 6 h blocks on any GitHub-hosted runner.
    pub fn choose(&self, est: &Estimate) -> Choice {
        let unknown = est.memory_gb.is_none();
        let mut choice = if est.fits(STANDARD_MEMORY_GB, STANDARD_DISK_GB)
            && !(unknown && self.large.is_some())
        {
            Choice {
                label: STANDARD.into(),
                blocker: None,
            }
        } else {
            match &self.large {
                Some(r) if est.fits(r.memory_gb, r.disk_gb) => Choice {
                    label: r.label.clone(),
                    blocker: None,
                },
                Some(r) => Choice {
                    label: r.label.clone(),
                    blocker: Some(format!(
                        "needs {}, more than the larger runner `{}` has ({} GB memory, {} GB disk)",
                        est.needs(),
                        r.label,
                        r.memory_gb,
                        r.disk_gb
                    )),
                },
                None => Choice {
                    label: STANDARD.into(),
                    blocker: Some(format!(
                        "needs {}, more than the standard runner has ({STANDARD_MEMORY_GB} GB memory, {STANDARD_DISK_GB} GB free disk): set the repository variable LARGE_RUNNER to a larger runner's label",
                        est.needs()
                    )),
                },
            }
        };
        if let Some(m) = est.minutes.filter(|m| *m > MAX_JOB_MINUTES as f64) {
            let msg = format!(
                "an estimated {m:.0} min exceeds the {MAX_JOB_MINUTES}-minute job limit of GitHub-hosted runners: a self-hosted runner (jobs up to 5 days) with the memory and disk above would run it"
            );
            choice.blocker = Some(match choice.blocker {
                Some(b) => format!("{b}; {msg}"),
                None => msg,
            });
        }
        choice
    }
}

#[cfg(test)]
mod tests;
