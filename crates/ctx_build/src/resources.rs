//! Up-front refusal: before the first step of a build starts, every step that will run must
//! fit the memory budget on its own, and everything the build will write must fit the disk.
//! At the real bundle's size (3.6 GB graphs, 1.8 GB binaries) a step that does not fit would
//! otherwise end in an OOM kill or a full disk minutes or hours in, after other steps had
//! already replaced artifacts; refused here, nothing has started and the message says what
//! the build needs and what it found.
//!
//! Memory per step is the scheduler's estimate (`schedule::estimate`: the size model, or what
//! the step took when it last ran, whichever is larger). Disk per step is its outputs as
//! they will be written beside the old ones (staging, then an atomic rename): the DLC ≈ the
//! ONNX bytes (float32), the context binary at most ≈ 1.1 × them plus its wrapper (measured
//! at the real size: vision's binary is 0.52 × its graph, weights in fp16, but
//! action_context's 1.10 ×, its batched MatMul's weights kept in float32); a cache
//! (`--cache`) holds another copy of each on its own filesystem.

use std::path::Path;

use anyhow::{Result, bail};

use crate::fingerprint::ComponentRecord;
use crate::plan::{ComponentPlan, StepKind};
use crate::rerun::steps_to_run;
use crate::schedule;

/// Kept free on a filesystem the build writes to (logs, records, the memo, other programs).
const DISK_MARGIN_BYTES: f64 = 1e9;

/// One step that will run, with what it needs.
#[derive(Debug, Clone, PartialEq)]
pub struct StepNeed {
    pub component: String,
    pub step: &'static str,
    pub memory: schedule::Estimate,
    pub disk_bytes: f64,
}

/// Bytes a step writes, from the bytes of its component's ONNX and external data. A quantized
/// component's QDQ ONNX, DLC and binary hold its weights at their bits: measured at the real
/// size at w8a16, each 0.25 × the float ONNX (an LLM split: 908 MB of QDQ data, a 909 MB DLC,
/// a 919 MB binary for 3.63 GB); sized at bits/32 × 1.1 here (float scales and biases beside
/// the integer weights), the float model's bound where that is larger.
pub fn disk_bytes(kind: StepKind, onnx_bytes: f64, precision: xtask_base::vocab::Precision) -> f64 {
    let share = match precision.is_quantized() {
        true => (f64::from(precision.bits().0) / 32.0 * 1.1).min(1.0),
        false => 1.0,
    };
    match kind {
        StepKind::Quantize => share * onnx_bytes,
        StepKind::Convert => share * onnx_bytes,
        StepKind::CpuParity => 0.0,
        StepKind::Context => 1.1 * share * onnx_bytes + 1e6,
    }
}

/// What every step that will run needs (`rerun::steps_to_run`: a dirty or forced step, and
/// every step after one that runs).
pub fn needs(root: &Path, plans: &[ComponentPlan], force: bool) -> Vec<StepNeed> {
    let mut out = vec![];
    for plan in plans {
        let record = ComponentRecord::load(&root.join(&plan.artifacts.record));
        let onnx_mb = schedule::onnx_mb(root, plan);
        for (i, _) in steps_to_run(plan, force) {
            let step = &plan.steps[i];
            out.push(StepNeed {
                component: plan.component.clone(),
                step: step.kind.label(),
                memory: schedule::estimate(
                    step.kind,
                    onnx_mb,
                    schedule::last_increase_mb(&record, &step.record_name),
                ),
                disk_bytes: disk_bytes(step.kind, onnx_mb * 1e6, plan.precision),
            });
        }
    }
    out
}

/// Refuses the build when a step cannot fit: `memory_mb` is the budget (`--max-memory` or
/// `MemAvailable`), `disks` the folders written to with their free bytes (None: unknown).
pub fn check(
    needs: &[StepNeed],
    memory_mb: f64,
    memory_source: &str,
    disks: &[(&Path, Option<f64>)],
) -> Result<()> {
    let mut problems = vec![];
    for n in needs.iter().filter(|n| n.memory.mb > memory_mb) {
        problems.push(format!(
            "{} {} needs ~{:.1} GB of memory ({}); found {:.1} GB ({memory_source})",
            n.component,
            n.step,
            n.memory.mb / 1024.0,
            n.memory.basis,
            memory_mb / 1024.0
        ));
    }
    let total: f64 = needs.iter().map(|n| n.disk_bytes).sum();
    for (dir, free) in disks {
        let Some(free) = free else { continue };
        if total + DISK_MARGIN_BYTES > *free {
            problems.push(format!(
                "the build writes ~{:.1} GB (DLCs ≈ ONNX bytes, context binaries ≈ 1.1 × them, plus {:.0} GB kept free) on the filesystem of {}; found {:.1} GB free",
                total / 1e9,
                DISK_MARGIN_BYTES / 1e9,
                dir.display(),
                free / 1e9
            ));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    bail!(
        "build-ctx refused before starting (nothing was run or replaced):\n  - {}\n  free memory or disk, build fewer components at once (--only), or set the budget with --max-memory",
        problems.join("\n  - ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need(mb: f64, disk: f64) -> StepNeed {
        StepNeed {
            component: "llm_split0".into(),
            step: "context binary",
            memory: schedule::Estimate {
                mb,
                basis: "300 MB + 4 x 3640 MB of ONNX".into(),
            },
            disk_bytes: disk,
        }
    }

    #[test]
    fn a_step_over_the_memory_budget_is_refused_with_what_it_needs_and_found() {
        let err = check(&[need(14_860.0, 0.0)], 12_000.0, "MemAvailable", &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("llm_split0 context binary needs ~14.5 GB"),
            "{err}"
        );
        assert!(err.contains("found 11.7 GB (MemAvailable)"), "{err}");
        assert!(err.contains("nothing was run or replaced"), "{err}");
    }

    #[test]
    fn the_disk_check_sums_every_step_and_keeps_a_margin() {
        let dir = Path::new("ctx/m");
        // 2 x 1.8 GB to write, 4.2 GB free: fits only without the 1 GB margin
        let needs = [need(100.0, 1.8e9), need(100.0, 1.8e9)];
        let err = check(&needs, 1e6, "x", &[(dir, Some(4.2e9))])
            .unwrap_err()
            .to_string();
        assert!(err.contains("writes ~3.6 GB"), "{err}");
        assert!(err.contains("found 4.2 GB free"), "{err}");
        assert!(check(&needs, 1e6, "x", &[(dir, Some(4.7e9))]).is_ok());
    }

    #[test]
    fn the_context_binary_is_counted_at_the_float32_graphs_size_and_a_tenth() {
        use xtask_base::vocab::Precision::{Fp16, W4a16, W8a16};
        assert_eq!(disk_bytes(StepKind::Convert, 3.6e9, Fp16), 3.6e9);
        assert_eq!(disk_bytes(StepKind::CpuParity, 3.6e9, Fp16), 0.0);
        assert_eq!(
            disk_bytes(StepKind::Context, 3.6e9, Fp16),
            1.1 * 3.6e9 + 1e6
        );
        // A quantized build at its bits (measured: 0.25 × at w8a16), never below that.
        let w8 = disk_bytes(StepKind::Context, 3.6e9, W8a16);
        assert!((0.26 * 3.6e9..0.35 * 3.6e9).contains(&w8), "{w8}");
        assert!(
            disk_bytes(StepKind::Quantize, 3.6e9, W4a16)
                < disk_bytes(StepKind::Quantize, 3.6e9, W8a16)
        );
    }
}
