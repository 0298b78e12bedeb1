use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::*;

#[test]
fn longest_first_starts_the_unknown_then_the_longest_measured() {
    // (seconds last time, ONNX MB)
    let lengths = [
        (Some(10.0), 5.0),
        (Some(300.0), 1.0),
        (None, 2.0),
        (None, 900.0),
        (Some(60.0), 50.0),
    ];
    assert_eq!(longest_first(&lengths), vec![3, 2, 1, 4, 0]);
}

#[test]
fn a_measurement_only_raises_the_estimate() {
    let modelled = estimate(StepKind::Context, 100.0, None);
    assert_eq!(modelled.mb, 700.0);
    assert!(
        modelled.basis.contains("100 MB of ONNX"),
        "{}",
        modelled.basis
    );
    assert_eq!(estimate(StepKind::Context, 100.0, Some(50.0)).mb, 700.0);
    let measured = estimate(StepKind::Context, 100.0, Some(4000.0));
    assert_eq!(measured.mb, 4000.0);
    assert!(measured.basis.contains("measured"), "{}", measured.basis);
}

#[test]
fn memory_sizes_parse_with_units_and_refuse_nonsense() {
    assert_eq!(parse_memory_mb("16G").unwrap(), 16384.0);
    assert_eq!(parse_memory_mb("16GiB").unwrap(), 16384.0);
    assert_eq!(parse_memory_mb("12000M").unwrap(), 12000.0);
    assert_eq!(parse_memory_mb("512").unwrap(), 512.0);
    for bad in ["", "G", "12X", "-3G", "0", "1.2.3G"] {
        assert!(parse_memory_mb(bad).is_err(), "{bad:?} was accepted");
    }
}

#[test]
fn meminfo_is_read_where_there_is_proc() {
    if std::path::Path::new("/proc/meminfo").exists() {
        let mb = available_mb().expect("MemAvailable");
        assert!(mb > 1.0, "{mb}");
    }
}

/// Two 6 GB steps under a 10 GB budget never run at once; the second waits for the first.
#[test]
fn steps_that_do_not_fit_beside_each_other_run_one_after_the_other() {
    let budget = MemoryBudget::new(10_000.0);
    let running = AtomicUsize::new(0);
    let most = AtomicUsize::new(0);
    let waits = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let (_r, _) = budget.reserve(6_000.0, |_| {
                    waits.fetch_add(1, Ordering::SeqCst);
                });
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(50));
                running.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    assert_eq!(most.load(Ordering::SeqCst), 1, "both ran at once");
    assert_eq!(waits.load(Ordering::SeqCst), 1);
}

#[test]
fn steps_that_fit_run_together_and_an_oversized_step_runs_alone() {
    let budget = MemoryBudget::new(10_000.0);
    let (a, ga) = budget.reserve(4_000.0, |_| panic!("no wait expected"));
    let (b, gb) = budget.reserve(4_000.0, |_| panic!("no wait expected"));
    assert_eq!((ga, gb), (Granted::AtOnce, Granted::AtOnce));
    drop((a, b));
    let (big, g) = budget.reserve(30_000.0, |_| panic!("nothing runs: no wait"));
    assert_eq!(g, Granted::Alone);
    drop(big);
}
