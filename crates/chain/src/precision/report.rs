//! `reports/<model>/precision.{json,md,html}`: the float chain's own error first (and, when it
//! misses the budget, that statement at the top of every rendering with its attribution), every
//! configuration the search measured (bytes, build and run seconds, the actions' error against
//! the float golden; a failed one with its reason), the frontier, the HTP confirmation of a
//! `--backend qdq` proposal, the proposal and the recipe lines that apply it. Written after
//! every measurement (`status: in-progress`), at the end (`complete`) and, when the search is
//! interrupted, once more by the interrupt's answer (`interrupted`). The renderings are in
//! `report_text`.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::apply::GateLine;
use super::gates::ComponentGates;
use super::outcome::{
    Assignment, BudgetMode, Confirmation, FloatCheck, Measured, Outcome, frontier,
};
use xtask_base::record::Versioned;
use xtask_base::vocab::Precision;
use xtask_runtime::report::ToolVersions;

/// Which chain the configurations ran on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SearchBackend {
    /// Each quantized component's QDQ graph on ORT's CPU EP (fp16 ones in float): fast, the
    /// quantization error alone; the proposal is confirmed on the HTP.
    Qdq,
    /// Every component's context binary on the HTP (emulated here): the real numbers.
    Htp,
}

impl SearchBackend {
    pub fn label(self) -> &'static str {
        match self {
            SearchBackend::Qdq => "QDQ simulation (ORT CPU EP; fp16 components in float)",
            SearchBackend::Htp => "HTP context binaries",
        }
    }

    pub fn short(self) -> &'static str {
        match self {
            SearchBackend::Qdq => "QDQ",
            SearchBackend::Htp => "HTP",
        }
    }
}

/// Where the search stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Still measuring: the report is rewritten after every measurement.
    InProgress,
    /// Ended (with a proposal or without one).
    Complete,
    /// Stopped by SIGINT or SIGTERM: what was measured before it is kept.
    Interrupted,
}

impl Status {
    pub fn heading(self) -> &'static str {
        match self {
            Status::InProgress => "In progress",
            Status::Complete => "Complete",
            Status::Interrupted => "Incomplete (interrupted)",
        }
    }
}

/// What the search was asked (the same in every report it writes).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Asked {
    pub model: String,
    pub backend: SearchBackend,
    /// The budget: the final actions' largest absolute error against the float golden, or
    /// with `--budget-from-float` the error added over the float chain.
    pub budget: f64,
    pub budget_mode: BudgetMode,
    pub component_gates: ComponentGates,
    pub precisions: Vec<Precision>,
    pub components: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PrecisionReport {
    #[serde(default)]
    pub schema_version: u32,
    #[serde(flatten)]
    pub asked: Asked,
    pub created_unix: u64,
    pub versions: ToolVersions,
    pub status: Status,
    /// `status == complete` (kept for readers of schema 1).
    pub complete: bool,
    /// The float chain on the search's backend: its error, the limit it set, whether the
    /// search stopped there.
    pub float: Option<FloatCheck>,
    /// What the top of every rendering says about the float chain when it misses the budget.
    pub float_note: Option<String>,
    pub tried: Vec<Measured>,
    /// Indexes into `tried`: the size/error frontier, smallest first.
    pub frontier: Vec<usize>,
    /// The configuration proposed (on `--backend qdq`: the one the HTP confirmed).
    pub proposal: Option<Assignment>,
    /// Index into `tried` of the proposal's measurement on the search's backend (None when it
    /// was only measured on the HTP).
    pub proposal_index: Option<usize>,
    /// The HTP confirmation of a `--backend qdq` proposal: each HTP run (configuration, HTP
    /// actions error, within the limit or not) and the configuration confirmed.
    pub htp_confirmation: Option<Confirmation>,
    /// What `--apply` writes: `recipes/<model>/<component>.toml: [quantize] precision = "…"`
    /// (and a gate with its reason for a component measured past its own).
    pub recipe_lines: Vec<String>,
}

/// v2: the float chain's check, `status`, the budget mode, component gates and the HTP
/// confirmation; `complete` kept.
impl Versioned for PrecisionReport {
    const KIND: &'static str = "precision report";
    const SCHEMA: u32 = 2;
}

