//! The chain run on the terminal: the boundary table, actions, latency (on a board: the
//! device's execute times), ungated boundaries and failures, and where the full report is.

use super::report::RunReport;
use xtask_base::vocab::Verdict;
use xtask_runtime::report::fmt_cosine;

impl RunReport {
    /// Prints the report; `dir` is the reports folder as the user should see it (None:
    /// `--no-report`, nothing was written).
    pub fn print(&self, dir: Option<&str>) {
        self.print_boundaries();
        self.print_actions();
        match &self.run.device {
            Some(d) => d.print(),
            None => self.print_latency(),
        }
        for u in &self.ungated {
            xtask_base::outln!("UNGATED {u}");
        }
        for f in &self.failures {
            xtask_base::outln!("FAIL {f}");
        }
        self.print_attribution();
        for s in &self.next_steps {
            xtask_base::outln!("hint: {s}");
        }
        let written = match dir {
            Some(dir) => format!("report {dir}/{}.html", self.stem()),
            None => "no report written (--no-report)".to_string(),
        };
        xtask_base::outln!(
            "run {}{}: {}; {written}",
            self.run.backend,
            if self.run.device.is_some() {
                " on the device"
            } else {
                ""
            },
            xtask_base::ui::verdict(self.verdict().word(), self.pass),
        );
    }

    /// What ran where, and every boundary: chain inputs, golden inputs, the introduced share.
    fn print_boundaries(&self) {
        xtask_base::outln!(
            "chain on {} ({}){}:",
            self.run.backend,
            self.run.mode,
            match &self.run.htp {
                Some(h) if h.emulated => ", HTP emulated: emulator figures".to_string(),
                Some(h) => format!(", {}", h.latency_label()),
                None => String::new(),
            }
        );
        xtask_base::outln!("  {}", self.run.layout.summary());
        if !self.run.precisions.is_empty() {
            xtask_base::outln!(
                "  quantized: {} (against the float golden{})",
                self.run.precisions_summary(),
                if self.run.backend == xtask_base::vocab::BackendKind::Cpu {
                    "; QDQ simulation on ORT's CPU EP"
                } else {
                    ""
                }
            );
        }
        xtask_base::outln!(
            "  {:<40} {:>12} {:>11} {:>14} {:>10}",
            "boundary",
            "cosine",
            "max_abs",
            "golden-inputs",
            "introduced"
        );
        for b in &self.run.boundaries {
            let (cos, max) = b.metrics.as_ref().map_or(("-".into(), "-".into()), |m| {
                (m.shown_cosine(), format!("{:.3e}", m.max_abs_err))
            });
            let forced = b
                .golden_inputs
                .as_ref()
                .map_or("-".into(), |m| m.shown_cosine());
            let share = b
                .introduced
                .map_or("-".into(), |s| format!("{:.0}%", s * 100.0));
            let mark = match b.status {
                Verdict::Pass => String::new(),
                _ => format!("  {}", b.result_word()),
            };
            xtask_base::outln!(
                "  {:<40} {cos:>12} {max:>11} {forced:>14} {share:>10}{mark}",
                b.name
            );
        }
    }

    fn print_actions(&self) {
        if let (Some(a), Some(cos)) = (self.actions(), self.actions_cosine) {
            xtask_base::outln!(
                "actions: {}, cosine {}",
                super::report_md::actions_figure(a),
                fmt_cosine(cos)
            );
        }
    }

    /// Latency percentiles per component and end to end, the host's share and peak memory.
    fn print_latency(&self) {
        xtask_base::outln!(
            "  {:<16} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "latency (ms)",
            "min",
            "p50",
            "p90",
            "p99",
            "max"
        );
        for l in &self.run.latency {
            xtask_base::outln!(
                "  {:<16} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
                l.name,
                l.min_ms,
                l.p50_ms,
                l.p90_ms,
                l.p99_ms,
                l.max_ms
            );
        }
        xtask_base::outln!(
            "host share of end-to-end: {:.1}%, peak RSS {:.0} MB",
            self.run.host_fraction * 100.0,
            self.run.peak_rss_mb
        );
    }

    /// `--attribute`: which component to fix first.
    fn print_attribution(&self) {
        let Some(a) = &self.run.attribution else {
            return;
        };
        xtask_base::outln!(
            "which component to fix first ({} what-if chains, {:.0} ms): error of {} removed by running it in fp32:",
            a.rows.len(),
            a.took_ms,
            a.boundary
        );
        for (i, r) in a.rows.iter().enumerate() {
            xtask_base::outln!(
                "  {}. {:<20} {:>7.1}%",
                i + 1,
                r.component,
                r.removed * 100.0
            );
        }
    }
}
