//! `run --backend htp --device ssh://…`: the chain orchestrated from this host, each component
//! call run on the device (`Device::run_component`: one profiled `qnn-net-run` per call), the
//! host steps (scatter, the Euler loop, de-normalisation) on this host through the same
//! `chain::pipeline::run_chain` as every backend. Every boundary is judged by the model's chain
//! gate; the device execute times per component and their sum per chain are reported, the sum
//! labelled as an estimate of the resident chain on the device (ssh copies, session loads and
//! host steps not included). Report: `reports/<model>/run-htp-device.{json,md}`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use super::{Device, DeviceInfo, timing_note};
use crate::chain::boundaries::{expected_boundaries, judge_boundaries};
use crate::chain::pipeline::{load_host_inputs, run_chain};
use crate::chain::report::BoundaryParity;
use crate::chain::run::host_section;
use crate::parity::gate::Status;
use crate::recipe::Model;
use crate::report::latency::ExecuteStats;
use crate::runtime::Runtime;
use crate::vocab::BackendKind;

#[derive(Debug, Clone, Serialize)]
pub struct DeviceComponentTimes {
    pub component: String,
    /// How many times one chain calls it (action_step: once per Euler step).
    pub calls_per_chain: usize,
    /// Every timed inference of every call.
    pub execute: ExecuteStats,
    /// `calls_per_chain × p50`, µs.
    pub per_chain_us: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeviceRunReport {
    pub model: String,
    pub backend: BackendKind,
    pub device: DeviceInfo,
    pub timing: String,
    pub iters: usize,
    pub warmup: usize,
    pub created_unix: u64,
    pub boundaries: Vec<BoundaryParity>,
    pub components: Vec<DeviceComponentTimes>,
    /// Sum of `per_chain_us`: an estimate of one resident chain's device execute time.
    pub chain_estimate_us: f64,
    pub chain_estimate_note: String,
    pub actions_max_abs_err: Option<f64>,
    pub actions_max_abs_gate: f64,
    /// Context binaries copied to the device by this run.
    pub binaries_uploaded: usize,
    pub failures: Vec<String>,
    pub pass: bool,
}

const ESTIMATE_NOTE: &str = "estimate of the resident chain on the device: the sum over components of calls per chain x the median device execute time; ssh/scp copies, session loads and the host steps (scatter, Euler loop, de-normalisation) are not included";

pub fn run_and_report(
    root: &Path,
    rt: &Runtime,
    model: &Model,
    device: &Device,
    iters: usize,
    warmup: usize,
) -> Result<DeviceRunReport> {
    let host = host_section(model)?;
    let inputs = load_host_inputs(root, model, &host)?;
    let soc = crate::htp_target::target_soc(model, None)?;
    let name = &model.file.model.name;
    let comps: Vec<&crate::recipe::Component> = model.components.iter().collect();
    anyhow::Context::context(
        crate::ctx_build::fresh::fresh_context_wrappers(root, rt, model, &comps),
        "cannot run the chain on the device",
    )?;
    let mut bins = BTreeMap::new();
    for comp in &model.components {
        let art = crate::ctx_build::plan::artifacts(name, comp.name(), &soc);
        bins.insert(comp.name().to_string(), root.join(art.bin));
    }
    crate::outln!("chain on the device {}:", device.info.label());
    let mut samples: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut calls: BTreeMap<String, usize> = BTreeMap::new();
    let result = run_chain(&host, &inputs, &mut |comp_name, ins| {
        let comp = model
            .components
            .iter()
            .find(|c| c.name() == comp_name)
            .with_context(|| format!("no component `{comp_name}`"))?;
        // As on every HTP run: `mask = true` inputs clamped to fp16's range first.
        let ins = crate::fp16::clamp_masks(comp, ins);
        let n = calls.entry(comp_name.to_string()).or_default();
        *n += 1;
        let log = crate::ctx_build::toolchain::sdk::steps::log_path(
            root,
            name,
            comp_name,
            &format!("device-run-{n}"),
        );
        let run = device.run_component(comp, &bins[comp_name], &ins, warmup, iters, &log)?;
        crate::outln!(
            "  {comp_name:<16} device execute p50 {:>10.1} µs ({} samples)",
            run.stats.p50_us,
            run.stats.samples
        );
        samples
            .entry(comp_name.to_string())
            .or_default()
            .extend(run.samples_us);
        Ok(run.outputs)
    })?;
    let expected = expected_boundaries(model, &host, &inputs)?;
    let boundaries = judge_boundaries(BackendKind::Htp, &host, &result, &expected);
    let components: Vec<DeviceComponentTimes> = model
        .components
        .iter()
        .filter_map(|c| {
            let s = samples.get(c.name())?;
            let execute =
                ExecuteStats::of(crate::ctx_build::toolchain::sdk::profile::TIMING_SOURCE, s);
            let k = calls[c.name()];
            Some(DeviceComponentTimes {
                component: c.name().into(),
                calls_per_chain: k,
                per_chain_us: k as f64 * execute.p50_us,
                execute,
            })
        })
        .collect();
    let gate = host.gate.actions_gate(BackendKind::Htp);
    let actions = boundaries
        .iter()
        .find(|b| b.name == "actions")
        .and_then(|b| b.metrics.as_ref().map(|m| m.max_abs_err));
    let mut failures: Vec<String> = boundaries
        .iter()
        .filter(|b| b.status == Status::Fail)
        .map(|b| format!("{}: {}", b.name, b.reasons.join("; ")))
        .collect();
    match actions {
        Some(e) if e > gate => {
            failures.push(format!("actions: max abs error {e:.3e} > gate {gate:.0e}"))
        }
        None => failures.push("actions: no expected actions to compare with".into()),
        _ => {}
    }
    let report = DeviceRunReport {
        model: name.clone(),
        backend: BackendKind::Htp,
        timing: timing_note(&device.info),
        device: device.info.clone(),
        iters,
        warmup,
        created_unix: crate::report::now_unix(),
        chain_estimate_us: components.iter().map(|c| c.per_chain_us).sum(),
        chain_estimate_note: ESTIMATE_NOTE.into(),
        components,
        boundaries,
        actions_max_abs_err: actions,
        actions_max_abs_gate: gate,
        binaries_uploaded: device.uploads(),
        pass: failures.is_empty(),
        failures,
    };
    let dir = crate::project::reports_dir(root, name);
    crate::report::write_json_and_markdown(&dir, "run-htp-device", &report, &markdown(&report))?;
    print(&report, &crate::project::rel(root, &dir));
    Ok(report)
}

fn print(r: &DeviceRunReport, dir: &str) {
    crate::outln!("  {:<40} {:>12} {:>11}", "boundary", "cosine", "max_abs");
    for b in &r.boundaries {
        let (cos, max) = b.metrics.as_ref().map_or(("-".into(), "-".into()), |m| {
            (m.shown_cosine(), format!("{:.3e}", m.max_abs_err))
        });
        let mark = match b.status {
            Status::Pass => "",
            Status::Fail => "  FAIL",
            Status::Ungated => "  UNGATED",
        };
        crate::outln!("  {:<40} {cos:>12} {max:>11}{mark}", b.name);
    }
    crate::outln!("timing: {}", r.timing);
    crate::outln!(
        "  {:<16} {:>5} {:>10} {:>10} {:>10} {:>12}",
        "component",
        "calls",
        "p50 µs",
        "p90 µs",
        "max µs",
        "per chain µs"
    );
    for c in &r.components {
        crate::outln!(
            "  {:<16} {:>5} {:>10.1} {:>10.1} {:>10.1} {:>12.1}",
            c.component,
            c.calls_per_chain,
            c.execute.p50_us,
            c.execute.p90_us,
            c.execute.max_us,
            c.per_chain_us
        );
    }
    crate::outln!(
        "chain estimate {:.1} µs ({})",
        r.chain_estimate_us,
        r.chain_estimate_note
    );
    crate::outln!(
        "run htp on the device: {}; {} context binar(y/ies) copied; report {dir}/run-htp-device.md",
        if r.pass {
            "every gate passes".to_string()
        } else {
            format!("FAIL: {}", r.failures.join("; "))
        },
        r.binaries_uploaded
    );
}

fn markdown(r: &DeviceRunReport) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Chain run on a device: `{}` on `htp`\n", r.model);
    let _ = writeln!(md, "Device: {}\n", r.device.label());
    let _ = writeln!(md, "Timing: {}\n", r.timing);
    let _ = writeln!(
        md,
        "{} timed inferences per component call after {} warm-up (one `qnn-net-run` call each); orchestrated from the host, host steps on the host.\n",
        r.iters, r.warmup
    );
    md.push_str("## Chain parity\n\n");
    md.push_str(&crate::report::md_table(
        &["boundary", "shape", "cosine", "max abs err", "result"],
        r.boundaries.iter().map(|b| {
            let (c, m) = b.metrics.as_ref().map_or(("-".into(), "-".into()), |m| {
                (m.shown_cosine(), format!("{:.3e}", m.max_abs_err))
            });
            let result = match b.status {
                Status::Pass => "pass",
                Status::Fail => "FAIL",
                Status::Ungated => "UNGATED",
            };
            vec![
                b.name.clone(),
                format!("{:?}", b.shape),
                c,
                m,
                result.into(),
            ]
        }),
    ));
    let _ = writeln!(
        md,
        "\n## Device execute time ({} rows)\n",
        crate::ctx_build::toolchain::sdk::profile::TIMING_SOURCE
    );
    md.push_str(&crate::report::md_table(
        &[
            "component",
            "calls/chain",
            "min µs",
            "p50 µs",
            "p90 µs",
            "max µs",
            "per chain µs",
        ],
        r.components.iter().map(|c| {
            let e = &c.execute;
            let mut row = vec![c.component.clone(), c.calls_per_chain.to_string()];
            row.extend(
                [e.min_us, e.p50_us, e.p90_us, e.max_us, c.per_chain_us].map(|x| format!("{x:.1}")),
            );
            row
        }),
    ));
    let _ = writeln!(
        md,
        "\n**Chain estimate: {:.1} µs** — {}.",
        r.chain_estimate_us, r.chain_estimate_note
    );
    if !r.failures.is_empty() {
        let _ = writeln!(md, "\n## Failures\n\n- {}", r.failures.join("\n- "));
    }
    md
}

/// `run --device`: connects, checks the board can run this model, runs the chain there and
/// reports it; true when every gate passed.
pub fn connect_and_run(
    root: &Path,
    model: &Model,
    url: &str,
    iters: usize,
    warmup: usize,
) -> Result<bool> {
    if iters == 0 {
        anyhow::bail!("--iters must be at least 1");
    }
    let rt = Runtime::load(crate::runtime::bootstrap::ensure_runtime(root)?)?;
    let device = crate::device::Device::connect(url)?;
    device.require_runnable(&model.file.target.qairt)?;
    Ok(run_and_report(root, &rt, model, &device, iters, warmup)?.pass)
}
