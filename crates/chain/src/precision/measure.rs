//! The real `Measure`: a configuration's components built at their precision, then the whole
//! chain run once and its final actions compared with the float golden (the trace's actions,
//! from the float64 reference).
//!
//! A component at the precision its recipe already says is the model's own build
//! (`ctx/<model>/`); at another precision it is built as a *variant* of the model,
//! `<model>.<precision>` (`ctx/tiny.w8a16/`, `reports/tiny.w8a16/`), with the recipe's other
//! `[quantize]` settings kept. Builds are `build-ctx`'s own (keys, cache, gates, progress), so
//! a step measured once is fresh for every later configuration and every later search.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use super::search::{Assignment, Measure, Measured};
use crate::chain::run::{ChainRun, run_judged};
use crate::chain::runner::{self, ChainRuns, ComponentRunner, Pass, Tensors};
use crate::chain::sessions::ChainSessions;
use xtask_base::soc::Soc;
use xtask_base::vocab::{BackendKind, Outcome, Precision, ToolchainKind};
use xtask_ctx_build::{BuildRequest, artifacts::artifacts};
use xtask_recipe::recipe::quantize::QuantizeSection;
use xtask_recipe::recipe::{Component, Model};
use xtask_runtime::runtime::{Backend, Runtime};

use super::report::SearchBackend;

/// Builds and runs configurations of one model.
pub struct ChainMeasure<'a> {
    root: &'a Path,
    model: &'a Model,
    soc: Soc,
    backend: SearchBackend,
    rt: &'a Runtime,
    chain: ChainRun<'a>,
    variants: BTreeMap<Precision, Model>,
    /// What building (component, precision) gave: Ok, or why it cannot be used.
    built: BTreeMap<(String, Precision), std::result::Result<(), String>>,
    cache: Option<xtask_ctx_build::step_cache::StepCache>,
}

impl<'a> ChainMeasure<'a> {
    pub fn new(
        root: &'a Path,
        model: &'a Model,
        rt: &'a Runtime,
        backend: SearchBackend,
        precisions: &[Precision],
        cache: Option<xtask_ctx_build::step_cache::StepCache>,
    ) -> Result<Self> {
        let soc = xtask_recipe::htp_target::target_soc(model, None)?;
        let chain = ChainRun::prepare(root, model, rt, 1, 0)?;
        let mut variants = BTreeMap::new();
        for &p in precisions.iter().chain([Precision::Fp16].iter()) {
            variants.insert(p, variant(model, p)?);
        }
        Ok(ChainMeasure {
            root,
            model,
            soc,
            backend,
            rt,
            chain,
            variants,
            built: BTreeMap::new(),
            cache,
        })
    }

    /// The model a component at `p` is built in: the model itself when its recipe says `p`.
    fn model_for(&self, comp: &str, p: Precision) -> &Model {
        match self.component(comp) {
            Some(c) if c.precision() == p => self.model,
            _ => &self.variants[&p],
        }
    }

    fn component(&self, name: &str) -> Option<&Component> {
        self.model.components.iter().find(|c| c.name() == name)
    }

    /// Builds what `a` needs and has not built yet; the seconds it took.
    fn build(&mut self, a: &Assignment) -> Result<f64> {
        let started = Instant::now();
        let mut ran = false;
        for (comp, &p) in a {
            if self.built.contains_key(&(comp.clone(), p)) {
                continue;
            }
            ran = true;
            let m = self.model_for(comp, p);
            let c = m
                .components
                .iter()
                .find(|c| c.name() == comp)
                .with_context(|| format!("no component `{comp}`"))?;
            xtask_base::errln!(
                "precision: building {comp} at {p} (model {})",
                m.file.model.name
            );
            let req = BuildRequest {
                model: m,
                soc: self.soc,
                comps: vec![c],
                jobs: 1,
                max_memory_mb: None,
                force: false,
                dry_run: false,
                json: false,
                require_fresh: false,
                toolchain: ToolchainKind::Embedded,
                allow_sdk_version: false,
                verbose: false,
                cache: self.cache.clone(),
                cache_max_bytes: xtask_ctx_build::step_cache::max_size(None)?,
                print_keys: false,
            };
            let got = match xtask_ctx_build::build_with(self.root, &req, Some(self.rt)) {
                Ok(Outcome::Success) => Ok(()),
                Ok(Outcome::GateFailed) => Err(format!(
                    "{comp} at {p} did not build (a gate failed): see {}",
                    xtask_base::project::rel(
                        self.root,
                        &xtask_base::project::reports_dir(self.root, &m.file.model.name)
                            .join(format!("build-soc{}.md", self.soc.id))
                    )
                )),
                // The float model must build: that is `build-ctx`'s to fix, not a finding.
                Err(e) if !p.is_quantized() => {
                    return Err(e.context(format!("{comp} at fp16 did not build")));
                }
                Err(e) => Err(format!("{comp} at {p} did not build: {e:#}")),
            };
            self.built.insert((comp.clone(), p), got);
        }
        Ok(if ran {
            started.elapsed().as_secs_f64()
        } else {
            0.0
        })
    }

