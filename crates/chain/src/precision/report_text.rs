//! The words of a precision report: the verdict, each configuration's note, and the terminal's
//! account, which opens with the float chain's statement when it misses the budget (the
//! Markdown is `report_md`). A configuration that did not build or run shows `—`
//! and its reason, never a zero or a NaN.

use std::fmt::Write as _;

use super::outcome::{Assignment, BudgetMode, Measured};
use super::report::{PrecisionReport, SearchBackend, Status};

/// `vision w8a16, llm_split0 fp16, …` with only the quantized ones named (or `all fp16`).
pub fn short(a: &Assignment) -> String {
    let q: Vec<String> = a
        .iter()
        .filter(|(_, p)| p.is_quantized())
        .map(|(c, p)| format!("{c} {p}"))
        .collect();
    if q.is_empty() {
        "all fp16".into()
    } else {
        q.join(", ")
    }
}

pub(crate) fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "?".into()
    } else {
        format!("{:.1} %", 100.0 * part as f64 / whole as f64)
    }
}

pub(crate) fn mb(m: &Measured) -> String {
    if m.error.is_some() || m.bytes == 0 {
        "—".into()
    } else {
        format!("{:.3}", m.bytes as f64 / 1e6)
    }
}

pub(crate) fn err(e: f64) -> String {
    if e.is_finite() {
        format!("{e:.3e}")
    } else {
        "—".into()
    }
}

pub(crate) fn cosine(m: &Measured) -> String {
    if m.ok() && m.actions_cosine.is_finite() {
        format!("{:.8}", m.actions_cosine)
    } else {
        "—".into()
    }
}

impl PrecisionReport {
    /// A configuration's note: why it failed, a gate it was measured past, or an error below
    /// the float chain's own.
    pub(crate) fn note(&self, i: usize, m: &Measured) -> String {
        if let Some(e) = &m.error {
            return format!("not measured: {e}");
        }
        let mut notes: Vec<String> = m
            .component_gates
            .iter()
            .filter_map(|g| {
                let gate = g.measured_with.clone()?;
                Some(format!(
                    "{}; measured anyway (--component-gates report, built with min_cosine {})",
                    g.summary(),
                    gate.min_cosine
                        .map_or("as it was".into(), |c| c.to_string())
                ))
            })
            .collect();
        if i > 0 && m.actions_max_abs < self.float_error() {
            notes.push(format!(
                "below the float chain's own error {:.3e}: inside it",
                self.float_error()
            ));
        }
        notes.join("; ")
    }

    /// One sentence: what the search proposes, or why nothing.
    pub fn verdict(&self) -> String {
        let within = match self.asked.budget_mode {
            BudgetMode::Absolute => format!("within the budget {:e}", self.asked.budget),
            BudgetMode::FromFloat => format!(
                "within the float chain's {:.3e} + budget {:e} = {:.3e}",
                self.float_error(),
                self.asked.budget,
                self.limit()
            ),
        };
        let base = self.baseline().map_or(0, |b| b.bytes);
        match (&self.proposal, self.proposed()) {
            (Some(_), (on_search, on_htp)) => {
                let Some(m) = on_search.or(on_htp) else {
                    return "propose (figures missing)".into();
                };
                let figures = match (self.asked.backend, on_search, on_htp) {
                    (SearchBackend::Qdq, q, Some(h)) => format!(
                        "actions max |error| {} on the QDQ simulation and {:.3e} on the HTP (confirmed by one HTP chain)",
                        q.map_or("not measured".into(), |q| format!("{:.3e}", q.actions_max_abs)),
                        h.actions_max_abs
                    ),
                    _ => format!("actions max |error| {:.3e}", m.actions_max_abs),
                };
                let mut s = format!(
                    "propose {:.2} MB of context binaries ({} of the float bundle's {:.2} MB), {figures}, {within} (cosine {:.8})",
                    m.bytes as f64 / 1e6,
                    percent(m.bytes, base),
                    base as f64 / 1e6,
                    m.actions_cosine
                );
                if on_search.is_some_and(|q| q.actions_max_abs < self.float_error()) {
                    let _ = write!(
                        s,
                        "; its error is below the float chain's own {:.3e} on the {}: inside the float chain's own error, not better than float",
                        self.float_error(),
                        self.asked.backend.short()
                    );
                }
                s
            }
            (None, _) => match self.status {
                Status::InProgress => format!(
                    "in progress: {} configuration(s) measured so far",
                    self.tried.len()
                ),
                Status::Interrupted => "incomplete: the search was interrupted; every configuration measured so far is below".into(),
                Status::Complete if self.float.as_ref().is_some_and(|f| f.stopped) => format!(
                    "no proposal: the float chain itself misses the budget ({} > {:e})",
                    err(self.float_error()),
                    self.asked.budget
                ),
                Status::Complete => match &self.htp_confirmation {
                    Some(c) => format!(
                        "no proposal: the QDQ search proposed {} ({}), and the HTP confirmed no configuration within {:.3e}, not even the float bundle",
                        short(&c.proposed),
                        err(c.proposed_search_max_abs),
                        c.limit
                    ),
                    None => format!("no configuration is {within}, not even the float one"),
                },
            },
        }
    }

    /// The terminal's account: the float chain's statement first, one line per configuration,
    /// the HTP confirmation, the verdict, the recipe lines.
    pub fn print(&self, dir: &str) {
        if let Some(n) = &self.float_note {
            xtask_base::outln!(
                "{}",
                xtask_base::ui::verdict("FLOAT CHAIN OVER BUDGET", false)
            );
            xtask_base::outln!("{n}");
        }
        xtask_base::outln!(
            "precision search on {} (budget {:e}: {}):",
            self.asked.backend.label(),
            self.asked.budget,
            self.asked.budget_mode.describe()
        );
        for (i, m) in self.tried.iter().enumerate() {
            let figures = match &m.error {
                Some(_) => "—".to_string(),
                None => format!("max |err| {}  cosine {}", err(m.actions_max_abs), cosine(m)),
            };
            let note = self.note(i, m);
            xtask_base::outln!(
                "  {i:>2} {:<40} {:>9} MB  {figures}  {}{}{}",
                short(&m.assignment),
                mb(m),
                match (m.ok(), m.within_budget) {
                    (false, _) => "",
                    (true, true) => "within",
                    (true, false) => "over",
                },
                if self.frontier.contains(&i) {
                    "  (frontier)"
                } else {
                    ""
                },
                if note.is_empty() {
                    String::new()
                } else {
                    format!("  [{note}]")
                }
            );
        }
        if let Some(c) = &self.htp_confirmation {
            xtask_base::outln!("HTP confirmation (limit {:.3e}):", c.limit);
            for r in &c.runs {
                xtask_base::outln!(
                    "  {:<40} QDQ {}  HTP {}  {}{}",
                    short(&r.measured.assignment),
                    r.search_backend_max_abs.map_or("—".into(), err),
                    match &r.measured.error {
                        Some(e) => format!("— ({e})"),
                        None => err(r.measured.actions_max_abs),
                    },
                    if r.measured.within_budget {
                        "within"
                    } else {
                        "over"
                    },
                    r.undone
                        .as_ref()
                        .map(|u| format!("  (undone: {u})"))
                        .unwrap_or_default()
                );
            }
        }
        xtask_base::outln!("{}", self.verdict());
        for line in &self.recipe_lines {
            xtask_base::outln!("{}", line.replace('\n', "  "));
        }
        xtask_base::outln!("report {dir}/precision.html");
    }
}
