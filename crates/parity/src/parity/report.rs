//! Parity reports: a table per component on the terminal, and `reports/<model>/parity-<backend>`
//! as JSON (every figure, tool versions, input hashes), Markdown (the model card's table,
//! `markdown`) and HTML (`html`); `report_files` writes the three.

use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::parity::component::ComponentResult;
use xtask_base::record::{Unreadable, Versioned};
use xtask_runtime::report::{ToolVersions, now_unix};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ParityReport {
    /// `ParityReport::SCHEMA` (`record::Versioned`; 0 when read from a report written before).
    #[serde(default)]
    pub schema_version: u32,
    pub model: String,
    pub backend: xtask_base::vocab::BackendKind,
    /// Seconds since the Unix epoch.
    pub created_unix: u64,
    pub versions: ToolVersions,
    /// For `htp`: whether the HTP was emulated (x86_64 host) or a real NPU.
    pub htp_emulated: Option<bool>,
    /// For `htp`: emulator or device, how that was known, and the SoC when reported.
    pub htp: Option<xtask_runtime::runtime::probe::HtpKind>,
    /// `--device`: where the components ran and where the times come from (then
    /// `htp_emulated` is None: this host's HTP was not used). Reports go to
    /// `parity-<backend>-device.*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    pub components: Vec<ComponentResult>,
    pub pass: bool,
}

/// v1: the first numbered schema; reports written before it carry every field but the number
/// and are read as they are.
impl Versioned for ParityReport {
    const KIND: &'static str = "parity report";
    const SCHEMA: u32 = 1;
    const READS_OLDER: &'static [u32] = &[0];
}

impl ParityReport {
    /// The report of one `parity` run; it passes when every component passed.
    pub fn new(
        model: &str,
        backend: xtask_base::vocab::BackendKind,
        rt: &xtask_runtime::runtime::Runtime,
        components: Vec<ComponentResult>,
    ) -> Self {
        let htp = (backend == xtask_base::vocab::BackendKind::Htp)
            .then(|| xtask_runtime::runtime::probe::HtpKind::of(rt));
        ParityReport {
            schema_version: <Self as Versioned>::SCHEMA,
            model: model.into(),
            backend,
            created_unix: now_unix(),
            versions: ToolVersions::of(rt),
            htp_emulated: htp.as_ref().map(|h| h.emulated),
            htp,
            device: None,
            pass: components.iter().all(|r| r.pass),
            components,
        }
    }

    /// Keeps the components of an earlier report of the same model and backend that this run
    /// did not measure (`--only`), each with its own hashes and time, marked as earlier results
    /// (`from_earlier_run`), in `order`. The report as a whole passes only when every component
    /// in it passed; the command's exit code comes from `pass_this_run`.
    pub fn merge_earlier(&mut self, earlier: Option<ParityReport>, order: &[&str]) {
        let Some(earlier) = earlier.filter(|e| {
            e.model == self.model && e.backend == self.backend && e.device == self.device
        }) else {
            return;
        };
        let mut kept = earlier.components;
        for c in &mut kept {
            c.from_earlier_run = true;
        }
        self.insert_missing(kept, order);
    }

    /// Adds the components of `others` this report does not hold yet, keeps `order`, and
    /// recomputes `pass` (the one merge of parity results: `--only` runs and CI entries).
    pub fn insert_missing(&mut self, others: Vec<ComponentResult>, order: &[&str]) {
        for old in others {
            let known = order.contains(&old.component.as_str());
            if known && !self.components.iter().any(|c| c.component == old.component) {
                self.components.push(old);
            }
        }
        let position = |c: &ComponentResult| order.iter().position(|n| *n == c.component);
        self.components.sort_by_key(position);
        self.pass = self.components.iter().all(|c| c.pass);
    }

    /// Whether every component measured by this run passed (results kept from earlier runs do
    /// not decide the exit code of a run that did not measure them).
    pub fn pass_this_run(&self) -> bool {
        self.components
            .iter()
            .filter(|c| !c.from_earlier_run)
            .all(|c| c.pass)
    }

    /// The report written for this model and backend in `dir`: None when there is none, an
    /// error naming the file when it cannot be read as a parity report of a known schema.
    pub fn read(
        dir: &Path,
        backend: xtask_base::vocab::BackendKind,
    ) -> Result<Option<ParityReport>> {
        Self::read_stem(dir, &format!("parity-{backend}"))
    }

    /// The report written under `stem` (`parity-<backend>[-device]`), as `read`.
    pub fn read_stem(dir: &Path, stem: &str) -> Result<Option<ParityReport>> {
        let backend = stem
            .trim_start_matches("parity-")
            .trim_end_matches("-device");
        let rebuild = format!("cargo xtask parity --backend {backend}");
        match xtask_base::record::read_or_missing(&dir.join(format!("{stem}.json")), &rebuild) {
            Ok(r) => Ok(Some(r)),
            Err(Unreadable::Missing) => Ok(None),
            Err(Unreadable::Refused(e)) => Err(e),
        }
    }

