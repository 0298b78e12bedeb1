//! ONNX Runtime sessions on the backends the tool uses: ORT's CPU EP, the QNN CPU backend,
//! the QNN HTP backend (emulated on x86_64), and the QNN IR backend for DLC dumps.
//!
//! Every outcome is checked here, because through `ort` many failures are silent: option keys
//! without the EP prefix are dropped, nodes fall back to ORT's CPU EP, no context file is
//! written. Placement is proven from ORT's own verbose "Node placements" log of the session.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, bail};
use ort::environment::Environment;
use ort::logging::LogLevel;
use ort::session::{RunOptions, Session, SessionInputValue};

use super::bootstrap::RuntimeLibs;
pub use super::compile_config::context_session_config;
use super::compile_config::stable_model_dir;
pub use super::placement::Placement;
use super::placement::{parse_placement, require_all_on_qnn};
use super::values::{from_ort_value, input_view, outlet_contract};
use xtask_onnx::tensor::{DType, Tensor};
use xtask_recipe::htp_target::HtpTarget;

const CPU_EP: &str = "CPUExecutionProvider";

pub use super::backend::{Backend, QNN_EP};

/// The loaded ONNX Runtime with the QNN plugin registered.
pub struct Runtime {
    pub(super) env: Environment,
    pub libs: RuntimeLibs,
    pub ort_version: String,
    /// The QNN build version (`v2.47.0.…`) as the first QNN session logged it.
    qnn_build: Mutex<Option<String>>,
}

pub struct CheckedSession {
    session: Session,
    /// Runs log at warning level: the verbose log is only needed while the session is created.
    run_options: RunOptions,
    pub placement: Placement,
    pub log: Vec<String>,
}

type LogSink = Arc<Mutex<Vec<String>>>;

impl Runtime {
    pub fn load(libs: RuntimeLibs) -> Result<Self> {
        let ort_version = super::version::ort_library_version(&libs.ort_dylib)?;
        let builder = ort::init_from(&libs.ort_dylib).map_err(|e| {
            anyhow::anyhow!(
                "cannot load ONNX Runtime from {}: {e}",
                libs.ort_dylib.display()
            )
        })?;
        let env = builder
            .with_name("xtask")
            .with_global_thread_pool(shared_thread_pool()?)
            .build()
            .context("cannot create the ORT environment")?;
        // QNN is optional (a board without the SDK): ORT's CPU backend works without it, and
        // only a QNN backend request fails, with the reason recorded here.
        let mut libs = libs;
        if let Some(plugin) = libs.qnn_plugin() {
            let plugin = std::path::absolute(plugin)?;
            if let Err(e) = env.register_ep_library(QNN_EP, &plugin) {
                libs.qnn_missing = Some(format!(
                    "cannot register the QNN plugin {}: {e}",
                    plugin.display()
                ));
                libs.qnn = None;
            }
        }
        Ok(Runtime {
            env,
            libs,
            ort_version,
            qnn_build: Mutex::new(None),
        })
    }

    /// Why QNN backends are not usable here (None when the plugin is registered).
    pub fn qnn_unavailable(&self) -> Option<&str> {
        self.libs.qnn.is_none().then(|| {
            self.libs
                .qnn_missing
                .as_deref()
                .unwrap_or("QNN is not available")
        })
    }

    /// The QNN build version seen in any QNN session's log so far (`probe` asks a probe
    /// session when there is none: `Runtime::qnn_build_version`).
    pub(super) fn logged_qnn_build(&self) -> Option<String> {
        self.qnn_build.lock().ok()?.clone()
    }

    fn remember_qnn_build(&self, log: &[String]) {
        if let Some(v) = super::version::qnn_build_version_from_log(log)
            && let Ok(mut slot) = self.qnn_build.lock()
        {
            slot.get_or_insert(v);
        }
    }

    pub fn has_qnn_device(&self) -> bool {
        self.env
            .devices()
            .any(|d| d.ep().is_ok_and(|ep| ep == QNN_EP))
    }

    fn qnn_backend_lib(&self, name: &str) -> Result<String> {
        let path = std::path::absolute(self.libs.qnn_dir()?.join(name))?;
        if !path.is_file() {
            bail!("QNN backend library {} is missing", path.display());
        }
        Ok(path.display().to_string())
    }

    /// EP options for a backend: where its library is, then the rendered options, each
    /// prefixed with the EP name (unprefixed keys are dropped).
    fn qnn_options(&self, backend: &Backend) -> Result<Vec<(String, String)>> {
        let lib = match backend {
            Backend::OrtCpu => return Ok(Vec::new()),
            Backend::QnnCpu => "libQnnCpu.so",
            Backend::QnnHtp(_) => "libQnnHtp.so",
        };
        let mut opts = vec![("backend_path".to_string(), self.qnn_backend_lib(lib)?)];
        opts.extend(backend_ep_options(backend));
        Ok(prefixed(opts))
    }

