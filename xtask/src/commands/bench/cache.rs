//! `cargo xtask bench cache`: two fresh copies of the tiny model share one build cache; the
//! first builds (and fills the cache), the second restores. Prints how many steps the second
//! restored and its wall time as a ratio of the first (goal: ≤ 0.1×).

use std::time::Instant;

use anyhow::{Result, bail};

use super::super::{Ctx, Outcome};
use super::xtask_in;

#[derive(clap::Args)]
pub struct BenchCache {
    /// Also the full-width model (generated once, ~2 GB; its cold build takes minutes).
    #[arg(long)]
    full_width: bool,
}

impl BenchCache {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let mut models = vec![("tiny", "tiny")];
        if self.full_width {
            models.push(("full-width", "fullwidth"));
        }
        for (title, model) in models {
            let cache = crate::project::scratch_dir(&ctx.root, "bench/cache/store").join(model);
            if cache.exists() {
                std::fs::remove_dir_all(&cache)?;
            }
            let (a, b) = if model == "tiny" {
                (
                    super::tiny_project(&ctx.root, "cache/a")?,
                    super::tiny_project(&ctx.root, "cache/b")?,
                )
            } else {
                let src = super::full_width_project(&ctx.root)?;
                let copy = |name: &str| -> Result<std::path::PathBuf> {
                    let p = crate::project::scratch_dir(&ctx.root, "bench/cache").join(name);
                    if p.exists() {
                        std::fs::remove_dir_all(&p)?;
                    }
                    for rel in ["recipes", "onnx", "golden"] {
                        super::copy_dir(&src.join(rel), &p.join(rel))?;
                    }
                    super::link_runtime(&ctx.root, &p)?;
                    Ok(p)
                };
                (copy("fw-a")?, copy("fw-b")?)
            };
            let cache_arg = cache.display().to_string();
            let args = [
                "build-ctx",
                "--soc",
                "77",
                "--model",
                model,
                "--cache",
                &cache_arg,
            ];
            let t = Instant::now();
            let first = xtask_in(&a, &args)?;
            let first_s = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let second = xtask_in(&b, &args)?;
            let second_s = t.elapsed().as_secs_f64();
            let summary = |out: &str| {
                out.lines()
                    .rfind(|l| l.starts_with("build-ctx "))
                    .unwrap_or("")
                    .to_string()
            };
            let restored = count(&summary(&second), "restored from cache");
            let ran = count(&summary(&second), "step(s) ran");
            if ran.is_none() {
                bail!("the second build printed no summary:\n{second}");
            }
            crate::outln!(
                "{title}: first build (empty cache) {first_s:.2} s: {}",
                summary(&first)
            );
            crate::outln!(
                "{title}: second build (shared cache) {second_s:.2} s: {} step(s) restored, {} compiled",
                restored.unwrap_or(0),
                ran.unwrap_or(0)
            );
            crate::outln!(
                "{title}: second / first wall time = {:.3}× (goal ≤ 0.1×)",
                second_s / first_s
            );
        }
        Ok(Outcome::Success)
    }
}

/// The number before `what` in a summary line (`3 restored from cache`).
fn count(line: &str, what: &str) -> Option<usize> {
    let head = &line[..line.find(what)?];
    head.split(|c: char| !c.is_ascii_digit())
        .rfind(|s| !s.is_empty())?
        .parse()
        .ok()
}
