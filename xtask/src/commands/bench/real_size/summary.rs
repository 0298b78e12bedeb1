//! The summary of `bench real-size`, written after every stage (an interrupted run keeps what
//! it measured) as `bench-real-size-<precision>.json` and `.md` in the project folder: per
//! stage its command, exit code, wall and CPU seconds, peak RSS (the tool's, its largest
//! child's, the whole tree's) and bytes on disk; the components' HTP parity cosines with their
//! gates and verdicts; the chain's actions error against its gate; the total against a hosted
//! runner's 6 hours.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::measure::{Measured, minutes};

/// A GitHub-hosted job stops after 6 hours.
pub const HOSTED_RUNNER_S: f64 = 6.0 * 3600.0;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub schema_version: u32,
    pub model: String,
    pub precision: String,
    /// `resident` or `one-at-a-time`: how the chain run held its sessions.
    pub sessions: String,
    /// The tool that measured (its identity) and the machine.
    pub xtask: String,
    pub machine: String,
    pub stages: Vec<StageResult>,
    /// The components' emulated HTP parity, each output against its gate.
    pub htp_parity: Vec<OutputFigure>,
    /// The whole chain on the HTP against the float golden.
    pub chain: Option<ChainFigure>,
    /// Each component's built context binary, in bytes.
    pub binaries: Vec<(String, u64)>,
    /// `complete`, `in progress`, `interrupted` or `failed at <stage>`.
    pub state: String,
}

impl Summary {
    pub const SCHEMA: u32 = 1;

    /// Total wall seconds of the stages that ran in this run and the ones kept from before.
    pub fn total_wall_s(&self) -> f64 {
        self.stages.iter().map(|s| s.measured.wall_s).sum()
    }

    pub fn peak_rss_mb(&self) -> f64 {
        self.stages
            .iter()
            .map(|s| s.measured.tree_peak_rss_mb)
            .fold(0.0, f64::max)
    }

