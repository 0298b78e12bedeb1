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
    /// `chains` timed and untimed chain runs (the golden-inputs pass is one more).
    pub fn start(root: &Path, model: &str, backend: BackendKind, chains: usize) -> Self {
        let previous = previous_chain_secs(root, model, backend);
        if let Some(per) = previous.filter(|p| p * chains as f64 >= WORTH_SAYING_SECS) {
            estimate(&format!(
                "about {}: {chains} chains on {} at {} each (the last run's end-to-end p50); --iters to shorten",
                human_secs(per * (chains + 1) as f64),
                where_(backend),
                human_secs(per)
            ));
        }
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

/// The previous run report's end-to-end p50 in seconds (a measured time per chain); None when
/// there is no readable report of this backend or it measured no chain.
fn previous_chain_secs(root: &Path, model: &str, backend: BackendKind) -> Option<f64> {
    let dir = xtask_base::project::reports_dir(root, model);
    let report = RunReport::read(&dir, backend).ok()?;
    let e2e = report.run.latency.iter().find(|l| l.name == "end-to-end")?;
    Some(e2e.p50_ms / 1000.0).filter(|s| s.is_finite())
}
