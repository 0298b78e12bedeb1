//! One untimed chain of a configuration on resident sessions (the search wants the error, not
//! the latency), judged by the one chain runner (`run::run_judged`), and, when asked and the
//! actions are over a bound, `run --attribute`'s what-ifs on the same sessions: each
//! component in turn on ORT's CPU EP in fp32, ranked by how much of the error it removes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use super::report::SearchBackend;
use crate::chain::host;
use crate::chain::run::{ChainRun, run_judged};
use crate::chain::runner::{self, ChainRuns, ComponentRunner, Judged, Pass, Tensors};
use crate::chain::sessions::ChainSessions;
use crate::chain::whatif::{Attribution, Memo};
use xtask_base::vocab::BackendKind;
use xtask_recipe::recipe::Model;
use xtask_runtime::runtime::{Backend, Runtime};

/// What one chain needs.
pub struct Setup<'s, 'a> {
    pub root: &'s Path,
    pub rt: &'a Runtime,
    pub model: &'a Model,
    pub chain: &'s ChainRun<'a>,
    pub backend: SearchBackend,
    /// The file each component runs from.
    pub models: BTreeMap<String, PathBuf>,
    /// Attribute the chain's error when its actions' max |error| is over this.
    pub attribute_over: Option<f64>,
}

/// What the chain gave.
pub struct Ran {
    pub max_abs: f64,
    pub cosine: f64,
    pub seconds: f64,
    pub attribution: Option<Attribution>,
}

/// Runs the chain once; `on_component` hears each component as it starts.
pub fn run(setup: &Setup<'_, '_>, on_component: &dyn Fn(&str)) -> Result<Ran> {
    let backend = match setup.backend {
        SearchBackend::Htp => xtask_runtime::runtime::backend_for(setup.model, BackendKind::Htp),
        SearchBackend::Qdq => Backend::OrtCpu,
    };
    let kind = backend.kind();
    let mut sessions =
        ChainSessions::new(setup.rt, setup.model, backend, setup.models.clone(), false);
    on_component("(loading the sessions)");
    sessions.load_all()?;
    let started = Instant::now();
    let mut once = Once {
        sessions,
        kind,
        root: setup.root,
        rt: setup.rt,
        model: setup.model,
        memo: setup.attribute_over.map(|_| Memo::default()),
        attribute_over: setup.attribute_over,
        on_component,
    };
    let report = run_judged(setup.chain, &mut once)?;
    // The chain's own time: the attribution's what-ifs are not part of it.
    let what_ifs = report
        .run
        .attribution
        .as_ref()
        .map_or(0.0, |a| a.took_ms / 1e3);
    let seconds = started.elapsed().as_secs_f64() - what_ifs;
    let actions = report
        .run
        .boundaries
        .iter()
        .find(|b| b.name == "actions")
        .and_then(|b| b.metrics.clone())
        .context("the chain's final actions were not compared with the float golden")?;
    Ok(Ran {
        max_abs: actions.max_abs_err,
        cosine: actions.cosine,
        seconds,
        attribution: report.run.attribution.clone(),
    })
}

struct Once<'s, 'a> {
    sessions: ChainSessions<'a>,
    kind: BackendKind,
    root: &'s Path,
    rt: &'a Runtime,
    model: &'a Model,
    /// The first chain's component outputs, for the what-ifs (only when attributing).
    memo: Option<Memo>,
    attribute_over: Option<f64>,
    on_component: &'s dyn Fn(&str),
}

impl ComponentRunner for Once<'_, '_> {
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
        (self.on_component)(name);
        match self.memo.as_mut() {
            Some(memo) => memo.call(
                false,
                &mut self.sessions,
                None,
                &BTreeSet::new(),
                name,
                inputs,
            ),
            None => self.sessions.call(name, inputs),
        }
    }

    fn attribute(&mut self, judged: &Judged<'_>) -> Result<Option<Attribution>> {
        let (Some(over), Some(memo)) = (self.attribute_over, self.memo.as_mut()) else {
            return Ok(None);
        };
        let actions = judged
            .boundaries
            .iter()
            .find(|b| b.name == "actions")
            .and_then(|b| b.metrics.as_ref());
        if actions.is_none_or(|m| m.max_abs_err <= over) {
            return Ok(None);
        }
        (self.on_component)("attribution: each component in fp32 in turn");
        let mut cpu = ChainSessions::fp32_on_cpu(self.rt, self.model, self.root, |_| true, false);
        cpu.load_all()?;
        let got = host::attribute(judged, &mut self.sessions, &mut cpu, &BTreeSet::new(), memo)?;
        Ok(Some(got))
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
