//! `cargo xtask bench real-size`: the whole path at the bundle's real size, measured in one
//! command. It generates the real-size model (or reuses one whose files still hash to what its
//! generation recorded), derives the model at the chosen precisions, then runs, each as a
//! child of this tool measured by `measure`: `build-ctx` of every component, `parity
//! --backend htp`, the chain on the HTP (`run --backend htp --iters 1 --warmup 0`), `package`
//! and `verify`. The summary (`summary`) is written after every stage, so an interrupted run
//! keeps what it measured; a rerun resumes: the build is a no-op where the step cache and the
//! build records hold the binaries, and a stage whose binaries did not change since an earlier
//! run of it is kept, not repeated.

mod measure;
mod model;
mod summary;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::super::{Ctx, Outcome};
use measure::{disk_bytes, minutes, run_measured};
use summary::{StageResult, Summary};

/// The precisions a real-size run can be built at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RealSizePrecision {
    /// The recipes as generated: every component fp16.
    Fp16,
    /// Every component `[quantize] precision = "w8a16"` at the default gates.
    W8a16,
    /// `recipes/realsize-mixed/` as it stands: what `precision --apply` wrote there, or a
    /// mix written by hand (the bench refuses to guess one).
    Mixed,
}

impl RealSizePrecision {
    fn label(self) -> &'static str {
        match self {
            RealSizePrecision::Fp16 => "fp16",
            RealSizePrecision::W8a16 => "w8a16",
            RealSizePrecision::Mixed => "mixed",
        }
    }
}

/// How the chain run holds its sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Sessions {
    /// Every component loaded for the whole run, as the card runs them.
    Resident,
    /// Each component loaded only while it runs (`run --streaming`): memory bounded by the
    /// largest component.
    OneAtATime,
}

#[derive(clap::Args)]
pub struct BenchRealSize {
    /// The precisions to build at: fp16 (the recipes as generated), w8a16 (every component),
    /// or mixed (`recipes/realsize-mixed/` as it stands).
    #[arg(long, value_enum, default_value = "w8a16")]
    precision: RealSizePrecision,
    /// The project folder the real-size model is generated into and built in (~18 GB for the
    /// model, ~10-27 GB more for its builds and bundle). Default: target/bench/realsize.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Keep the packaged bundle (`dist/<model>`), which is removed once verified otherwise.
    #[arg(long)]
    keep: bool,
    /// How the chain run holds its sessions: every component resident (the card's way), or
    /// one at a time (memory bounded by the largest component).
    #[arg(long, value_enum, default_value = "resident")]
    sessions: Sessions,
    /// List the stages with their estimates, run nothing.
    #[arg(long)]
    dry_run: bool,
}

/// One stage: its name and the command it runs (after `--root DIR`).
struct Stage {
    name: &'static str,
    args: Vec<String>,
}

impl BenchRealSize {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let dir = match &self.out {
            Some(d) => std::path::absolute(d)?,
            None => xtask_base::project::scratch_dir(&ctx.root, "bench/realsize"),
        };
        let precision = self.precision.label();
        let earlier = summary::read(&dir, precision);
        let model_name = model::variant_name(self.precision);
        let stages = stages(&model_name, &dir, self.sessions);
        let estimates = model::estimates(&dir, self.precision, earlier.as_ref());
        if self.dry_run {
            return dry_run(&dir, precision, &stages, &estimates);
        }
        let tool = std::env::current_exe()?;
        xtask_base::errln!(
            "bench real-size at {precision} in {}: {} stages, about {} in all (estimate)",
            dir.display(),
            stages.len() + 1,
            minutes(estimates.iter().flatten().sum::<f64>())
        );
        let mut s = Summary {
            schema_version: Summary::SCHEMA,
            model: model_name.clone(),
            precision: precision.into(),
            sessions: match self.sessions {
                Sessions::Resident => "resident".into(),
                Sessions::OneAtATime => "one-at-a-time".into(),
            },
            xtask: xtask_base::identity::xtask_id().into(),
            machine: machine(),
            stages: Vec::new(),
            htp_parity: Vec::new(),
            chain: None,
            binaries: Vec::new(),
            state: "in progress".into(),
        };
        // 1. The model: generated once, reused while its files hash to what was recorded.
        let generated = model::generate_or_reuse(&ctx.root, &dir, estimates[0])?;
        s.stages.push(generated);
        model::write_variant(&dir, self.precision)?;
        summary::write(&dir, &s)?;
        let mut binaries_changed = true;
        for (i, stage) in stages.iter().enumerate() {
            let estimate = estimates[i + 1];
            if let Some(kept) = keep_earlier(stage.name, binaries_changed, earlier.as_ref()) {
                xtask_base::errln!(
                    "bench real-size: {} kept from the earlier run (the binaries did not change since): {}",
                    stage.name,
                    kept.outcome
                );
                s.stages.push(kept);
                continue;
            }
            if stage.name == "package" {
                let out = dir.join("dist").join(&model_name);
                if out.exists() {
                    std::fs::remove_dir_all(&out)
                        .with_context(|| format!("cannot clear {}", out.display()))?;
                }
            }
            xtask_base::errln!(
                "bench real-size: {} ({}): `cargo xtask {}` ...",
                stage.name,
                estimate.map_or("no estimate yet".into(), |e| format!(
                    "about {}",
                    minutes(e)
                )),
                stage.args.join(" ")
            );
            let m = run_measured(&tool, &dir, &stage.args, stage.name, estimate)?;
            let outcome = model::outcome(&dir, &model_name, stage.name, &m)?;
            if stage.name == "build" {
                binaries_changed = model::build_ran_steps(&dir, &model_name);
            }
            let failed = m.exit_code != 0;
            s.stages.push(StageResult {
                name: stage.name.into(),
                command: format!(
                    "cargo xtask --root {} {}",
                    dir.display(),
                    stage.args.join(" ")
                ),
                disk_bytes: disk_bytes(&[
                    &dir.join("ctx").join(&model_name),
                    &dir.join("reports").join(&model_name),
                    &dir.join("dist"),
                ]),
                measured: m,
                estimate_s: estimate,
                kept_from_earlier_run: false,
                outcome,
            });
            model::collect_figures(&dir, &model_name, &mut s);
            if failed {
                s.state = format!("failed at {}", stage.name);
                summary::write(&dir, &s)?;
                return finish(&dir, &s, Outcome::GateFailed);
            }
            summary::write(&dir, &s)?;
        }
        if !self.keep {
            let out = dir.join("dist").join(&model_name);
            if out.exists() {
                std::fs::remove_dir_all(&out)?;
            }
        }
        s.state = "complete".into();
        summary::write(&dir, &s)?;
        finish(&dir, &s, Outcome::Success)
    }
}