    /// A session builder with the log captured into `sink` (verbose, for placement) and the
    /// device of `ep` alone: device order is EP priority, so QNN is never listed after CPU.
    fn builder(
        &self,
        ep: &str,
        ep_options: &[(String, String)],
        sink: &LogSink,
    ) -> Result<ort::session::builder::SessionBuilder> {
        let sink = sink.clone();
        let logger: ort::logging::LoggerFunction =
            Arc::new(move |_lvl, _cat, _id, _loc, msg: &str| {
                if let Ok(mut v) = sink.lock() {
                    v.push(msg.to_string());
                }
            });
        let devices: Vec<_> = self
            .env
            .devices()
            .filter(|d| d.ep().is_ok_and(|name| name == ep))
            .collect();
        if devices.is_empty() {
            bail!(
                "no {ep} device: the QNN plugin did not register a device (run `cargo xtask doctor`)"
            );
        }
        let options = (!ep_options.is_empty()).then_some(ep_options);
        Session::builder(&self.env)
            .map_err(ort_err)?
            .with_logger(logger)
            .map_err(ort_err)?
            .with_log_level(LogLevel::Verbose)
            .map_err(ort_err)?
            // Every session runs on the environment's one thread pool (`shared_thread_pool`).
            .with_devices(devices, options)
            .map_err(ort_err)
    }

    fn backend_builder(
        &self,
        backend: &Backend,
        sink: &LogSink,
    ) -> Result<ort::session::builder::SessionBuilder> {
        let ep = if matches!(backend, Backend::OrtCpu) {
            CPU_EP
        } else {
            QNN_EP
        };
        self.builder(ep, &self.qnn_options(backend)?, sink)
    }

    /// Opens a model for inference and proves where its nodes run: a QNN backend session with
    /// any node off the QNN EP is an error naming those nodes.
    pub fn open(&self, model: &Path, backend: &Backend) -> Result<CheckedSession> {
        let sink: LogSink = Arc::default();
        let mut builder = self.backend_builder(backend, &sink)?;
        let session = builder
            .commit_from_file(model)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(|| {
                format!(
                    "cannot open {} on backend `{}`",
                    model.display(),
                    backend.label()
                )
            })?;
        let log = std::mem::take(&mut *sink.lock().unwrap());
        self.remember_qnn_build(&log);
        let placement = parse_placement(&log);
        if backend != &Backend::OrtCpu {
            require_all_on_qnn(&placement, &log, model)?;
        }
        let mut run_options = RunOptions::new().map_err(ort_err)?;
        run_options
            .set_log_level(LogLevel::Warning)
            .map_err(ort_err)?;
        Ok(CheckedSession {
            session,
            run_options,
            placement,
            log,
        })
    }

    /// Dumps the model as a QNN IR DLC into `dir` (the QNN IR backend through the EP). A dump
    /// session cannot run inference; the DLC file is the only product.
    pub fn dump_dlc(
        &self,
        model: &Path,
        dir: &Path,
        quantized: bool,
    ) -> Result<(PathBuf, Placement)> {
        std::fs::create_dir_all(dir)?;
        let sink: LogSink = Arc::default();
        let ir = self.qnn_backend_lib("libQnnIr.so")?;
        let mut opts = vec![
            ("backend_path".to_string(), ir.clone()),
            ("qnn_ir_backend_path".to_string(), ir),
        ];
        opts.extend(dump_dlc_ep_options(
            &std::path::absolute(dir)?.display().to_string(),
            quantized,
        ));
        let opts = prefixed(opts);
        let mut builder = self.builder(QNN_EP, &opts, &sink)?;
        let _session = builder
            .commit_from_file(model)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(|| format!("QNN IR conversion of {} failed", model.display()))?;
        let log = std::mem::take(&mut *sink.lock().unwrap());
        let placement = parse_placement(&log);
        require_all_on_qnn(&placement, &log, model)?;
        let dlcs: Vec<PathBuf> = std::fs::read_dir(dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "dlc"))
            .collect();
        match dlcs.as_slice() {
            [one] => Ok((one.clone(), placement)),
            [] => bail!(
                "the QNN IR backend wrote no DLC for {} (session succeeded silently)",
                model.display()
            ),
            many => bail!(
                "expected one DLC for {}, found {}: the graph was partitioned",
                model.display(),
                many.len()
            ),
        }
    }

    /// Compiles the model into an HTP context binary plus its EPContext wrapper at `wrapper`
    /// (`<stem>.onnx` → `<stem>_qnn.bin` beside it), and checks both were really written.
    pub fn compile_context(
        &self,
        model: &Path,
        target: &HtpTarget,
        wrapper: &Path,
    ) -> Result<Placement> {
        let sink: LogSink = Arc::default();
        let backend = Backend::QnnHtp(target.clone());
        let mut builder = self.backend_builder(&backend, &sink)?;
        // Held until the compile is done: the link it names is removed when the last user drops it.
        let model_dir = stable_model_dir(model)?;
        for (key, value) in context_session_config(
            &wrapper.display().to_string(),
            &model_dir.path.display().to_string(),
        ) {
            builder = builder.with_config_entry(key, value).map_err(ort_err)?;
        }
        let bytes =
            std::fs::read(model).with_context(|| format!("cannot read {}", model.display()))?;
        let session = builder
            .commit_from_memory(&bytes)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(|| format!("HTP context generation for {} failed", model.display()))?;
        drop(session);
        drop(model_dir);
        let log = std::mem::take(&mut *sink.lock().unwrap());
        let placement = parse_placement(&log);
        require_all_on_qnn(&placement, &log, model)?;
        Ok(placement)
    }
}