    /// Context binary bytes of every component at its precision.
    fn bytes(&self, a: &Assignment) -> Result<u64> {
        let mut total = 0;
        for (comp, &p) in a {
            let m = self.model_for(comp, p);
            let bin = self
                .root
                .join(artifacts(&m.file.model.name, comp, &self.soc).bin);
            total += std::fs::metadata(&bin)
                .with_context(|| format!("cannot read {}", bin.display()))?
                .len();
        }
        Ok(total)
    }

    /// The file each component runs from, on the search's backend.
    fn session_models(&self, a: &Assignment) -> Result<BTreeMap<String, PathBuf>> {
        let mut out = BTreeMap::new();
        for (comp, &p) in a {
            let m = self.model_for(comp, p);
            let c = m
                .components
                .iter()
                .find(|c| c.name() == comp)
                .with_context(|| format!("no component `{comp}`"))?;
            let path = match (self.backend, p.is_quantized()) {
                (SearchBackend::Htp, _) => {
                    xtask_ctx_build::fresh::fresh_context_wrapper(self.root, self.rt, m, c)?
                }
                (SearchBackend::Qdq, true) => {
                    xtask_ctx_build::fresh::fresh_qdq_model(self.root, self.rt, m, c)?
                }
                (SearchBackend::Qdq, false) => self.root.join(&c.file.component.onnx),
            };
            out.insert(comp.clone(), path);
        }
        Ok(out)
    }

    fn run_chain(&self, a: &Assignment) -> Result<(f64, f64, f64)> {
        let backend = match self.backend {
            SearchBackend::Htp => xtask_runtime::runtime::backend_for(self.model, BackendKind::Htp),
            SearchBackend::Qdq => Backend::OrtCpu,
        };
        let kind = backend.kind();
        let mut sessions =
            ChainSessions::new(self.rt, self.model, backend, self.session_models(a)?, false);
        sessions.load_all()?;
        let started = Instant::now();
        let report = run_judged(&self.chain, &mut Once { sessions, kind })?;
        let seconds = started.elapsed().as_secs_f64();
        let actions = report
            .run
            .boundaries
            .iter()
            .find(|b| b.name == "actions")
            .and_then(|b| b.metrics.clone())
            .context("the chain's final actions were not compared with the float golden")?;
        Ok((actions.max_abs_err, actions.cosine, seconds))
    }
}

impl Measure for ChainMeasure<'_> {
    fn measure(&mut self, a: &Assignment, why: &str) -> Result<Measured> {
        // Components the search leaves alone run at their recipe's precision.
        let mut full = a.clone();
        for c in &self.model.components {
            full.entry(c.name().to_string()).or_insert(c.precision());
        }
        xtask_base::errln!("precision: measuring {why}");
        let build_seconds = self.build(&full)?;
        let failed: Vec<String> = full
            .iter()
            .filter_map(|(c, &p)| self.built[&(c.clone(), p)].clone().err())
            .collect();
        let mut m = Measured {
            assignment: a.clone(),
            why: why.to_string(),
            bytes: 0,
            build_seconds,
            run_seconds: 0.0,
            actions_max_abs: f64::NAN,
            actions_cosine: f64::NAN,
            within_budget: false,
            error: None,
        };
        if !failed.is_empty() {
            m.error = Some(failed.join("; "));
            return Ok(m);
        }
        m.bytes = self.bytes(&full)?;
        match self.run_chain(&full) {
            Ok((max_abs, cosine, seconds)) => {
                (m.actions_max_abs, m.actions_cosine, m.run_seconds) = (max_abs, cosine, seconds);
            }
            Err(e) => m.error = Some(format!("the chain did not run: {e:#}")),
        }
        Ok(m)
    }
}

/// The model with every component at `p`, named `<model>.<p>` (its artifacts and reports apart
/// from the model's own); the recipes' other `[quantize]` settings are kept.
fn variant(model: &Model, p: Precision) -> Result<Model> {
    let mut m = model.clone();
    m.file.model.name = format!("{}.{p}", model.file.model.name);
    for c in &mut m.components {
        c.recipe_text = super::apply::with_precision(&c.recipe_text, p)
            .with_context(|| format!("cannot set {} to {p}", c.recipe_path.display()))?;
        c.file.quantize = match c.file.quantize.take() {
            Some(q) => Some(QuantizeSection { precision: p, ..q }),
            None if p.is_quantized() => Some(QuantizeSection::of(p)),
            None => None,
        };
    }
    Ok(m)
}

/// One untimed chain on resident sessions: the search wants the error, not the latency.
struct Once<'a> {
    sessions: ChainSessions<'a>,
    kind: BackendKind,
}

impl ComponentRunner for Once<'_> {
    fn backend(&self) -> BackendKind {
        self.kind
    }

    fn chain_runs(&self) -> ChainRuns {
        ChainRuns {
            warmup: 0,
            timed: 1,
        }
    }

    fn golden_inputs_pass(&self) -> bool {
        false
    }

    fn call(&mut self, _pass: Pass, name: &str, inputs: &Tensors) -> Result<Tensors> {
        self.sessions.call(name, inputs)
    }

    fn finish(&mut self, _chain_ms: &[f64]) -> runner::Measured {
        runner::Measured {
            mode: "resident".into(),
            htp: None,
            fp32: Vec::new(),
            latency: Vec::new(),
            load_ms: BTreeMap::new(),
            host_fraction: f64::NAN,
            device: None,
        }
    }
}
