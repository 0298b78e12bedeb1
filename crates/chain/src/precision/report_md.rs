//! A precision report's Markdown (the HTML page carries it): the float chain's statement at
//! the top when it misses the budget, the status (in progress, complete, or incomplete after an
//! interruption), the verdict, the HTP confirmation, the proposal, the components that failed
//! their own gate, and every configuration measured.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::outcome::BudgetMode;
use super::report::{PrecisionReport, SearchBackend, Status};
use super::report_text::{cosine, err, mb, short};
use xtask_runtime::report::md_table;

impl PrecisionReport {
    pub fn markdown(&self) -> String {
        let a = &self.asked;
        let mut md = format!("# Precision search: `{}`\n\n", a.model);
        if let Some(n) = &self.float_note {
            let _ = writeln!(md, "**{n}**\n");
        }
        let _ = writeln!(
            md,
            "Status: **{}**{}\n\n{}\n\nChain: {}. Budget: {:e} ({}). Component gates: {}. Precisions tried: {}.\n\n{}",
            self.status.heading(),
            match self.status {
                Status::InProgress => format!(
                    " ({} configuration(s) measured so far; this report is rewritten after each)",
                    self.tried.len()
                ),
                _ => String::new(),
            },
            self.versions.summary(),
            a.backend.label(),
            a.budget,
            a.budget_mode.describe(),
            a.component_gates.label(),
            a.precisions
                .iter()
                .map(|p| p.label())
                .collect::<Vec<_>>()
                .join(", "),
            self.verdict()
        );
        self.confirmation_md(&mut md);
        self.proposal_md(&mut md);
        self.gates_md(&mut md);
        self.tried_md(&mut md);
        md
    }

    /// Every configuration measured: a failed one with `—` and its reason in `note`.
    fn tried_md(&self, md: &mut String) {
        let _ = writeln!(md, "\n## Every configuration measured\n");
        md.push_str(&md_table(
            &[
                "#",
                "why",
                "precisions",
                "binaries MB",
                "build s",
                "run s",
                "actions max |err|",
                "actions cosine",
                "within",
                "frontier",
                "note",
            ],
            self.tried.iter().enumerate().map(|(i, m)| {
                vec![
                    i.to_string(),
                    m.why.clone(),
                    short(&m.assignment),
                    mb(m),
                    format!("{:.1}", m.build_seconds),
                    if m.ok() {
                        format!("{:.1}", m.run_seconds)
                    } else {
                        "—".into()
                    },
                    if m.ok() {
                        err(m.actions_max_abs)
                    } else {
                        "—".into()
                    },
                    cosine(m),
                    match (m.ok(), m.within_budget) {
                        (false, _) => "—",
                        (true, true) => "yes",
                        (true, false) => "no",
                    }
                    .into(),
                    if self.frontier.contains(&i) {
                        "●"
                    } else {
                        ""
                    }
                    .into(),
                    self.note(i, m),
                ]
            }),
        ));
    }

