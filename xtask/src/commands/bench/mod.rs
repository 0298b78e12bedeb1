//! `cargo xtask bench <build|chain|parity>`: benchmarks that print ratios against a baseline
//! measured in the same run. Scratch projects live under `target/bench/`.

mod build;
mod build_full_width;
mod build_real_size;
mod cache;
mod chain;
mod hash;
mod parity_engine;
mod quantize;
mod real_size;
mod repro;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{Ctx, Outcome};

#[derive(clap::Args)]
pub struct Bench {
    #[command(subcommand)]
    which: Which,
}

#[derive(clap::Subcommand)]
enum Which {
    /// build-ctx: cold build vs no-op rebuild (tiny model and a ~100 MB ONNX).
    #[command(
        after_help = "Examples:\n  cargo xtask bench build\n  cargo xtask bench build --full-width"
    )]
    Build(build::BenchBuild),
    /// The build cache in one run: cold, warm in the same clone, in a second clone elsewhere,
    /// for a second model with the same inputs; bytes stored with and without sharing.
    #[command(after_help = "Examples:\n  cargo xtask bench cache")]
    Cache(cache::BenchCache),
    /// The Rust chain on ORT CPU vs plain Python onnxruntime; host share; chain vs its parts.
    #[command(after_help = "Examples:\n  cargo xtask bench chain")]
    Chain(chain::BenchChain),
    /// Context binaries built in two checkouts and twice in one: how many are byte-identical.
    #[command(after_help = "Examples:\n  cargo xtask bench repro")]
    Repro(repro::BenchRepro),
    /// Full re-hashing (release-grade checks) vs the (size, mtime) memo, extrapolated.
    #[command(after_help = "Examples:\n  cargo xtask bench hash")]
    Hash(hash::BenchHash),
    /// The parity engine (read golden + compare every output) vs numpy: time and peak memory.
    #[command(after_help = "Examples:\n  cargo xtask bench parity")]
    Parity(parity_engine::BenchParity),
    /// One component at fp16 and at w8a16 in the same run: bytes, compile and HTP run
    /// seconds, cosine against the float golden, and their ratios.
    #[command(after_help = "Examples:\n  cargo xtask bench quantize")]
    Quantize(quantize::BenchQuantize),
    /// The whole path at the bundle's real size in one command, measured stage by stage:
    /// generate (or reuse) the model, build every component, HTP parity, the chain on the HTP,
    /// package and verify; a summary (JSON and Markdown) with wall and CPU seconds, peak RSS,
    /// bytes on disk, every cosine and the actions' error against its gate (hours on 2 cores).
    #[command(
        name = "real-size",
        after_help = "Examples:\n  cargo xtask bench real-size --dry-run\n  cargo xtask bench real-size --precision w8a16\n  cargo xtask bench real-size --precision mixed --sessions one-at-a-time --out /data/realsize"
    )]
    RealSize(real_size::BenchRealSize),
    /// (internal) one timed parity-engine pass, printed as JSON for `bench parity`.
    #[command(hide = true)]
    ParityEngineOnce(parity_engine::ParityEngineOnce),
}

impl Bench {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        match self.which {
            Which::Build(b) => b.run(ctx),
            Which::Chain(b) => b.run(ctx),
            Which::Cache(b) => b.run(ctx),
            Which::Parity(b) => b.run(ctx),
            Which::Hash(b) => b.run(ctx),
            Which::Repro(b) => b.run(ctx),
            Which::Quantize(b) => b.run(ctx),
            Which::RealSize(b) => b.run(ctx),
            Which::ParityEngineOnce(b) => b.run(ctx),
        }
    }
}

/// Runs this tool in another project root as a separate process; returns its stdout.
pub fn xtask_in(root: &Path, args: &[&str]) -> Result<String> {
    let done = xtask_base::proc::Proc::new(std::env::current_exe()?)
        .arg("--root")
        .arg(root)
        .args(args)
        .run()
        .with_context(|| format!("in the bench project {}", root.display()))?;
    Ok(done.output)
}

pub fn link_runtime(repo: &Path, project: &Path) -> Result<()> {
    std::fs::create_dir_all(project.join("target"))?;
    let link = xtask_base::project::scratch_dir(project, "qnn-runtime");
    if link.exists() {
        return Ok(());
    }
    std::os::unix::fs::symlink(xtask_base::project::scratch_dir(repo, "qnn-runtime"), link)
        .context("cannot link the runtime into the bench project")
}

