//! `cargo xtask bench cache`: the build cache in one run. A fresh copy of the tiny model
//! builds with an empty cache (cold); the same copy builds again with its outputs removed
//! (warm, same clone); a second copy at another path builds (warm, second clone); a second
//! model whose inputs have the same content in its own folders builds (warm, second model).
//! Prints each wall time as a ratio of the cold one (goal: ≤ 0.1×), the steps each run and
//! restored, and the bytes the cache stores against what it would without sharing.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::super::{Ctx, Outcome};
use super::xtask_in;
use xtask_ctx_build::step_cache::StepCache;
use xtask_ctx_build::step_cache::gc::human_bytes;

#[derive(clap::Args)]
pub struct BenchCache {
    /// Also the full-width model (generated once, ~2 GB; its cold build takes minutes).
    #[arg(long)]
    full_width: bool,
}

/// One timed build: its wall seconds, steps run and restored.
struct Timed {
    seconds: f64,
    ran: usize,
    restored: usize,
}

impl BenchCache {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let mut models = vec![("tiny", "tiny")];
        if self.full_width {
            models.push(("full-width", "fullwidth"));
        }
        for (title, model) in models {
            let cache_dir =
                xtask_base::project::scratch_dir(&ctx.root, "bench/cache/store").join(model);
            if cache_dir.exists() {
                std::fs::remove_dir_all(&cache_dir)?;
            }
            let (a, b) = projects(ctx, model)?;
            let second = format!("{model}-b");
            add_second_model(&b, model, &second)?;
            let build = |root: &Path, m: &str| timed(root, m, &cache_dir);
            let cold = build(&a, model)?;
            std::fs::remove_dir_all(a.join("ctx").join(model))?;
            let same = build(&a, model)?;
            let clone = build(&b, model)?;
            let other = build(&b, &second)?;
            xtask_base::outln!(
                "{title}: cold (empty cache)            {:>7.2} s  {} step(s) ran",
                cold.seconds,
                cold.ran
            );
            for (what, t) in [
                ("warm, same clone (ctx/ removed)", &same),
                ("warm, second clone elsewhere   ", &clone),
                ("warm, second model, same inputs", &other),
            ] {
                xtask_base::outln!(
                    "{title}: {what} {:>7.2} s  {:.3}× cold  {} restored, {} ran",
                    t.seconds,
                    t.seconds / cold.seconds,
                    t.restored,
                    t.ran
                );
            }
            let survey = StepCache::open(&cache_dir)?.survey()?;
            let stored = survey.stored_bytes();
            let each_entry_own = survey.unshared_bytes();
            // Without keys shared across models, the second model's build would have stored
            // its own copy of every entry.
            let per_model = 2 * each_entry_own;
            xtask_base::outln!(
                "{title}: cache: {} entries naming {} file(s), {} stored in {} file(s)",
                survey.entries.len(),
                survey.entries.iter().map(|e| e.blobs.len()).sum::<usize>(),
                human_bytes(stored),
                survey.blobs.len()
            );
            xtask_base::outln!(
                "{title}: bytes stored with sharing {stored} B; without sharing {each_entry_own} B \
                 (each entry its own files, {:.3}×), {per_model} B (and each model its own \
                 entries, {:.3}×)",
                stored as f64 / each_entry_own as f64,
                stored as f64 / per_model as f64
            );
        }
        Ok(Outcome::Success)
    }
}

/// Two copies of the model's project at different paths.
fn projects(ctx: &Ctx, model: &str) -> Result<(PathBuf, PathBuf)> {
    if model == "tiny" {
        return Ok((
            super::tiny_project(&ctx.root, "cache/a")?,
            super::tiny_project(&ctx.root, "cache/b")?,
        ));
    }
    let src = super::full_width_project(&ctx.root)?;
    let copy = |name: &str| -> Result<PathBuf> {
        let p = xtask_base::project::scratch_dir(&ctx.root, "bench/cache").join(name);
        if p.exists() {
            std::fs::remove_dir_all(&p)?;
        }
        for rel in ["recipes", "onnx", "golden"] {
            super::copy_dir(&src.join(rel), &p.join(rel))?;
        }
        super::link_runtime(&ctx.root, &p)?;
        Ok(p)
    };
    Ok((copy("fw-a")?, copy("fw-b")?))
}

/// A second model `second` in `project`: `model`'s recipes under another name, its inputs
/// copied to its own folders (same content, other paths).
fn add_second_model(project: &Path, model: &str, second: &str) -> Result<()> {
    for dir in ["onnx", "golden"] {
        super::copy_dir(
            &project.join(dir).join(model),
            &project.join(dir).join(second),
        )?;
    }
    let recipes = project.join("recipes").join(second);
    super::copy_dir(&project.join("recipes").join(model), &recipes)?;
    for e in std::fs::read_dir(&recipes)? {
        let path = e?.path();
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let text = text
            .replace(
                &format!("name = \"{model}\""),
                &format!("name = \"{second}\""),
            )
            .replace(&format!("onnx/{model}/"), &format!("onnx/{second}/"))
            .replace(&format!("golden/{model}/"), &format!("golden/{second}/"));
        std::fs::write(&path, text)?;
    }
    Ok(())
}

/// `build-ctx --soc 77 --model M --cache DIR` in `root`, timed, its summary read.
fn timed(root: &Path, model: &str, cache: &Path) -> Result<Timed> {
    let cache = cache.display().to_string();
    let args = [
        "build-ctx",
        "--soc",
        "77",
        "--model",
        model,
        "--cache",
        &cache,
    ];
    let t = Instant::now();
    let out = xtask_in(root, &args)?;
    let seconds = t.elapsed().as_secs_f64();
    let summary = out
        .lines()
        .rfind(|l| l.starts_with("build-ctx "))
        .unwrap_or("");
    let (Some(ran), restored) = (
        count(summary, "step(s) ran"),
        count(summary, "restored from cache"),
    ) else {
        bail!("the build printed no summary:\n{out}");
    };
    Ok(Timed {
        seconds,
        ran,
        restored: restored.unwrap_or(0),
    })
}

/// The number before `what` in a summary line (`3 restored from cache`).
fn count(line: &str, what: &str) -> Option<usize> {
    let head = &line[..line.find(what)?];
    head.split(|c: char| !c.is_ascii_digit())
        .rfind(|s| !s.is_empty())?
        .parse()
        .ok()
}
