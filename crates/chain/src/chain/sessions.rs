//! The sessions a chain run calls its components through: all loaded up front (resident, the
//! device's mode) or opened per call (streaming), with load and run times recorded.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use xtask_onnx::tensor::Tensor;
use xtask_recipe::recipe::Model;
use xtask_runtime::runtime::session::CheckedSession;
use xtask_runtime::runtime::{Backend, Runtime};

/// The sessions of a chain: all resident, or opened per call (streaming). Records timings;
/// `recording` is on for timed runs only.
pub struct ChainSessions<'a> {
    rt: &'a Runtime,
    model: &'a Model,
    backend: Backend,
    models: BTreeMap<String, PathBuf>,
    /// Components that run on another backend than the chain's: a quantized component's QDQ
    /// simulation on ORT's CPU EP in a chain on QNN's CPU backend (which cannot run QDQ).
    other_backend: BTreeMap<String, Backend>,
    resident: BTreeMap<String, CheckedSession>,
    streaming: bool,
    pub recording: bool,
    pub load_ms: BTreeMap<String, Vec<f64>>,
    /// Session loads inside timed chains (streaming mode): not host work.
    pub timed_load_ms: f64,
    pub run_ms: BTreeMap<String, Vec<f64>>,
}

impl<'a> ChainSessions<'a> {
    /// Sessions over `models` (component name → model file), none opened yet.
    /// Sessions of the float ONNX of the components `keep` selects, on ORT's CPU EP: the
    /// what-ifs' fp32 runs (`run --fp32`, `--attribute`, the precision search's attribution).
    pub fn fp32_on_cpu(
        rt: &'a Runtime,
        model: &'a Model,
        root: &Path,
        keep: impl Fn(&str) -> bool,
        streaming: bool,
    ) -> Self {
        let onnx = model
            .components
            .iter()
            .filter(|c| keep(c.name()))
            .map(|c| (c.name().to_string(), root.join(&c.file.component.onnx)))
            .collect();
        ChainSessions::new(rt, model, Backend::OrtCpu, onnx, streaming)
    }

    pub fn new(
        rt: &'a Runtime,
        model: &'a Model,
        backend: Backend,
        models: BTreeMap<String, PathBuf>,
        streaming: bool,
    ) -> Self {
        ChainSessions {
            rt,
            model,
            backend,
            models,
            other_backend: BTreeMap::new(),
            resident: BTreeMap::new(),
            streaming,
            recording: false,
            load_ms: BTreeMap::new(),
            timed_load_ms: 0.0,
            run_ms: BTreeMap::new(),
        }
    }

    /// Runs `name` on `backend` instead of the chain's.
    pub fn with_backend_for(mut self, name: &str, backend: Backend) -> Self {
        self.other_backend.insert(name.to_string(), backend);
        self
    }

    fn backend_of(&self, name: &str) -> &Backend {
        self.other_backend.get(name).unwrap_or(&self.backend)
    }

    fn open(&mut self, name: &str) -> Result<CheckedSession> {
        let path = self
            .models
            .get(name)
            .with_context(|| format!("no model file for component `{name}`"))?;
        let started = Instant::now();
        let session = self.rt.open(path, self.backend_of(name))?;
        let took = ms(started);
        self.load_ms.entry(name.into()).or_default().push(took);
        if self.recording {
            self.timed_load_ms += took;
        }
        Ok(session)
    }

    pub fn load_all(&mut self) -> Result<()> {
        let names: Vec<String> = self.models.keys().cloned().collect();
        for name in names {
            let session = self.open(&name)?;
            self.resident.insert(name, session);
        }
        Ok(())
    }

    pub fn call(
        &mut self,
        name: &str,
        inputs: &BTreeMap<String, Tensor>,
    ) -> Result<BTreeMap<String, Tensor>> {
        // On the HTP, `mask = true` inputs are clamped to fp16's range first, as on the device.
        let comp = self.model.components.iter().find(|c| c.name() == name);
        let inputs = match (self.backend_of(name), comp) {
            (Backend::QnnHtp(_), Some(c)) => Cow::Owned(xtask_recipe::fp16::clamp_masks(c, inputs)),
            _ => Cow::Borrowed(inputs),
        };
        let mut streamed = if self.streaming {
            Some(self.open(name)?)
        } else {
            None
        };
        let session = match streamed.as_mut() {
            Some(s) => s,
            None => self
                .resident
                .get_mut(name)
                .with_context(|| format!("component `{name}` is not loaded"))?,
        };
        let started = Instant::now();
        let out = session
            .run(&inputs)
            .with_context(|| format!("running `{name}`"))?;
        if self.recording {
            self.run_ms
                .entry(name.into())
                .or_default()
                .push(ms(started));
        }
        Ok(out)
    }
}

pub fn ms(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1e3
}