pub fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry?;
        let dest = to.join(entry.path().strip_prefix(from)?);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest)?;
        } else {
            std::fs::copy(entry.path(), &dest)?;
        }
    }
    Ok(())
}

/// A Python environment for the baselines: the pinned onnxruntime wheel (hash-checked, the
/// same library the tool loads), numpy and onnx, in `target/bench/pyenv`.
pub fn python_env(root: &Path) -> Result<PathBuf> {
    let env = xtask_base::project::scratch_dir(root, "bench/pyenv");
    let python = env.join("bin/python");
    if python.is_file() && env.join(".complete").is_file() {
        return Ok(python);
    }
    xtask_runtime::runtime::bootstrap::ensure_runtime(root)?;
    let wheel = xtask_base::project::scratch_dir(root, "qnn-runtime/wheels").join(
        xtask_runtime::runtime::platform::Platform::host()
            .ort_wheel()
            .file,
    );
    xtask_runtime::runtime::bootstrap::verify_wheel_hash(
        &wheel,
        xtask_runtime::runtime::platform::Platform::host().ort_wheel(),
    )?;
    xtask_base::errln!(
        "creating the baseline Python environment {} (once) ...",
        xtask_base::project::rel(root, &env)
    );
    run_checked(
        "python3".as_ref(),
        &["-m", "venv", &env.display().to_string()],
    )?;
    run_checked(
        python.as_os_str(),
        &[
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "-q",
            &wheel.display().to_string(),
            // numpy and onnx at the generator's pins, so the baseline is reproducible too
            "-r",
            &root
                .join("xtask/scripts/tinygen/requirements.txt")
                .display()
                .to_string(),
        ],
    )?;
    std::fs::write(env.join(".complete"), b"")?;
    Ok(python)
}

/// Runs a program to completion; a failure shows the command and its output. A program given
/// as a bare name is looked up on PATH; as a path, it is used as is.
pub fn run_checked(program: &std::ffi::OsStr, args: &[&str]) -> Result<()> {
    xtask_base::proc::Proc::new(program).args(args).run()?;
    Ok(())
}

/// The full-width synthetic model (real tensor sizes, one layer per split), generated on
/// demand by the generator into `target/bench/fullwidth`; never committed.
pub fn full_width_project(root: &Path) -> Result<PathBuf> {
    let project = xtask_base::project::scratch_dir(root, "bench/fullwidth");
    if !project.join(".complete").is_file() && project.exists() {
        std::fs::remove_dir_all(&project)?; // a generation that did not finish
    }
    generate_once(
        root,
        &project,
        ".complete",
        "the full-width model (once, ~1 min, ~2 GB)",
        &["--full-width"],
    )?;
    Ok(project)
}

/// Runs the generator once into `project` (`gen_tiny_model.py <flag> <project> <more>`), in
/// the bench's Python environment, marks it done with the file `marker` there, and links the
/// runtime into it. A marker already there means nothing to do.
pub fn generate_once(
    root: &Path,
    project: &Path,
    marker: &str,
    what: &str,
    args: &[&str],
) -> Result<()> {
    let done = project.join(marker);
    if !done.is_file() {
        let python = python_env(root)?;
        std::fs::create_dir_all(project)?;
        xtask_base::errln!(
            "generating {what} into {} ...",
            xtask_base::project::rel(root, project)
        );
        let script = root
            .join("xtask/scripts/gen_tiny_model.py")
            .display()
            .to_string();
        let dir = project.display().to_string();
        let (flag, more) = args.split_first().context("the generator's mode flag")?;
        let mut argv = vec![script.as_str(), flag, dir.as_str()];
        argv.extend_from_slice(more);
        run_checked(python.as_os_str(), &argv)?;
        std::fs::write(&done, b"")?;
    }
    link_runtime(root, project)
}

/// A scratch copy of the tiny model under `target/bench/<name>`.
pub fn tiny_project(root: &Path, name: &str) -> Result<PathBuf> {
    let project = xtask_base::project::scratch_dir(root, "bench").join(name);
    if project.exists() {
        std::fs::remove_dir_all(&project)?;
    }
    for rel in ["recipes/tiny", "onnx/tiny", "golden/tiny"] {
        copy_dir(&root.join(rel), &project.join(rel))?;
    }
    link_runtime(root, &project)?;
    Ok(project)
}

/// Median of a sample.
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied().unwrap_or(f64::NAN)
}
