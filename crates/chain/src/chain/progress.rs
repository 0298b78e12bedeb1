//! Progress of `run`: an estimate before it starts (from the previous run report's measured
//! end-to-end time, else said to be rough after the first chain), then a bar of chains with
//! the running component on a terminal, or a line per component of the first chain and a line
//! per chain without one (plus `ui::progress`'s heartbeat).

use std::path::Path;
use std::time::Instant;

use super::report::RunReport;
use xtask_base::ui::progress::{Task, estimate, human_secs};
use xtask_base::vocab::BackendKind;

/// Estimates below this are not worth a line.
const WORTH_SAYING_SECS: f64 = 20.0;

pub struct ChainProgress {
    task: Task,
    chains: usize,
    backend: BackendKind,
    started: Instant,
    estimated: bool,
}

impl ChainProgress {
    /// Says at once (before the runtime is checked or a session loads) what runs and, when an
    /// earlier run or parity report of this model and backend tells, how long it will take;
    /// returns the seconds per chain it estimated.
    pub fn announce(root: &Path, model: &str, backend: BackendKind, chains: usize) -> Option<f64> {
        let previous = previous_chain_secs(root, model, backend);
        // Said at once, before any session loads: what runs, and how long it will take when
        // an earlier run or parity report of this model and backend tells.
        match &previous {
            Some((per, from)) => estimate(&format!(
                "run {backend}: {chains} chain(s) and a golden-inputs pass on {}, about {} ({} per chain, from {from}); --iters to shorten",
                where_(backend),
                human_secs(per * (chains + 1) as f64),
                human_secs(*per)
            )),
            None => estimate(&format!(
                "run {backend}: {chains} chain(s) and a golden-inputs pass on {}; no earlier run or parity report of `{model}` on {backend} to estimate from: an estimate follows the first chain",
                where_(backend)
            )),
        }
        previous.map(|(per, _)| per)
    }

    /// `chains` timed and untimed chain runs (the golden-inputs pass is one more); `previous`
    /// is `announce`'s estimate per chain.
    pub fn start(previous: Option<f64>, backend: BackendKind, chains: usize) -> Self {
        ChainProgress {
            task: Task::new(&format!("run {backend}"), chains + 1),
            chains,
            backend,
            started: Instant::now(),
            estimated: previous.is_some(),
        }
    }

    /// The component `name` of chain `i` (0-based) is about to run.
    pub fn component(&self, i: usize, name: &str) {
        self.task
            .working_on(&format!("{} {name}", self.chain_label(i)));
    }

    /// The component ran in `ms`; the first chain's components each get a line.
    pub fn component_done(&self, i: usize, name: &str, ms: f64) {
        if i == 0 {
            self.task.println_plain(&format!(
                "run {}: {} {name} ran in {}",
                self.backend,
                self.chain_label(i),
                human_secs(ms / 1000.0)
            ));
        }
    }

    /// Chain `i` finished; after the first, a rough estimate when there was no measured one.
    pub fn chain_done(&mut self, i: usize) {
        self.task.step_done(&self.chain_label(i), true);
        if i == 0 && !self.estimated && self.chains > 1 {
            self.estimated = true;
            let per = self.started.elapsed().as_secs_f64();
            let left = per * self.chains as f64 - per;
            if left >= WORTH_SAYING_SECS {
                estimate(&format!(
                    "about {} more (rough: the first chain took {}, it includes warm-up work): {} more chain(s) on {}; --iters to shorten",
                    human_secs(left),
                    human_secs(per),
                    self.chains - 1,
                    where_(self.backend)
                ));
            }
        }
    }

    /// The last pass: every component once more on its golden inputs.
    pub fn golden_pass(&self) {
        self.task.working_on("each component on its golden inputs");
    }

    pub fn golden_pass_done(&self) {
        self.task
            .step_done("each component on its golden inputs", true);
    }

    fn chain_label(&self, i: usize) -> String {
        if i < self.chains {
            format!("chain {}/{}", i + 1, self.chains)
        } else {
            "golden-inputs pass".to_string()
        }
    }
}

fn where_(backend: BackendKind) -> String {
    match backend {
        BackendKind::Htp if xtask_runtime::runtime::probe::htp_is_emulated() => {
            "the emulated HTP".into()
        }
        b => format!("the {b} backend"),
    }
}

/// Seconds per chain, and what they come from: the newest run report of this model and
/// backend (a quick run's too: its end-to-end p50 is per chain, whatever its iteration
/// count), else the parity report's measured run seconds of each component summed over one
/// chain's calls (the action step once per Euler step). None when neither exists.
fn previous_chain_secs(root: &Path, model: &str, backend: BackendKind) -> Option<(f64, String)> {
    let dir = xtask_base::project::reports_dir(root, model);
    let prefix = format!("run-{backend}");
    let mut newest: Option<(u64, f64, String)> = None;
    for entry in std::fs::read_dir(&dir).ok()?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".json") else {
            continue;
        };
        let rest = stem.strip_prefix(&prefix).unwrap_or("-");
        if !(rest.is_empty() || rest.starts_with("-iters")) {
            continue;
        }
        let Ok(report) = RunReport::read_stem(&dir, stem) else {
            continue;
        };
        let Some(e2e) = report.run.latency.iter().find(|l| l.name == "end-to-end") else {
            continue;
        };
        let per = e2e.p50_ms / 1000.0;
        if per.is_finite()
            && newest
                .as_ref()
                .is_none_or(|(t, _, _)| report.created_unix > *t)
        {
            newest = Some((report.created_unix, per, format!("reports/{model}/{name}")));
        }
    }
    if let Some((_, per, from)) = newest {
        return Some((per, format!("the end-to-end p50 of {from}")));
    }
    let parity = xtask_parity::parity::report::ParityReport::read(&dir, backend).ok()??;
    let steps = xtask_recipe::recipe::load_model(root, model)
        .ok()
        .and_then(|m| m.file.host.map(|h| (h.action_step, h.timesteps.len())));
    let per: f64 = parity
        .components
        .iter()
        .map(|c| match &steps {
            Some((step, n)) if *step == c.component => c.run_seconds * *n as f64,
            _ => c.run_seconds,
        })
        .sum();
    (per > 0.0).then(|| {
        (
            per,
            format!("the components' run times in reports/{model}/parity-{backend}.json"),
        )
    })
}