    pub fn stage(&self, name: &str) -> Option<&StageResult> {
        self.stages.iter().find(|s| s.name == name)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StageResult {
    pub name: String,
    /// The command, as `cargo xtask …` (with `--root DIR` before it).
    pub command: String,
    pub measured: Measured,
    /// Bytes on disk of the project's outputs after the stage (ctx/, reports/, dist/).
    pub disk_bytes: u64,
    /// The estimate shown before it ran, in seconds.
    pub estimate_s: Option<f64>,
    /// Kept from an earlier run (its inputs unchanged since): not run again.
    pub kept_from_earlier_run: bool,
    /// What the stage concluded, in a few words (`PASS`, `FAIL: …`, `7 binaries, 4.6 GB`).
    pub outcome: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OutputFigure {
    pub component: String,
    pub output: String,
    pub precision: String,
    pub cosine: f64,
    pub gate: f64,
    pub gate_source: String,
    pub verdict: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChainFigure {
    pub verdict: String,
    pub actions_max_abs_err: Option<f64>,
    pub actions_gate: Option<f64>,
    pub actions_gate_source: Option<String>,
    pub actions_cosine: Option<f64>,
    /// The chain run's own peak RSS and how it held its sessions.
    pub peak_rss_mb: f64,
    pub mode: String,
    pub failures: Vec<String>,
    /// Every boundary's cosine, in chain order.
    pub boundaries: Vec<(String, f64)>,
}

pub fn paths(dir: &Path, precision: &str) -> (PathBuf, PathBuf) {
    let stem = format!("bench-real-size-{precision}");
    (
        dir.join(format!("{stem}.json")),
        dir.join(format!("{stem}.md")),
    )
}

pub fn read(dir: &Path, precision: &str) -> Option<Summary> {
    let (json, _) = paths(dir, precision);
    let bytes = std::fs::read(json).ok()?;
    serde_json::from_slice::<Summary>(&bytes)
        .ok()
        .filter(|s| s.schema_version == Summary::SCHEMA)
}

pub fn write(dir: &Path, s: &Summary) -> Result<()> {
    let (json, md) = paths(dir, &s.precision);
    xtask_base::atomic::write_atomic(&json, &serde_json::to_vec_pretty(s)?)?;
    xtask_base::atomic::write_atomic(&md, markdown(s).as_bytes())?;
    Ok(())
}

fn gb(bytes: u64) -> String {
    format!("{:.2} GB", bytes as f64 / 1e9)
}

/// The summary as the Markdown table docs/real-size.md quotes.
pub fn markdown(s: &Summary) -> String {
    let mut md = format!(
        "# bench real-size: `{}` at {} ({})\n\nxtask {} · {} · chain sessions: {}\n\n",
        s.model, s.precision, s.state, s.xtask, s.machine, s.sessions
    );
    let total = s.total_wall_s();
    let _ = writeln!(
        md,
        "Total wall {} ({:.0} s) against a hosted runner's 6 h: {}; peak RSS of any stage's process tree {:.1} GB.\n",
        minutes(total),
        total,
        if total <= HOSTED_RUNNER_S {
            format!("fits, {} left", minutes(HOSTED_RUNNER_S - total))
        } else {
            format!("over by {}", minutes(total - HOSTED_RUNNER_S))
        },
        s.peak_rss_mb() / 1024.0
    );
    md.push_str("| stage | outcome | wall | CPU | tool peak RSS | largest child peak | tree peak | on disk after | estimate |\n|---|---|---|---|---|---|---|---|---|\n");
    for st in &s.stages {
        let m = &st.measured;
        let _ = writeln!(
            md,
            "| {}{} | {} | {:.0} s | {:.0} s | {:.0} MB | {:.0} MB | {:.0} MB | {} | {} |",
            st.name,
            if st.kept_from_earlier_run {
                " (earlier run)"
            } else {
                ""
            },
            st.outcome,
            m.wall_s,
            m.cpu_s,
            m.tool_peak_rss_mb,
            m.largest_child_peak_rss_mb,
            m.tree_peak_rss_mb,
            gb(st.disk_bytes),
            st.estimate_s.map_or("-".into(), minutes)
        );
    }
    for st in &s.stages {
        let _ = writeln!(md, "\n- {}: `{}`", st.name, st.command);
    }
    if !s.binaries.is_empty() {
        md.push_str("\n## Context binaries\n\n| component | bytes |\n|---|---|\n");
        for (c, b) in &s.binaries {
            let _ = writeln!(md, "| {c} | {b} ({}) |", gb(*b));
        }
    }
    if !s.htp_parity.is_empty() {
        md.push_str("\n## HTP parity (emulated) against the float golden\n\n| component | precision | output | cosine | gate | verdict |\n|---|---|---|---|---|---|\n");
        for o in &s.htp_parity {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {:.8} | {} ({}) | {} |",
                o.component, o.precision, o.output, o.cosine, o.gate, o.gate_source, o.verdict
            );
        }
    }
    if let Some(c) = &s.chain {
        let _ = writeln!(
            md,
            "\n## The chain on the HTP (emulated) against the float golden\n\nVerdict **{}** · actions max abs error {} (gate {}{}) · actions cosine {} · peak RSS {:.1} GB ({})\n",
            c.verdict,
            c.actions_max_abs_err
                .map_or("-".into(), |e| format!("{e:.3e}")),
            c.actions_gate.map_or("-".into(), |g| format!("{g:e}")),
            c.actions_gate_source
                .as_deref()
                .map_or(String::new(), |s| format!(", {s}")),
            c.actions_cosine.map_or("-".into(), |x| format!("{x:.8}")),
            c.peak_rss_mb / 1024.0,
            c.mode
        );
        for f in &c.failures {
            let _ = writeln!(md, "- FAIL {f}");
        }
        md.push_str("\n| boundary | cosine |\n|---|---|\n");
        for (b, cos) in &c.boundaries {
            let _ = writeln!(md, "| {b} | {cos:.8} |");
        }
    }
    md
}
