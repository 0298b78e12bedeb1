//! `reports/<model>/precision.{json,md,html}`: every configuration the search measured (bytes,
//! build and run seconds, the actions' error against the float golden), the frontier, the
//! proposal and the recipe lines that apply it. Written after every measurement, so an
//! interrupted search leaves what it measured (`complete: false`).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::search::{Assignment, Measured, Outcome, frontier};
use xtask_base::record::Versioned;
use xtask_base::vocab::Precision;
use xtask_runtime::report::{ToolVersions, md_table};

/// Which chain the configurations ran on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SearchBackend {
    /// Each quantized component's QDQ graph on ORT's CPU EP (fp16 ones in float): fast, the
    /// quantization error alone.
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
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PrecisionReport {
    #[serde(default)]
    pub schema_version: u32,
    pub model: String,
    pub backend: SearchBackend,
    /// The budget: the final actions' largest absolute error against the float golden.
    pub budget: f64,
    pub precisions: Vec<Precision>,
    pub components: Vec<String>,
    pub created_unix: u64,
    pub versions: ToolVersions,
    /// False while the search runs (or after it was interrupted).
    pub complete: bool,
    pub tried: Vec<Measured>,
    /// Indexes into `tried`: the size/error frontier, smallest first.
    pub frontier: Vec<usize>,
    pub proposal: Option<Assignment>,
    /// Index into `tried` of the proposal's measurement.
    pub proposal_index: Option<usize>,
    /// What `--apply` writes: `recipes/<model>/<component>.toml: [quantize] precision = "…"`.
    pub recipe_lines: Vec<String>,
}

/// v1: the first schema.
impl Versioned for PrecisionReport {
    const KIND: &'static str = "precision report";
    const SCHEMA: u32 = 1;
}

impl PrecisionReport {
    /// The report of `outcome` so far.
    #[allow(clippy::too_many_arguments)]
    pub fn of(
        model: &xtask_recipe::recipe::Model,
        backend: SearchBackend,
        budget: f64,
        precisions: &[Precision],
        components: &[String],
        versions: ToolVersions,
        outcome: &Outcome,
        complete: bool,
    ) -> Self {
        let front: Vec<usize> = frontier(&outcome.tried)
            .into_iter()
            .filter_map(|f| outcome.tried.iter().position(|t| std::ptr::eq(t, f)))
            .collect();
        let proposal_index = outcome
            .proposal
            .as_ref()
            .and_then(|p| outcome.tried.iter().position(|t| &t.assignment == p));
        PrecisionReport {
            schema_version: <Self as Versioned>::SCHEMA,
            model: model.file.model.name.clone(),
            backend,
            budget,
            precisions: precisions.to_vec(),
            components: components.to_vec(),
            created_unix: xtask_runtime::report::now_unix(),
            versions,
            complete,
            tried: outcome.tried.clone(),
            frontier: front,
            proposal: outcome.proposal.clone(),
            proposal_index,
            recipe_lines: outcome
                .proposal
                .as_ref()
                .map(|p| super::apply::recipe_lines(model, p))
                .unwrap_or_default(),
        }
    }

    /// Writes the JSON, Markdown and HTML (atomically, each).
    pub fn write(&self, dir: &Path) -> Result<()> {
        let md = self.markdown();
        xtask_base::record::write(&dir.join("precision.json"), self)?;
        xtask_base::atomic::write_atomic(&dir.join("precision.md"), md.as_bytes())?;
        xtask_base::atomic::write_atomic(&dir.join("precision.html"), self.html(&md).as_bytes())
    }

    fn verdict(&self) -> String {
        match (&self.proposal, self.proposal_index.map(|i| &self.tried[i])) {
            (Some(_), Some(m)) => format!(
                "propose {:.2} MB of context binaries ({} of the float bundle's {:.2} MB), actions max |error| {:.3e} within the budget {:.0e} (cosine {:.8})",
                m.bytes as f64 / 1e6,
                percent(m.bytes, self.baseline_bytes()),
                self.baseline_bytes() as f64 / 1e6,
                m.actions_max_abs,
                self.budget,
                m.actions_cosine
            ),
            _ if !self.complete => "incomplete: the search was interrupted; every configuration measured so far is below".into(),
            _ => format!(
                "no configuration is within the budget {:.0e}, not even the float one",
                self.budget
            ),
        }
    }