impl PrecisionReport {
    /// The report of `outcome` so far.
    pub fn of(
        model: &xtask_recipe::recipe::Model,
        asked: &Asked,
        versions: ToolVersions,
        outcome: &Outcome,
        status: Status,
    ) -> Self {
        let recipe_lines = outcome
            .proposal
            .as_ref()
            .map(|p| super::apply::recipe_lines(model, p, &gate_lines(asked, outcome)))
            .unwrap_or_default();
        Self::with_lines(asked, versions, outcome, status, recipe_lines)
    }

    /// The report of `outcome` so far, with the recipe lines that apply its proposal.
    pub(crate) fn with_lines(
        asked: &Asked,
        versions: ToolVersions,
        outcome: &Outcome,
        status: Status,
        recipe_lines: Vec<String>,
    ) -> Self {
        let front: Vec<usize> = frontier(&outcome.tried)
            .into_iter()
            .filter_map(|f| outcome.tried.iter().position(|t| std::ptr::eq(t, f)))
            .collect();
        let proposal_index = outcome.proposal.as_ref().and_then(|p| {
            outcome
                .tried
                .iter()
                .position(|t| &t.assignment == p && t.ok())
        });
        PrecisionReport {
            schema_version: <Self as Versioned>::SCHEMA,
            asked: asked.clone(),
            created_unix: xtask_runtime::report::now_unix(),
            versions,
            status,
            complete: status == Status::Complete,
            float_note: float_note(asked, outcome),
            float: outcome.float.clone(),
            tried: outcome.tried.clone(),
            frontier: front,
            proposal: outcome.proposal.clone(),
            proposal_index,
            htp_confirmation: outcome.confirmation.clone(),
            recipe_lines,
        }
    }

    /// Writes the JSON, Markdown and HTML (atomically, each).
    pub fn write(&self, dir: &Path) -> Result<()> {
        let md = self.markdown();
        xtask_base::record::write(&dir.join("precision.json"), self)?;
        xtask_base::atomic::write_atomic(&dir.join("precision.md"), md.as_bytes())?;
        xtask_base::atomic::write_atomic(&dir.join("precision.html"), self.html(&md).as_bytes())
    }

    pub(crate) fn baseline(&self) -> Option<&Measured> {
        self.tried.first()
    }

    /// The float chain's own error on the search's backend (NaN before it was measured).
    pub(crate) fn float_error(&self) -> f64 {
        self.float.as_ref().map_or(f64::NAN, |f| f.actions_max_abs)
    }

    /// The limit every configuration was judged by.
    pub(crate) fn limit(&self) -> f64 {
        self.float.as_ref().map_or(self.asked.budget, |f| f.limit)
    }

    /// The proposal's measurement on the search's backend, and its HTP run when confirmed.
    pub(crate) fn proposed(&self) -> (Option<&Measured>, Option<&Measured>) {
        let on_search = self.proposal_index.map(|i| &self.tried[i]);
        let on_htp = self
            .htp_confirmation
            .as_ref()
            .and_then(|c| c.confirmed_run())
            .map(|r| &r.measured);
        (on_search, on_htp)
    }

    fn html(&self, md: &str) -> String {
        let limit_label = match self.asked.budget_mode {
            BudgetMode::Absolute => format!("budget {:.0e}", self.asked.budget),
            BudgetMode::FromFloat => format!("float + budget {:.3e}", self.limit()),
        };
        let plot = super::plot::frontier_svg(
            &self.tried,
            &self.frontier,
            self.proposal_index,
            self.limit(),
            &limit_label,
        );
        let (kind, word) = match (&self.proposal, self.status) {
            (Some(_), _) => ("pass", "PROPOSED"),
            (None, Status::InProgress) => ("note", "IN PROGRESS"),
            (None, Status::Interrupted) => ("note", "INTERRUPTED"),
            (None, Status::Complete) if self.float.as_ref().is_some_and(|f| f.stopped) => {
                ("fail", "FLOAT OVER BUDGET")
            }
            (None, Status::Complete) => ("fail", "NONE"),
        };
        let mut notes = Vec::new();
        if let Some(n) = &self.float_note {
            notes.push(n.clone());
        }
        let body = format!(
            "{}<h2>Size against error</h2>\n{plot}\n{}",
            xtask_runtime::report::html::verdict_box(kind, word, &self.verdict(), &notes),
            xtask_runtime::report::html::markdown_body(md)
        );
        xtask_runtime::report::html::html_page(&format!("precision {}", self.asked.model), &body)
    }
}

