//! The one parity runner: every selected component on one backend, judged against its golden,
//! printed, reported, merged with the results an `--only` run did not re-measure, and turned
//! into an outcome decided by this run alone. Who executes a component (the embedded runtime,
//! the QAIRT SDK's tools, a board over ssh) is an `Executor`; the loop, the report and the
//! exit code are the same for all of them.

use std::path::Path;

use anyhow::Result;

use super::component::{ComponentResult, GoldenIo, failed_component};
use super::report::{ParityReport, print_component};
use super::report_files::write_parity_report;
use xtask_base::vocab::{BackendKind, Outcome};
use xtask_recipe::recipe::{Component, Model};
use xtask_runtime::runtime::Runtime;

/// Runs one component on its golden inputs and judges every output.
pub trait Executor {
    /// The backend the results are reported under.
    fn backend(&self) -> BackendKind;
    /// One component, its golden already loaded and checked against the recipe.
    fn run(&self, comp: &Component, golden: &GoldenIo) -> Result<ComponentResult>;
    /// Whether an error of `run` ends the command (a lost device) instead of failing only
    /// that component.
    fn is_fatal(&self, _err: &anyhow::Error) -> bool {
        false
    }
    /// Says where the run happened in the report (a device run is not this host's HTP).
    fn annotate(&self, _report: &mut ParityReport) {}
    /// A last line after the summary (for example what was copied to a device).
    fn closing_note(&self) -> Option<String> {
        None
    }
}

/// What one `parity` run covers.
pub struct ParityRun<'a> {
    pub root: &'a Path,
    pub rt: &'a Runtime,
    pub model: &'a Model,
    pub components: &'a [&'a Component],
    /// True when `--only` narrowed the run: earlier results of the others are kept, marked.
    pub narrowed: bool,
}

impl ParityRun<'_> {
    /// Runs every component with `exec`, writes `reports/<model>/parity-<backend>[-device]`,
    /// and fails (exit 1) when a component of *this* run failed.
    pub fn run(&self, exec: &dyn Executor) -> Result<Outcome> {
        let backend = exec.backend();
        let name = &self.model.file.model.name;
        let mut results = Vec::new();
        xtask_base::ui::interrupt::keeps(&format!(
            "reports/{name}/parity-{}.* as they were (a run writes its report at its end)",
            backend.label()
        ));
        let task = xtask_base::ui::progress::Task::new(
            &format!("parity {}", backend.label()),
            self.components.len(),
        );
        for comp in self.components {
            task.working_on(comp.name());
            let result = match xtask_recipe::golden::load_golden(self.root, comp)
                .and_then(|golden| exec.run(comp, &golden))
            {
                Ok(r) => r,
                // Bad input (a corrupt golden, a recipe mismatch) is the user's to fix: exit 2
                // for the command, not a FAIL row of one component.
                Err(e) if exec.is_fatal(&e) || xtask_base::bad_input::is_bad_input(&e) => {
                    return Err(e);
                }
                Err(e) => failed_component(self.root, comp.name(), backend, &e),
            };
            task.step_done(comp.name(), false);
            task.suspend(|| {
                print_component(&result);
                if !result.pass && result.error.is_none() && backend != BackendKind::Ort {
                    xtask_base::outln!(
                        "      hint: find where it diverges with `{}`",
                        crate::parity::bisect_hint(name, comp, backend)
                    );
                }
            });
            results.push(result);
        }
        drop(task);
        let mut report = ParityReport::new(name, backend, self.rt, results);
        report.versions = report.versions.with_provenance(self.root, name);
        exec.annotate(&mut report);
        let dir = xtask_base::project::reports_dir(self.root, name);
        if self.narrowed {
            let order: Vec<&str> = self.model.components.iter().map(|c| c.name()).collect();
            // An unreadable earlier report is not merged (this run's report replaces it); say so.
            let earlier = ParityReport::read_stem(&dir, &report.stem()).unwrap_or_else(|e| {
                xtask_base::ui::warnings::warn(format!("{e:#}; its components are not kept"));
                None
            });
            report.merge_earlier(earlier, &order);
        }
        write_parity_report(&dir, &report)?;
        xtask_base::ui::json::offer(&report);
        report.summarize(&xtask_base::project::rel(self.root, &dir));
        if let Some(note) = exec.closing_note() {
            xtask_base::outln!("{note}");
        }
        Ok(if report.pass_this_run() {
            Outcome::Success
        } else {
            Outcome::GateFailed
        })
    }
}

/// Says at once (before the runtime is checked or a binary is hashed) what a `parity` run will
/// measure and, when an earlier report of this model and backend measured them, how long it
/// will take (the sum of their run seconds, plus a session load each).
pub fn announce(root: &Path, model: &str, backend: BackendKind, comps: &[&Component]) {
    let dir = xtask_base::project::reports_dir(root, model);
    let names: Vec<&str> = comps.iter().map(|c| c.name()).collect();
    let on = match backend {
        BackendKind::Htp if xtask_runtime::runtime::probe::htp_is_emulated() => {
            "the emulated HTP".to_string()
        }
        b => format!("the {b} backend"),
    };
    let earlier = ParityReport::read(&dir, backend).ok().flatten();
    let seconds: Option<f64> = earlier.and_then(|r| {
        names
            .iter()
            .map(|n| {
                r.components
                    .iter()
                    .find(|c| c.component == *n && c.error.is_none())
                    .map(|c| c.run_seconds)
            })
            .sum()
    });
    let estimate = match seconds {
        Some(s) => format!(
            ", about {} (the components' run times in reports/{model}/parity-{backend}.json, session loads not included)",
            xtask_base::ui::progress::human_secs(s)
        ),
        None => format!(
            "; no earlier report of `{model}` on {backend} measured all of them: each component's line follows as it finishes"
        ),
    };
    xtask_base::ui::progress::estimate(&format!(
        "parity {backend}: {} component(s) of `{model}` on {on} ({}){estimate}",
        names.len(),
        names.join(", ")
    ));
}
