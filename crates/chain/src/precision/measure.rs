//! The real `Measure`: a configuration's components built at their precision, then the whole
//! chain run once and its final actions compared with the float golden (the trace's actions,
//! from the float64 reference).
//!
//! A component at the precision its recipe already says is the model's own build
//! (`ctx/<model>/`); at another precision it is built as a *variant* of the model,
//! `<model>.<precision>` (`ctx/tiny.w8a16/`, `reports/tiny.w8a16/`), with the recipe's other
//! `[quantize]` settings kept. Builds are `build-ctx`'s own (keys, cache, gates, progress), so
//! a step measured once is fresh for every later configuration and every later search. A
//! quantized component that fails its own gate is handled as `gates` says.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};

use super::gates::{ComponentGate, ComponentGates};
use super::outcome::{Assignment, Measure, Measured};
use super::progress::SearchProgress;
use super::report::SearchBackend;
use crate::chain::run::ChainRun;
use xtask_base::soc::Soc;
use xtask_base::vocab::{Outcome, Precision, ToolchainKind};
use xtask_ctx_build::{BuildRequest, artifacts::artifacts};
use xtask_recipe::recipe::{Component, Model};
use xtask_runtime::runtime::Runtime;

/// What building (component, precision) gave.
#[derive(Debug, Clone)]
enum Built {
    Ok,
    /// Cannot be used: why.
    Failed(String),
    /// Failed its own gate at the CPU stage; `measured_with` set when it was built past it
    /// (`--component-gates report`) and can run.
    Gate(ComponentGate),
}

/// Builds and runs configurations of one model.
pub struct ChainMeasure<'a> {
    root: &'a Path,
    model: &'a Model,
    soc: Soc,
    backend: SearchBackend,
    rt: &'a Runtime,
    chain: ChainRun<'a>,
    variants: BTreeMap<Precision, Model>,
    built: BTreeMap<(String, Precision), Built>,
    /// Components built in their variant with their gate at the measured value.
    past_gate: BTreeSet<(String, Precision)>,
    cache: Option<xtask_ctx_build::step_cache::StepCache>,
    gates: ComponentGates,
    progress: SearchProgress,
    count: usize,
}