/// What the top of every rendering says about the float chain when it misses the budget (or
/// could not be measured); None when it meets the budget.
pub fn float_note(asked: &Asked, outcome: &Outcome) -> Option<String> {
    let float = outcome.float.as_ref()?;
    let base = outcome.tried.first()?;
    if let Some(e) = &base.error {
        return Some(format!(
            "The float chain could not be measured on the {}: {e}. The search stopped here (exit 1).",
            asked.backend.label()
        ));
    }
    if float.within_budget {
        return None;
    }
    let attribution = match (&base.attribution, asked.backend) {
        (Some(a), _) => {
            let rows: Vec<String> = a
                .rows
                .iter()
                .take(3)
                .map(|r| format!("`{}` {:.1} %", r.component, r.removed * 100.0))
                .collect();
            format!(
                " Which component contributes most (each run alone in fp32 on ORT's CPU EP, the share of the normalized actions' error it removes): {}.",
                rows.join(", ")
            )
        }
        (None, SearchBackend::Qdq) => {
            " (No attribution: on the QDQ backend the float chain is ORT's fp32 chain itself.)"
                .into()
        }
        (None, SearchBackend::Htp) => String::new(),
    };
    let then = match asked.budget_mode {
        BudgetMode::Absolute => format!(
            "The search stopped here (exit 1): no configuration can be within a budget the float chain itself misses. Raise the budget, or rerun with `--budget-from-float` to read it as error added over the float chain (a configuration then passes at ≤ {:.3e} + {:e}).",
            float.actions_max_abs, asked.budget
        ),
        BudgetMode::FromFloat => format!(
            "With `--budget-from-float` the budget is read as error added over it: a configuration passes when its error ≤ {:.3e} + {:e} = {:.3e}. Every error below {:.3e} is inside the float chain's own error, not a measured improvement.",
            float.actions_max_abs, asked.budget, float.limit, float.actions_max_abs
        ),
    };
    Some(format!(
        "The float chain misses the budget: on the {} the float chain (every component fp16) has actions max |error| {:.3e} against the float golden, over the budget {:e} by itself.{attribution} {then}",
        asked.backend.label(),
        float.actions_max_abs,
        asked.budget
    ))
}

/// The gate `--apply` writes for each proposed component that was measured past its own
/// (`--component-gates report`), with the measured chain error as its reason.
pub fn gate_lines(asked: &Asked, outcome: &Outcome) -> BTreeMap<String, GateLine> {
    let Some(proposal) = &outcome.proposal else {
        return BTreeMap::new();
    };
    let on_search = outcome
        .tried
        .iter()
        .find(|t| &t.assignment == proposal && t.ok());
    let on_htp = outcome
        .confirmation
        .as_ref()
        .and_then(|c| c.confirmed_run())
        .map(|r| &r.measured);
    let mut out = BTreeMap::new();
    let all = outcome.tried.iter().chain(
        outcome
            .confirmation
            .iter()
            .flat_map(|c| c.runs.iter().map(|r| &r.measured)),
    );
    for g in all.flat_map(|m| &m.component_gates) {
        let (Some(gate), Some(&p)) = (g.measured_with.clone(), proposal.get(&g.component)) else {
            continue;
        };
        if p != g.precision || out.contains_key(&g.component) {
            continue;
        }
        let mut chain = Vec::new();
        if let Some(m) = on_search {
            chain.push(format!(
                "{:.3e} on the {}",
                m.actions_max_abs,
                match asked.backend {
                    SearchBackend::Qdq => "QDQ simulation",
                    SearchBackend::Htp => "HTP",
                }
            ));
        }
        if let Some(m) = on_htp.filter(|_| asked.backend != SearchBackend::Htp) {
            chain.push(format!("{:.3e} on the HTP", m.actions_max_abs));
        }
        let reason = format!(
            "set by `cargo xtask precision --component-gates report`: the {} measured cosine {:.8} (`{}`) under the gate {}; the chain with it: actions max |error| {} against the float golden (budget {:e}{})",
            g.stage,
            g.cosine,
            g.output,
            g.min_cosine,
            if chain.is_empty() {
                "not measured".to_string()
            } else {
                chain.join(", ")
            },
            asked.budget,
            match asked.budget_mode {
                BudgetMode::Absolute => "",
                BudgetMode::FromFloat => " over the float chain",
            }
        );
        out.insert(g.component.clone(), GateLine { gate, reason });
    }
    out
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
