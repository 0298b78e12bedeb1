//! Scheduling with `--jobs`: which component starts first, and a memory budget no step is
//! started beyond.
//!
//! - **Longest first.** The HTP compile is single-threaded and a component's steps run in
//!   order, so `--jobs 2` is only as fast as its longest component allows. Starting the
//!   longest one first (by the seconds its steps took last time, else by ONNX bytes) keeps a
//!   long compile from starting last beside an idle core. With one job the order cannot
//!   shorten the build, so the components run in pipeline order.
//! - **Memory.** Every step reserves its estimated resident memory before it starts and
//!   waits while the reservations of the steps running beside it would exceed the budget
//!   (`--max-memory`, default: `MemAvailable` of `/proc/meminfo` when the build starts). A
//!   step that alone exceeds the budget runs alone, with a warning, rather than never.

use std::path::Path;
use std::sync::{Condvar, Mutex};

use anyhow::{Result, bail};

use crate::fingerprint::ComponentRecord;
use crate::plan::{ComponentPlan, StepKind};

/// Resident memory a step adds to the process, as `base + factor × ONNX MB`. Measured with
/// `cargo xtask bench build --full-width` (`--jobs 1`, peak RSS of the step minus the RSS when
/// it started): an LLM split (386 MB of ONNX) added 650 MB to convert, 650 MB for CPU parity
/// and 650 MB to compile; the vision graph (245 MB) 500, 560 and 880 MB. The factors below
/// sit above every measured ratio (1.7x to 3.6x), so `--jobs` errs towards waiting.
const fn model_of(kind: StepKind) -> (f64, f64) {
    match kind {
        // ORT's calibrator: the float model, plus every intermediate tensor of the samples
        // (not measured at real width yet: set above the compile's factor).
        StepKind::Quantize => (500.0, 5.0),
        // Reads the ONNX, writes the DLC.
        StepKind::Convert => (200.0, 2.5),
        // ORT CPU session + QNN CPU session over the same weights, plus golden tensors.
        StepKind::CpuParity => (200.0, 3.0),
        // The HTP compiler: graph copies through its optimisation stages.
        StepKind::Context => (300.0, 4.0),
    }
}

/// A step's memory estimate and where it came from (stated when the step has to wait).
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub mb: f64,
    pub basis: String,
}

/// The estimate for one step: the larger of the size model and what the step took the last
/// time it ran (its record's `peak_rss_mb - rss_start_mb`), so a measurement only ever raises
/// the estimate.
pub fn estimate(kind: StepKind, onnx_mb: f64, last_increase_mb: Option<f64>) -> Estimate {
    let (base, factor) = model_of(kind);
    let modelled = base + factor * onnx_mb;
    match last_increase_mb {
        Some(last) if last > modelled => Estimate {
            mb: last,
            basis: format!("{last:.0} MB measured when it last ran"),
        },
        _ => Estimate {
            mb: modelled,
            basis: format!("{base:.0} MB + {factor} x {onnx_mb:.0} MB of ONNX"),
        },
    }
}

/// The memory a step added the last time it ran, from its record entry.
pub fn last_increase_mb(record: &ComponentRecord, record_name: &str) -> Option<f64> {
    record.steps.get(record_name)?.detail.memory_added_mb()
}

/// Bytes of a plan's ONNX and external data (the convert step's inputs), in MB.
pub fn onnx_mb(root: &Path, plan: &ComponentPlan) -> f64 {
    let Some(convert) = plan.steps.first() else {
        return 0.0;
    };
    let bytes: u64 = convert
        .inputs
        .iter()
        .filter_map(|rel| std::fs::metadata(root.join(rel)).ok())
        .map(|m| m.len())
        .sum();
    bytes as f64 / 1e6
}

/// The order components start in: longest first. A component's length is the seconds its
/// dirty steps took last time; components never built are ordered by ONNX bytes, before the
/// measured ones (the unknown may be long).
pub fn longest_first(lengths: &[(Option<f64>, f64)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by(|&a, &b| {
        let (sa, ba) = lengths[a];
        let (sb, bb) = lengths[b];
        match (sa, sb) {
            (None, Some(_)) => std::cmp::Ordering::Less,
            (Some(_), None) => std::cmp::Ordering::Greater,
            (Some(x), Some(y)) => y.total_cmp(&x),
            (None, None) => bb.total_cmp(&ba),
        }
        .then(a.cmp(&b))
    });
    order
}

/// The seconds a plan's steps took the last time they ran (None if any never ran).
pub fn last_seconds(record: &ComponentRecord, plan: &ComponentPlan) -> Option<f64> {
    plan.steps
        .iter()
        .map(|s| record.steps.get(&s.record_name).map(|r| r.seconds))
        .sum()
}

/// `MemAvailable` from `/proc/meminfo`, MB (None where there is no `/proc`).
pub fn available_mb() -> Option<f64> {
    crate::rss::kb_field_mb("/proc/meminfo", "MemAvailable:")
}

/// Parses `--max-memory`: `16G`, `16GiB`, `12000M`, `512MiB` or a number of MB.
pub fn parse_memory_mb(text: &str) -> Result<f64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| anyhow::anyhow!("--max-memory {text:?}: expected e.g. 16G or 12000M"))?;
    let mb = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "m" | "mb" | "mib" => value,
        "g" | "gb" | "gib" => value * 1024.0,
        "t" | "tb" | "tib" => value * 1024.0 * 1024.0,
        other => bail!("--max-memory {text:?}: unknown unit {other:?} (use M or G)"),
    };
    if !(mb.is_finite() && mb > 0.0) {
        bail!("--max-memory {text:?} must be a positive size");
    }
    Ok(mb)
}

/// The memory budget shared by the workers.
pub struct MemoryBudget {
    pub limit_mb: f64,
    /// (MB reserved by running steps, number of running steps).
    state: Mutex<(f64, usize)>,
    freed: Condvar,
}

/// A step's reservation; returned to the budget when dropped.
pub struct Reservation<'a> {
    budget: &'a MemoryBudget,
    mb: f64,
}

/// How a reservation was granted, for the step's progress note.
#[derive(Debug, PartialEq)]
pub enum Granted {
    AtOnce,
    /// Waited this long for other steps to finish.
    AfterWaiting(f64),
    /// Exceeds the whole budget; runs with nothing beside it.
    Alone,
}

impl MemoryBudget {
    pub fn new(limit_mb: f64) -> Self {
        Self {
            limit_mb,
            state: Mutex::new((0.0, 0)),
            freed: Condvar::new(),
        }
    }

    /// Blocks until `mb` fits beside the running steps (or nothing else runs), then reserves
    /// it. `on_wait` is called once when the step has to wait, with the MB in use.
    pub fn reserve(&self, mb: f64, mut on_wait: impl FnMut(f64)) -> (Reservation<'_>, Granted) {
        let started = std::time::Instant::now();
        let mut waited = false;
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while state.1 > 0 && state.0 + mb > self.limit_mb {
            if !waited {
                on_wait(state.0);
                waited = true;
            }
            state = self.freed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        let granted = if mb > self.limit_mb {
            Granted::Alone
        } else if waited {
            Granted::AfterWaiting(started.elapsed().as_secs_f64())
        } else {
            Granted::AtOnce
        };
        state.0 += mb;
        state.1 += 1;
        (Reservation { budget: self, mb }, granted)
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut state = self.budget.state.lock().unwrap_or_else(|e| e.into_inner());
        state.0 -= self.mb;
        state.1 -= 1;
        self.budget.freed.notify_all();
    }
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;
