//! The figures the card shows from the bundled reports: the HTP parity cosines and the chain
//! run's verdict, actions error and latency. Read by `package` (which writes the card) and by
//! `verify`/`fetch` (which render it again to check the bundled one).

use xtask_base::vocab::BackendKind;
use xtask_chain::chain::report::RunReport;
use xtask_parity::parity::report::ParityReport;

/// The run reports the card may show, most telling first: the first the model has is used.
pub const RUN_BACKENDS: [BackendKind; 3] = [BackendKind::Htp, BackendKind::Cpu, BackendKind::Ort];

/// HTP parity figures the card shows (from the bundle's `parity-htp.json`).
#[derive(Debug, Clone, Default)]
pub struct HtpFigures {
    pub emulated: Option<bool>,
    pub cosines: Vec<(String, Vec<(String, f64)>)>,
}

/// The chain run the card shows (a bundle's `run-<backend>.json`): its verdict, the actions'
/// error against their gate, and the latency.
#[derive(Debug, Clone)]
pub struct LatencyFigures {
    pub backend: BackendKind,
    pub emulated: Option<bool>,
    /// Ran on a board over ssh (device figures), not this host's emulator.
    pub on_device: bool,
    pub rows: Vec<(String, f64, f64)>,
    pub actions_max_abs_err: Option<f64>,
    pub verdict: xtask_base::vocab::Verdict,
    /// `max abs error 2.4e-3 (gate 1e-2, …): PASS`, the run report's own words.
    pub actions: Option<String>,
    pub failures: Vec<String>,
    /// The quantized components the chain ran with (`llm_split0 w8a16, …`).
    pub precisions: String,
}

/// The cosine of every output of every component the HTP parity report measured.
pub fn htp_figures(report: &ParityReport) -> HtpFigures {
    let cosines = report
        .components
        .iter()
        .map(|c| {
            let outs = c
                .outputs
                .iter()
                .map(|o| (o.name.clone(), o.metrics.cosine))
                .collect();
            (c.component.clone(), outs)
        })
        .collect();
    HtpFigures {
        emulated: report.htp_emulated,
        cosines,
    }
}

/// The chain run's latency per stage (p50, p90) and its actions' error.
pub fn latency_figures(report: &RunReport) -> LatencyFigures {
    let rows = report
        .run
        .latency
        .iter()
        .map(|l| (l.name.clone(), l.p50_ms, l.p90_ms))
        .collect();
    LatencyFigures {
        backend: report.run.backend,
        emulated: report.run.htp_emulated,
        on_device: report.run.device.is_some(),
        rows,
        actions_max_abs_err: report.actions_max_abs_err,
        verdict: report.verdict(),
        actions: report
            .actions()
            .map(xtask_chain::chain::report_md::actions_figure),
        failures: report.failures.clone(),
        precisions: report.run.precisions_summary(),
    }
}
