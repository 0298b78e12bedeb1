//! `cargo xtask bench build --full-width` (opt-in, long: about 35 minutes on 2
//! cores): builds the full-width synthetic model's contexts with `--jobs 1`, then again with
//! `--jobs 2` (both `--force`, same project), and prints the wall times, their ratio, and per
//! step: seconds, peak RSS, the RSS the step added, the scheduler's estimate and the
//! compiler's stage times. The two build reports are kept in `target/bench/build-fullwidth/`.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use xtask_ctx_build::report::BuildReport;

use super::{full_width_project, xtask_in};

/// What one build of the bench measured.
struct Measured {
    jobs: usize,
    wall: f64,
    report: BuildReport,
}

pub fn run(repo: &Path) -> Result<()> {
    let project = full_width_project(repo)?;
    let out = xtask_base::project::scratch_dir(repo, "bench/build-fullwidth");
    std::fs::create_dir_all(&out)?;
    let mut runs = Vec::new();
    for jobs in [1usize, 2] {
        xtask_base::errln!("build-ctx --model fullwidth --jobs {jobs} --force ...");
        let started = Instant::now();
        let jobs_arg = jobs.to_string();
        xtask_in(
            &project,
            &[
                "build-ctx",
                "--model",
                "fullwidth",
                "--soc",
                "77",
                "--force",
                "--jobs",
                &jobs_arg,
            ],
        )?;
        let wall = started.elapsed().as_secs_f64();
        let report_path = project.join("reports/fullwidth/build-soc77.json");
        let kept = out.join(format!("build-jobs{jobs}.json"));
        std::fs::copy(&report_path, &kept)
            .with_context(|| format!("cannot keep {}", report_path.display()))?;
        let report = BuildReport::read(&kept)?;
        runs.push(Measured { jobs, wall, report });
    }
    print_steps(&runs[0]);
    xtask_base::outln!();
    for r in &runs {
        xtask_base::outln!(
            "--jobs {}: wall {:.1} s ({:.1} min)",
            r.jobs,
            r.wall,
            r.wall / 60.0
        );
    }
    xtask_base::outln!(
        "--jobs 2 / --jobs 1 wall time: {:.3} (goal <= 0.6 on 2 cores)",
        runs[1].wall / runs[0].wall
    );
    let (longest, name, total) = longest_component(&runs[0].report);
    xtask_base::outln!(
        "best any schedule can do with 2 jobs: max(longest component, total / 2) / total = {:.3} \
         (`{name}` takes {longest:.1} s of the {total:.1} s its steps took with --jobs 1; a \
         component's steps run in order and each HTP compile is single-threaded)",
        longest.max(total / 2.0) / total
    );
    xtask_base::outln!(
        "(peak RSS with --jobs 1 is the step's own; with --jobs 2 it is the process's, steps beside each other included; reports kept in {})",
        xtask_base::project::rel(repo, &out)
    );
    Ok(())
}

/// The component whose steps took longest, its seconds, and the sum over all components.
fn longest_component(report: &BuildReport) -> (f64, String, f64) {
    let per: Vec<(f64, String)> = report
        .components
        .iter()
        .map(|c| (c.steps.iter().map(|s| s.seconds).sum(), c.component.clone()))
        .collect();
    let total = per.iter().map(|p| p.0).sum();
    let (longest, name) = per
        .into_iter()
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .unwrap_or((0.0, "?".into()));
    (longest, name, total)
}

/// The per-step table of one build: seconds, memory and compile stages.
fn print_steps(run: &Measured) {
    print_steps_of(&run.report);
}

/// The per-step table of a build report (also the real-size bench's).
pub fn print_steps_of(report: &BuildReport) {
    xtask_base::outln!(
        "{:<16} {:<11} {:>9} {:>10} {:>10} {:>10}  compile stages (s)",
        "component",
        "step",
        "seconds",
        "peak MB",
        "added MB",
        "est. MB"
    );
    let num = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.0}"));
    for comp in &report.components {
        for step in &comp.steps {
            let d = &step.detail;
            let stages = d
                .compile_stages
                .iter()
                .flatten()
                .map(|(name, s)| format!("{name} {s:.1}"))
                .collect::<Vec<_>>()
                .join(", ");
            xtask_base::outln!(
                "{:<16} {:<11} {:>9.1} {:>10} {:>10} {:>10}  {}",
                comp.component,
                step.step,
                step.seconds,
                num(d.peak_rss_mb),
                num(d.memory_added_mb()),
                num(d.memory_estimate_mb),
                stages
            );
        }
    }
}