impl<'a> ChainMeasure<'a> {
    pub fn new(
        root: &'a Path,
        model: &'a Model,
        rt: &'a Runtime,
        backend: SearchBackend,
        precisions: &[Precision],
        cache: Option<xtask_ctx_build::step_cache::StepCache>,
        gates: ComponentGates,
    ) -> Result<Self> {
        let soc = xtask_recipe::htp_target::target_soc(model, None)?;
        let chain = ChainRun::prepare(root, model, rt, 1, 0)?;
        let mut variants = BTreeMap::new();
        let recipes = model.components.iter().map(|c| c.precision());
        for p in precisions
            .iter()
            .copied()
            .chain([Precision::Fp16])
            .chain(recipes)
        {
            variants.insert(p, super::variants::variant(model, p)?);
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
            past_gate: BTreeSet::new(),
            cache,
            gates,
            progress: SearchProgress::start(),
            count: 0,
        })
    }

    /// The model a component at `p` is built in: the model itself when its recipe says `p`
    /// (unless it was built past its gate, which only its variant holds).
    fn model_for(&self, comp: &str, p: Precision) -> &Model {
        let own = self.model.components.iter().find(|c| c.name() == comp);
        match own {
            Some(c) if c.precision() == p && !self.past_gate.contains(&(comp.to_string(), p)) => {
                self.model
            }
            _ => &self.variants[&p],
        }
    }

    fn component_in<'m>(m: &'m Model, comp: &str) -> Result<&'m Component> {
        m.components
            .iter()
            .find(|c| c.name() == comp)
            .with_context(|| format!("no component `{comp}`"))
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
            let got = self.build_one(comp, p)?;
            self.built.insert((comp.clone(), p), got);
        }
        Ok(if ran {
            started.elapsed().as_secs_f64()
        } else {
            0.0
        })
    }

    fn build_one(&mut self, comp: &str, p: Precision) -> Result<Built> {
        let name = self.model_for(comp, p).file.model.name.clone();
        self.progress
            .step(&format!("building {comp} at {p} (model {name})"));
        match self.build_request(comp, p) {
            Ok(Outcome::Success) => Ok(Built::Ok),
            Ok(Outcome::GateFailed) if p.is_quantized() => match self.gate_failure(comp, p) {
                Some(g) if self.gates == ComponentGates::Report => self.build_past_gate(comp, p, g),
                Some(g) => Ok(Built::Gate(g)),
                None => Ok(Built::Failed(self.build_failure(comp, p))),
            },
            // A gate that failed (at fp16 too: the float chain then cannot be measured, and
            // the search stops there saying why).
            Ok(_) => Ok(Built::Failed(self.build_failure(comp, p))),
            // The float model must build: that is `build-ctx`'s to fix, not a finding.
            Err(e) if !p.is_quantized() => Err(e.context(format!("{comp} at fp16 did not build"))),
            Err(e) => Ok(Built::Failed(format!("{comp} at {p} did not build: {e:#}"))),
        }
    }

    fn build_request(&self, comp: &str, p: Precision) -> Result<Outcome> {
        let m = self.model_for(comp, p);
        let req = BuildRequest {
            model: m,
            soc: self.soc,
            comps: vec![Self::component_in(m, comp)?],
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
        xtask_ctx_build::build_with(self.root, &req, Some(self.rt))
    }

    /// Why (component, precision) did not build: its failed step and error, from the build
    /// report.
    fn build_failure(&self, comp: &str, p: Precision) -> String {
        let m = self.model_for(comp, p);
        let dir = xtask_base::project::reports_dir(self.root, &m.file.model.name);
        let path = dir.join(format!("build-soc{}.json", self.soc.id));
        let failed = xtask_ctx_build::report::BuildReport::read(&path)
            .ok()
            .and_then(|r| {
                let c = r.components.into_iter().find(|c| c.component == comp)?;
                c.steps.into_iter().find(|s| s.error.is_some())
            })
            .map(|s| format!("{} failed: {}", s.step, s.error.unwrap_or_default()))
            .unwrap_or_else(|| "a step failed".into());
        format!(
            "{comp} at {p} did not build ({failed}); see {}",
            xtask_base::project::rel(self.root, &dir.join(format!("build-soc{}.md", self.soc.id)))
        )
    }

    /// The component's own gate as its CPU stage (the QDQ simulation) measured it, when that
    /// is what failed.
    fn gate_failure(&self, comp: &str, p: Precision) -> Option<ComponentGate> {
        let m = self.model_for(comp, p);
        let c = Self::component_in(m, comp).ok()?;
        let qdq = xtask_ctx_build::fresh::fresh_qdq_model(self.root, self.rt, m, c).ok()?;
        let golden = xtask_parity::parity::component::load_golden(self.root, c).ok()?;
        let result =
            xtask_parity::parity::component::run_qdq_simulation(self.rt, m, c, &golden, &qdq)
                .ok()?;
        ComponentGate::of(&result, p)
    }

    /// `--component-gates report`: the component built again in its variant with its gate at
    /// what it measured, so the chain can run it.
    fn build_past_gate(&mut self, comp: &str, p: Precision, mut g: ComponentGate) -> Result<Built> {
        let Some(gate) = g.suggested() else {
            return Ok(Built::Failed(format!(
                "{}; no gate accepts non-finite values, so it was not measured",
                g.summary()
            )));
        };
        self.progress.step(&format!(
            "{}; --component-gates report: building it with min_cosine {} to measure it in the chain",
            g.summary(),
            gate.min_cosine.map_or("(kept)".into(), |c| c.to_string())
        ));
        super::variants::set_gate(
            self.variants.get_mut(&p).context("no variant")?,
            comp,
            p,
            gate.clone(),
        )?;
        self.past_gate.insert((comp.to_string(), p));
        Ok(match self.build_request(comp, p)? {
            Outcome::Success => {
                g.measured_with = Some(gate);
                Built::Gate(g)
            }
            _ => Built::Failed(self.build_failure(comp, p)),
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

    /// Every component at its precision: the search's ones, the recipe's for the rest.
    fn full(&self, a: &Assignment) -> Assignment {
        let mut full = a.clone();
        for c in &self.model.components {
            full.entry(c.name().to_string()).or_insert(c.precision());
        }
        full
    }

    fn measure_on(
        &mut self,
        backend: SearchBackend,
        a: &Assignment,
        why: &str,
        attribute_over: Option<f64>,
    ) -> Result<Measured> {
        self.count += 1;
        let full = self.full(a);
        self.progress
            .step(&format!("[{}] measuring {why}", self.count));
        let build_seconds = self.build(&full)?;
        let mut m = Measured::failed(a, why, String::new());
        m.build_seconds = build_seconds;
        let mut errors = Vec::new();
        for (c, &p) in &full {
            match &self.built[&(c.clone(), p)] {
                Built::Ok => {}
                Built::Failed(e) => errors.push(e.clone()),
                Built::Gate(g) => {
                    if g.measured_with.is_none() {
                        errors.push(format!(
                            "{}; not measured in the chain (`--component-gates report` measures it anyway)",
                            g.summary()
                        ));
                    }
                    m.component_gates.push(g.clone());
                }
            }
        }
        if !errors.is_empty() {
            m.error = Some(errors.join("; "));
            return Ok(m);
        }
        m.error = None;
        m.bytes = self.bytes(&full)?;
        let label = format!("[{}] chain of {why} on {}", self.count, backend.short());
        self.progress.step(&label);
        let bar = self.progress.chain_bar(&label);
        let ran = super::chain_once::run(
            &super::chain_once::Setup {
                root: self.root,
                rt: self.rt,
                model: self.model,
                chain: &self.chain,
                backend,
                models: self.session_models(backend, &full)?,
                attribute_over,
            },
            &|name| {
                self.progress.set(&format!("{label}: {name}"));
                if let Some(b) = &bar {
                    b.working_on(name);
                }
            },
        );
        match ran {
            Ok(r) => {
                (m.actions_max_abs, m.actions_cosine, m.run_seconds) =
                    (r.max_abs, r.cosine, r.seconds);
                m.attribution = r.attribution;
            }
            Err(e) => m.error = Some(format!("the chain did not run: {e:#}")),
        }
        Ok(m)
    }

    /// The file each component runs from, on `backend`.
    fn session_models(
        &self,
        backend: SearchBackend,
        a: &Assignment,
    ) -> Result<BTreeMap<String, std::path::PathBuf>> {
        let mut out = BTreeMap::new();
        for (comp, &p) in a {
            let m = self.model_for(comp, p);
            let c = Self::component_in(m, comp)?;
            let path = match (backend, p.is_quantized()) {
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

    /// What an interruption of the search keeps.
    pub fn keeps(&mut self, what: &str) {
        self.progress.keeps(what);
    }
}

impl Measure for ChainMeasure<'_> {
    fn measure(&mut self, a: &Assignment, why: &str) -> Result<Measured> {
        self.measure_on(self.backend, a, why, None)
    }

    fn measure_float(&mut self, a: &Assignment, why: &str, over: f64) -> Result<Measured> {
        // On the QDQ backend the float chain is ORT's fp32 chain itself: nothing to attribute.
        let attribute = (self.backend == SearchBackend::Htp).then_some(over);
        self.measure_on(self.backend, a, why, attribute)
    }

    fn measure_on_htp(&mut self, a: &Assignment, why: &str) -> Result<Measured> {
        self.measure_on(SearchBackend::Htp, a, why, None)
    }
}