    fn baseline_bytes(&self) -> u64 {
        self.tried.first().map_or(0, |m| m.bytes)
    }

    pub fn markdown(&self) -> String {
        let mut md = format!(
            "# Precision search: `{}`\n\n{}\n\nChain: {}. Budget: the final actions' largest absolute error against the float golden ≤ {:.0e}. Precisions tried: {}. {}\n\n{}\n",
            self.model,
            self.versions.summary(),
            self.backend.label(),
            self.budget,
            self.precisions
                .iter()
                .map(|p| p.label())
                .collect::<Vec<_>>()
                .join(", "),
            if self.complete {
                ""
            } else {
                "**Incomplete (interrupted).**"
            },
            self.verdict()
        );
        if let Some(p) = &self.proposal {
            let _ = writeln!(md, "\n## Proposal\n");
            md.push_str(&md_table(
                &["component", "precision"],
                self.components
                    .iter()
                    .map(|c| vec![c.clone(), p.get(c).map_or("?", |x| x.label()).to_string()]),
            ));
            let _ = writeln!(
                md,
                "\nApply with `cargo xtask precision --model {} --budget {:e} --apply`, or write:\n\n```toml\n{}\n```",
                self.model,
                self.budget,
                self.recipe_lines.join("\n")
            );
        }
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
                "within budget",
                "frontier",
            ],
            self.tried.iter().enumerate().map(|(i, m)| {
                vec![
                    i.to_string(),
                    m.why.clone(),
                    short(&m.assignment),
                    format!("{:.3}", m.bytes as f64 / 1e6),
                    format!("{:.1}", m.build_seconds),
                    format!("{:.1}", m.run_seconds),
                    match &m.error {
                        Some(e) => format!("FAILED: {e}"),
                        None => format!("{:.3e}", m.actions_max_abs),
                    },
                    format!("{:.8}", m.actions_cosine),
                    if m.within_budget { "yes" } else { "no" }.into(),
                    if self.frontier.contains(&i) {
                        "●"
                    } else {
                        ""
                    }
                    .into(),
                ]
            }),
        ));
        md
    }

    /// The terminal's account: one line per configuration, the verdict, the recipe lines.
    pub fn print(&self, dir: &str) {
        xtask_base::outln!(
            "precision search on {} (budget: actions max |error| <= {:.0e} vs the float golden):",
            self.backend.label(),
            self.budget
        );
        for (i, m) in self.tried.iter().enumerate() {
            xtask_base::outln!(
                "  {i:>2} {:<40} {:>9.3} MB  {}  {}{}",
                short(&m.assignment),
                m.bytes as f64 / 1e6,
                match &m.error {
                    Some(e) => format!("FAILED: {e}"),
                    None => format!(
                        "max |err| {:.3e}  cosine {:.8}",
                        m.actions_max_abs, m.actions_cosine
                    ),
                },
                if m.within_budget { "within" } else { "over" },
                if self.frontier.contains(&i) {
                    "  (frontier)"
                } else {
                    ""
                }
            );
        }
        xtask_base::outln!("{}", self.verdict());
        for line in &self.recipe_lines {
            xtask_base::outln!("{}", line.replace('\n', "  "));
        }
        xtask_base::outln!("report {dir}/precision.html");
    }

    fn html(&self, md: &str) -> String {
        let plot = super::plot::frontier_svg(
            &self.tried,
            &self.frontier,
            self.proposal_index,
            self.budget,
        );
        let kind = if self.proposal.is_some() {
            "pass"
        } else {
            "fail"
        };
        let word = if self.proposal.is_some() {
            "PROPOSED"
        } else {
            "NONE"
        };
        let body = format!(
            "{}<h2>Size against error</h2>\n{plot}\n{}",
            xtask_runtime::report::html::verdict_box(kind, word, &self.verdict(), &[]),
            xtask_runtime::report::html::markdown_body(md)
        );
        xtask_runtime::report::html::html_page(&format!("precision {}", self.model), &body)
    }
}

/// `vision w8a16, llm_split0 fp16, …` with only the quantized ones named (or `all fp16`).
fn short(a: &Assignment) -> String {
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

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "?".into()
    } else {
        format!("{:.1} %", 100.0 * part as f64 / whole as f64)
    }
}