    fn confirmation_md(&self, md: &mut String) {
        let Some(c) = &self.htp_confirmation else {
            return;
        };
        let _ = writeln!(
            md,
            "\n## HTP confirmation\n\nThe QDQ search proposed {} (actions max |error| {} on the QDQ simulation, which runs fp16 components in float). Before it is proposed the HTP runs exactly that configuration; over the limit {:.3e} ({}), the search backs off on the HTP, undoing one kept change at a time (the one that saves the fewest bytes per unit of the error it added first) and running the HTP chain again.\n",
            short(&c.proposed),
            err(c.proposed_search_max_abs),
            c.limit,
            match self.asked.budget_mode {
                BudgetMode::Absolute => "the budget".to_string(),
                BudgetMode::FromFloat => format!(
                    "the HTP float chain's {} + budget",
                    c.htp_float
                        .as_ref()
                        .map_or("—".into(), |f| err(f.actions_max_abs))
                ),
            }
        );
        md.push_str(&md_table(
            &[
                "#",
                "configuration",
                "undone",
                "QDQ max |err|",
                "HTP max |err|",
                "HTP cosine",
                "within the limit",
            ],
            c.runs.iter().enumerate().map(|(i, r)| {
                let m = &r.measured;
                vec![
                    i.to_string(),
                    short(&m.assignment),
                    r.undone.clone().unwrap_or_default(),
                    r.search_backend_max_abs.map_or("not measured".into(), err),
                    match &m.error {
                        Some(e) => format!("— ({e})"),
                        None => err(m.actions_max_abs),
                    },
                    cosine(m),
                    if m.within_budget { "yes" } else { "no" }.into(),
                ]
            }),
        ));
        let _ = writeln!(
            md,
            "\n{}",
            match c.confirmed_run() {
                Some(r) => format!(
                    "Confirmed on the HTP: {} (HTP {}, QDQ {}).",
                    short(&r.measured.assignment),
                    err(r.measured.actions_max_abs),
                    r.search_backend_max_abs.map_or("not measured".into(), err)
                ),
                None => "Nothing confirmed on the HTP: not even the float bundle is within the limit there.".into(),
            }
        );
    }

    fn proposal_md(&self, md: &mut String) {
        let Some(p) = &self.proposal else {
            return;
        };
        let _ = writeln!(md, "\n## Proposal\n");
        md.push_str(&md_table(
            &["component", "precision"],
            self.asked
                .components
                .iter()
                .map(|c| vec![c.clone(), p.get(c).map_or("?", |x| x.label()).to_string()]),
        ));
        let (on_search, on_htp) = self.proposed();
        let mut figures = Vec::new();
        if let Some(m) = on_search {
            figures.push(format!(
                "{} {}",
                self.asked.backend.short(),
                err(m.actions_max_abs)
            ));
        }
        if let Some(m) = on_htp.filter(|_| self.asked.backend != SearchBackend::Htp) {
            figures.push(format!("HTP {}", err(m.actions_max_abs)));
        }
        let _ = writeln!(
            md,
            "\nActions max |error| against the float golden: {}.\n\nApply with `cargo xtask precision --model {} --budget {:e} --apply` (the same flags), or write:\n\n```toml\n{}\n```",
            figures.join(" · "),
            self.asked.model,
            self.asked.budget,
            self.recipe_lines.join("\n")
        );
    }

    fn gates_md(&self, md: &mut String) {
        let mut seen = BTreeSet::new();
        let gates: Vec<_> = self
            .tried
            .iter()
            .chain(
                self.htp_confirmation
                    .iter()
                    .flat_map(|c| c.runs.iter().map(|r| &r.measured)),
            )
            .flat_map(|m| &m.component_gates)
            .filter(|g| seen.insert((g.component.clone(), g.precision)))
            .collect();
        if gates.is_empty() {
            return;
        }
        let _ = writeln!(
            md,
            "\n## Components that failed their own gate\n\nEach quantized component is gated at its CPU stage (its QDQ simulation against the float golden) by `[quantize.gates.<precision>]`, else the precision's default. With `--component-gates enforce` (the default) a component that fails it is not measured in the chain; with `--component-gates report` it is built with its gate at the measured value, measured in the chain, and `--apply` writes that gate with the chain's error as the reason.\n"
        );
        md.push_str(&md_table(
            &[
                "component",
                "precision",
                "stage",
                "output",
                "cosine",
                "gate",
                "in the chain",
            ],
            gates.iter().map(|g| {
                vec![
                    g.component.clone(),
                    g.precision.to_string(),
                    g.stage.clone(),
                    g.output.clone(),
                    format!("{:.8}", g.cosine),
                    g.min_cosine.to_string(),
                    match &g.measured_with {
                        Some(w) => format!(
                            "measured anyway, built with min_cosine {}",
                            w.min_cosine.map_or("as it was".into(), |c| c.to_string())
                        ),
                        None => "not measured (`--component-gates report` measures it)".into(),
                    },
                ]
            }),
        ));
    }
}