    /// The file stem: `parity-<backend>`, or `parity-<backend>-device` for `--device` runs.
    pub fn stem(&self) -> String {
        match self.device {
            Some(_) => format!("parity-{}-device", self.backend),
            None => format!("parity-{}", self.backend),
        }
    }

    /// The closing line on the terminal: which components failed in this run, which earlier
    /// results were kept (and whether they failed), where the report is.
    pub fn summarize(&self, rel_dir: &str) {
        let names = |earlier: bool, pass: Option<bool>| -> Vec<&str> {
            self.components
                .iter()
                .filter(|c| c.from_earlier_run == earlier && pass.is_none_or(|p| c.pass == p))
                .map(|c| c.component.as_str())
                .collect()
        };
        let (ran, failed) = (names(false, None), names(false, Some(false)));
        let report = format!("report {rel_dir}/{}.md", self.stem());
        if failed.is_empty() {
            xtask_base::outln!(
                "parity {}: all {} component(s) of this run pass; {report}",
                self.backend,
                ran.len()
            );
        } else {
            xtask_base::outln!(
                "parity {}: {} of {} component(s) of this run FAIL: {}; {report}",
                self.backend,
                failed.len(),
                ran.len(),
                failed.join(", ")
            );
        }
        let (kept, kept_failed) = (names(true, None), names(true, Some(false)));
        if !kept.is_empty() {
            xtask_base::outln!(
                "  kept from earlier runs (not re-measured): {}{}",
                kept.join(", "),
                if kept_failed.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; of these FAILED when last run: {}",
                        kept_failed.join(", ")
                    )
                }
            );
        }
    }
}

/// The terminal table for one component.
pub fn print_component(c: &ComponentResult) {
    print_component_table(c);
    // Outputs whose gate an override set, grouped by what it did and why.
    let mut overridden: Vec<(String, String, &str)> = Vec::new();
    for o in &c.outputs {
        if let (Some(words), Some(reason)) = (o.gate.override_words(), &o.gate.waiver) {
            match overridden
                .iter_mut()
                .find(|(_, w, r)| *r == reason.as_str() && *w == words)
            {
                Some(entry) => entry.0.push_str(&format!(", {}", o.name)),
                None => overridden.push((o.name.clone(), words, reason)),
            }
        }
    }
    // The reason is the same on every component it covers: said once at the end.
    for (outputs, words, reason) in overridden {
        xtask_base::outln!("      {words} on {outputs} (reason: see the note at the end)");
        xtask_base::ui::warnings::warn(format!("{words}: {reason}"));
    }
}

/// ` w8a16 vs the float golden, QDQ simulation (ORT CPU EP)` for a quantized component.
pub fn quantized_label(c: &ComponentResult) -> String {
    match (&c.precision, &c.stage) {
        (Some(p), Some(stage)) => format!(" {p} vs the float golden, {stage}"),
        (Some(p), None) => format!(" {p} vs the float golden"),
        (None, Some(stage)) => format!(" {stage}"),
        (None, None) => String::new(),
    }
}

fn print_component_table(c: &ComponentResult) {
    let head = xtask_base::ui::verdict(if c.pass { "PASS" } else { "FAIL" }, c.pass);
    xtask_base::outln!(
        "{head}  {} [{}]{}",
        c.component,
        c.backend,
        quantized_label(c)
    );
    if let Some(err) = &c.error {
        xtask_base::outln!("      error: {}", err.replace('\n', "\n      "));
        return;
    }
    // `within_tol` is informational: shown where it can explain something (a failed component,
    // or -v), not as `false` beside every passing fp16 row. The reports always carry it.
    let tol = !c.pass || xtask_base::ui::verbose();
    let tol_cell = |v: &dyn std::fmt::Display| {
        if tol {
            format!(" {v:>10}")
        } else {
            String::new()
        }
    };
    xtask_base::outln!(
        "      {:<16} {:>12} {:>10} {:>12} {:>11} {:>11} {:>10}{}  {}",
        "output",
        "cosine",
        "gate",
        "|y|/|gold|",
        "max_abs",
        "mean_abs",
        "rel_l2",
        tol_cell(&"within_tol"),
        "nan/inf"
    );
    for o in &c.outputs {
        let m = &o.metrics;
        xtask_base::outln!(
            "      {:<16} {:>12} {:>10} {:>12.6} {:>11.3e} {:>11.3e} {:>10.3e}{}  {}/{}",
            o.name,
            m.shown_cosine(),
            o.gate.min_cosine,
            m.norm_ratio,
            m.max_abs_err,
            m.mean_abs_err,
            m.rel_l2_err,
            tol_cell(&m.within_tol),
            m.nan_actual,
            m.inf_actual
        );
        for reason in &o.verdict.reasons {
            xtask_base::outln!(
                "      FAIL {} {}: {reason} (max abs err at {:?})",
                c.component,
                o.name,
                o.max_abs_at
            );
        }
    }
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