/// The stages after the model exists, each one command of this tool.
fn stages(model: &str, dir: &Path, sessions: Sessions) -> Vec<Stage> {
    let s = |a: &[&str]| a.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let mut run = s(&[
        "run",
        "--backend",
        "htp",
        "--iters",
        "1",
        "--warmup",
        "0",
        "--model",
        model,
    ]);
    if sessions == Sessions::OneAtATime {
        run.push("--streaming".into());
    }
    let dist = dir.join("dist").join(model).display().to_string();
    vec![
        Stage {
            name: "build",
            args: s(&["build-ctx", "--soc", "77", "--model", model, "--jobs", "1"]),
        },
        Stage {
            name: "parity-htp",
            args: s(&["parity", "--backend", "htp", "--model", model]),
        },
        Stage {
            name: "chain-htp",
            args: run,
        },
        Stage {
            name: "package",
            args: s(&["package", "--soc", "77", "--model", model, "--out", &dist]),
        },
        Stage {
            name: "verify",
            args: s(&["verify", &dist]),
        },
    ]
}

/// An earlier run's parity or chain stage, when the build ran nothing now (the binaries it
/// measured are the ones there) and it passed then.
fn keep_earlier(
    stage: &str,
    binaries_changed: bool,
    earlier: Option<&Summary>,
) -> Option<StageResult> {
    if binaries_changed || !matches!(stage, "parity-htp" | "chain-htp") {
        return None;
    }
    let e = earlier?.stage(stage)?;
    (e.measured.exit_code == 0).then(|| StageResult {
        kept_from_earlier_run: true,
        ..e.clone()
    })
}

fn dry_run(
    dir: &Path,
    precision: &str,
    stages: &[Stage],
    estimates: &[Option<f64>],
) -> Result<Outcome> {
    xtask_base::outln!(
        "bench real-size at {precision} in {} would run (estimates from {}):",
        dir.display(),
        if summary::read(dir, precision).is_some() {
            "the earlier run's measurements"
        } else {
            "the size model: seconds per GB of ONNX measured on 2 cores, HTP emulated"
        }
    );
    let show = |e: Option<f64>| e.map_or("no estimate".into(), minutes);
    xtask_base::outln!(
        "  1. generate   the real-size model (~18 GB), or reuse it where its files hash to what its generation recorded   {}",
        show(estimates[0])
    );
    for (i, st) in stages.iter().enumerate() {
        xtask_base::outln!(
            "  {}. {:<10} cargo xtask --root {} {}   {}",
            i + 2,
            st.name,
            dir.display(),
            st.args.join(" "),
            show(estimates[i + 1])
        );
    }
    let total: f64 = estimates.iter().flatten().sum();
    xtask_base::outln!(
        "  total about {} against a hosted runner's 6 h; summary: {}",
        minutes(total),
        summary::paths(dir, precision).1.display()
    );
    Ok(Outcome::Success)
}

fn finish(dir: &Path, s: &Summary, outcome: Outcome) -> Result<Outcome> {
    let (json, md) = summary::paths(dir, &s.precision);
    xtask_base::outln!("{}", summary::markdown(s));
    xtask_base::outln!(
        "bench real-size {}: summary {} and {}",
        s.state,
        md.display(),
        json.display()
    );
    if s.state.starts_with("failed") {
        let last = s.stages.last().map_or("", |st| st.outcome.as_str());
        xtask_base::outln!("bench real-size {}: {last}", s.state);
    }
    Ok(outcome)
}

/// `2 cores, 24 GB, x86_64 Linux`: what the figures were measured on.
fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem_gb = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0 / 1024.0);
    format!(
        "{cores} cores, {mem_gb:.0} GB, {} {}",
        std::env::consts::ARCH,
        std::env::consts::OS
    )
}
