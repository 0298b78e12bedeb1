//! `cargo xtask bench build --full-width` (opt-in, long: about 35 minutes on 2
//! cores): builds the full-width synthetic model's contexts with `--jobs 1`, then again with
//! `--jobs 2` (both `--force`, same project), and prints the wall times, their ratio, and per
//! step: seconds, peak RSS, the RSS the step added, the scheduler's estimate and the
//! compiler's stage times. The two build reports are kept in `target/bench/build-fullwidth/`.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::Value;

use super::{full_width_project, xtask_in};

/// What one build of the bench measured.
struct Measured {
    jobs: usize,
    wall: f64,
    report: Value,
}

pub fn run(repo: &Path) -> Result<()> {
    let project = full_width_project(repo)?;
    let out = crate::project::scratch_dir(repo, "bench/build-fullwidth");
    std::fs::create_dir_all(&out)?;
    let mut runs = Vec::new();
    for jobs in [1usize, 2] {
        crate::errln!("build-ctx --model fullwidth --jobs {jobs} --force ...");
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
        let report: Value = serde_json::from_slice(&std::fs::read(&kept)?)?;
        runs.push(Measured { jobs, wall, report });
    }
    print_steps(&runs[0]);
    crate::outln!();
    for r in &runs {
        crate::outln!(
            "--jobs {}: wall {:.1} s ({:.1} min)",
            r.jobs,
            r.wall,
            r.wall / 60.0
        );
    }
    crate::outln!(
        "--jobs 2 / --jobs 1 wall time: {:.3} (goal <= 0.6 on 2 cores)",
        runs[1].wall / runs[0].wall
    );
    let (longest, name, total) = longest_component(&runs[0].report);
    crate::outln!(
        "best any schedule can do with 2 jobs: max(longest component, total / 2) / total = {:.3} \
         (`{name}` takes {longest:.1} s of the {total:.1} s its steps took with --jobs 1; a \
         component's steps run in order and each HTP compile is single-threaded)",
        longest.max(total / 2.0) / total
    );
    crate::outln!(
        "(peak RSS with --jobs 1 is the step's own; with --jobs 2 it is the process's, steps beside each other included; reports kept in {})",
        crate::project::rel(repo, &out)
    );
    Ok(())
}

/// The component whose steps took longest, its seconds, and the sum over all components.
fn longest_component(report: &Value) -> (f64, String, f64) {
    let empty = Vec::new();
    let per: Vec<(f64, String)> = report["components"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .map(|c| {
            let secs = c["steps"]
                .as_array()
                .unwrap_or(&empty)
                .iter()
                .filter_map(|s| s["seconds"].as_f64())
                .sum();
            (secs, c["component"].as_str().unwrap_or("?").to_string())
        })
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
pub fn print_steps_of(report: &Value) {
    crate::outln!(
        "{:<16} {:<11} {:>9} {:>10} {:>10} {:>10}  compile stages (s)",
        "component",
        "step",
        "seconds",
        "peak MB",
        "added MB",
        "est. MB"
    );
    let empty = Vec::new();
    let comps = report["components"].as_array().unwrap_or(&empty);
    for comp in comps {
        for step in comp["steps"].as_array().unwrap_or(&empty) {
            let d = &step["detail"];
            let num = |v: &Value| v.as_f64().map_or("-".to_string(), |x| format!("{x:.0}"));
            let added = match (d["peak_rss_mb"].as_f64(), d["rss_start_mb"].as_f64()) {
                (Some(p), Some(s)) => format!("{:.0}", p - s),
                _ => "-".into(),
            };
            let stages = d["compile_stages"]
                .as_array()
                .map(|st| {
                    st.iter()
                        .filter_map(|s| Some(format!("{} {:.1}", s[0].as_str()?, s[1].as_f64()?)))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            crate::outln!(
                "{:<16} {:<11} {:>9.1} {:>10} {:>10} {:>10}  {}",
                comp["component"].as_str().unwrap_or("?"),
                step["step"].as_str().unwrap_or("?"),
                step["seconds"].as_f64().unwrap_or(f64::NAN),
                num(&d["peak_rss_mb"]),
                added,
                num(&d["memory_estimate_mb"]),
                stages
            );
        }
    }
}