impl CheckedSession {
    pub fn input_contract(&self) -> Vec<(String, Option<DType>, Vec<i64>)> {
        self.session
            .inputs()
            .iter()
            .map(|o| outlet_contract(o.name(), o.dtype()))
            .collect()
    }

    pub fn output_contract(&self) -> Vec<(String, Option<DType>, Vec<i64>)> {
        self.session
            .outputs()
            .iter()
            .map(|o| outlet_contract(o.name(), o.dtype()))
            .collect()
    }

    /// Runs once with named inputs and returns every output by name.
    pub fn run(&mut self, inputs: &BTreeMap<String, Tensor>) -> Result<BTreeMap<String, Tensor>> {
        let mut values: Vec<(Cow<'_, str>, SessionInputValue<'_>)> = Vec::new();
        for (name, t) in inputs {
            values.push((Cow::Owned(name.clone()), input_view(t)?));
        }
        let names: Vec<String> = self
            .session
            .outputs()
            .iter()
            .map(|o| o.name().to_string())
            .collect();
        let outputs = self
            .session
            .run_with_options(values, &self.run_options)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut out = BTreeMap::new();
        for name in names {
            out.insert(
                name.clone(),
                from_ort_value(&outputs[name.as_str()])
                    .with_context(|| format!("output `{name}`"))
                    .map_err(ort_err)?,
            );
        }
        Ok(out)
    }
}

/// One intra-op thread pool for every session of the process, instead of one per session:
/// seven resident sessions kept 14 threads for 2 cores. Spinning stays off: idle threads that
/// spin steal the cores of whatever else runs (measured under load: the tiny chain at 55 ms
/// spinning vs 26 ms not; before the pool was shared, a chain at 6.7x the sum of its parts).
/// `XTASK_ORT_SPIN=1` / `XTASK_ORT_THREADS=N` change it, to measure (`bench chain`).
fn shared_thread_pool() -> Result<ort::environment::GlobalThreadPoolOptions> {
    let spin = std::env::var("XTASK_ORT_SPIN").is_ok_and(|v| v == "1");
    let threads = match std::env::var("XTASK_ORT_THREADS") {
        Err(_) => 2,
        Ok(v) => match v.parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => bail!("XTASK_ORT_THREADS={v:?}: expected a number of threads, 1 or more"),
        },
    };
    ort::environment::GlobalThreadPoolOptions::default()
        .with_intra_threads(threads)
        .and_then(|o| o.with_spin_control(spin))
        .map_err(ort_err)
}

/// The rendered EP options of a backend, without the EP prefix and without `backend_path`
/// (machine-specific; the runtime adds it): what a build step's fingerprint hashes.
pub fn backend_ep_options(backend: &Backend) -> Vec<(String, String)> {
    let mut opts = match backend {
        Backend::OrtCpu => return Vec::new(),
        Backend::QnnCpu => Vec::new(),
        Backend::QnnHtp(t) => t.ep_options(),
    };
    opts.push(("profiling_level".into(), "off".into()));
    opts
}

/// The rendered EP options of a QNN IR (DLC) dump into `dir`, without the library paths.
/// A quantized (QDQ) graph's graph-I/O Quantize/Dequantize nodes go into the DLC too.
pub fn dump_dlc_ep_options(dir: &str, quantized: bool) -> Vec<(String, String)> {
    let mut opts = vec![
        ("dump_qnn_ir_dlc".into(), "1".into()),
        ("dump_qnn_ir_dlc_dir".into(), dir.into()),
    ];
    if quantized {
        opts.push(("offload_graph_io_quantization".into(), "0".into()));
    }
    opts
}

/// The session config of an HTP context build writing its EPContext wrapper to `wrapper`.
fn prefixed(opts: Vec<(String, String)>) -> Vec<(String, String)> {
    opts.into_iter()
        .map(|(k, v)| (format!("{QNN_EP}.{k}"), v))
        .collect()
}

/// `ort` errors carry the builder for recovery and are not `Send`; keep only the message.
fn ort_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}
