//! The bundle's model card (`README.md`), rendered only from the bundle's own reports
//! (`reports/bundle.json`, `reports/parity-htp.json`, `reports/run-*.json`), each read through
//! its type, so `verify` can render it again and prove the card's tables match the reports
//! shipped beside it.

use std::fmt::Write as _;

use super::card_figures::{HtpFigures, LatencyFigures};
use super::info::BundleInfo;
use xtask_base::vocab::BackendKind;
use xtask_runtime::report::fmt_cosine;

/// "fp16 HTP precision" when every context was built so, else the per-context mix.
fn precision_summary(b: &BundleInfo) -> String {
    let quantized: Vec<String> = b
        .components
        .iter()
        .filter_map(|c| {
            c.quantized
                .as_ref()
                .map(|q| format!("{} {}", c.name, q.precision))
        })
        .collect();
    if !quantized.is_empty() {
        return format!(
            "quantized {} (every figure against the float golden), the rest fp16",
            quantized.join(", ")
        );
    }
    let fp16 = b.components.iter().filter(|c| c.fp16).count();
    match (fp16, b.components.len()) {
        (f, n) if f == n => "fp16 HTP precision".into(),
        (0, _) => "fp32 HTP precision (fp16 off)".into(),
        (f, n) => format!("fp16 HTP precision in {f} of {n} (see Build provenance)"),
    }
}

fn short_precision(b: &BundleInfo) -> &'static str {
    if b.components.iter().any(|c| c.quantized.is_some()) {
        return "mixed quantized/fp16";
    }
    match b.components.iter().filter(|c| c.fp16).count() {
        f if f == b.components.len() => "fp16",
        0 => "fp32",
        _ => "mixed fp16/fp32",
    }
}

fn mb(bytes: u64) -> String {
    if bytes >= 1_000_000 {
        format!("{:.0} MB", bytes as f64 / 1e6)
    } else {
        format!("{:.0} KB", bytes as f64 / 1e3)
    }
}

fn shape(s: &[usize]) -> String {
    format!(
        "[{}]",
        s.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(",")
    )
}

/// The card, section by section, from `bundle.json` and the bundled reports only.
pub fn render(
    b: &BundleInfo,
    htp: Option<&HtpFigures>,
    latency: Option<&LatencyFigures>,
) -> String {
    let mut md = String::new();
    heading(b, &mut md);
    verdict_section(b, htp, latency, &mut md);
    contents(b, &mut md);
    io_contract(b, &mut md);
    cpu_parity(b, &mut md);
    htp_parity(b, htp, &mut md);
    super::card_build::quantized_section(b, &mut md);
    waivers(b, &mut md);
    if let Some(l) = latency {
        latency_table(l, &mut md);
    }
    super::card_build::on_the_board(b, &mut md);
    super::card_build::provenance(b, &mut md);
    super::card_build::build_options(b, &mut md);
    super::card_build::rewrites_section(b, &mut md);
    super::card_build::hashes(b, &mut md);
    md
}

/// The Hub's front matter, the title, the target and QAIRT the binaries were built with, and
/// the warnings (stale artifacts, unverified inputs).
fn heading(b: &BundleInfo, md: &mut String) {
    let _ = writeln!(
        md,
        "---\nlicense: apache-2.0\ntags: [molmoact2, vla, robotics, qnn, qualcomm, htp, hexagon, npu, edge]\npipeline_tag: robotics\n---\n"
    );
    let _ = writeln!(md, "# {} — QNN / HTP context binaries\n", b.model);
    let _ = writeln!(md, "{}\n", b.description);
    let _ = writeln!(
        md,
        "Offline-compiled **Qualcomm QNN (HTP) context binaries** for **{} (Hexagon v{}, soc_id {})**, QAIRT **{}**.\n",
        b.soc_chips.join(" / "),
        b.htp_arch,
        b.soc_id,
        b.built_by.qairt
    );
    if b.allow_stale {
        let _ = writeln!(
            md,
            "> **Warning:** packaged with `--allow-stale`: the artifacts of {} do not match their current recipes or inputs.\n",
            if b.stale.is_empty() {
                "no component".to_string()
            } else {
                b.stale.join(", ")
            }
        );
    }
    if let Some(u) = &b.unverified_inputs {
        let _ = writeln!(md, "> **Warning:** {u}.\n");
    }
    if let Some(why) = &b.chain_unmeasured {
        let _ = writeln!(
            md,
            "> **Warning:** packaged with `--allow-unmeasured`: the chain was never measured on the HTP with these binaries ({why}). Its verdict is UNMEASURED.\n"
        );
    }
}

/// The bundle's verdict: its chain's on the HTP (the actions against their gate), with every
/// context's HTP parity; UNMEASURED when either never ran on these binaries.
pub fn bundle_verdict(
    b: &BundleInfo,
    htp: Option<&HtpFigures>,
    chain: Option<&LatencyFigures>,
) -> xtask_base::vocab::Verdict {
    use xtask_base::vocab::Verdict;
    let chain_verdict = match chain {
        Some(c) if c.backend == BackendKind::Htp && b.chain_unmeasured.is_none() => c.verdict,
        _ => Verdict::Unmeasured,
    };
    let parity = match htp {
        Some(_) if b.htp_unmeasured.is_empty() => Verdict::Pass,
        _ => Verdict::Unmeasured,
    };
    Verdict::all([chain_verdict, parity])
}

/// `## Verdict: PASS` and what it rests on: the chain on the HTP with the actions against
/// their gate, every context's HTP parity, the quantized contexts.
fn verdict_section(
    b: &BundleInfo,
    htp: Option<&HtpFigures>,
    chain: Option<&LatencyFigures>,
    md: &mut String,
) {
    let verdict = bundle_verdict(b, htp, chain);
    let _ = writeln!(md, "## Verdict: {}\n", verdict.word());
    match chain.filter(|c| c.backend == BackendKind::Htp) {
        Some(c) => {
            let where_ = match (c.on_device, c.emulated) {
                (true, _) => "on the device (device figures)",
                (false, Some(true)) => "HTP emulated on x86_64",
                _ => "on the HTP",
            };
            let _ = writeln!(
                md,
                "- The whole chain (vision → LLM splits → action context → Euler steps → actions), {where_}: **{}**; actions {}{}.",
                c.verdict.word(),
                c.actions.as_deref().unwrap_or("not compared"),
                if c.precisions.is_empty() {
                    String::new()
                } else {
                    format!("; quantized {} against the float golden", c.precisions)
                }
            );
            for f in &c.failures {
                let _ = writeln!(md, "  - **FAIL** {f}");
            }
        }
        None => {
            let _ = writeln!(
                md,
                "- The whole chain on the HTP: **UNMEASURED** ({})",
                b.chain_unmeasured
                    .as_deref()
                    .unwrap_or("no chain run on the HTP in this bundle")
            );
        }
    }
    let parity = match htp {
        Some(_) if b.htp_unmeasured.is_empty() => {
            "**PASS** (every context, `reports/parity-htp.json`)".to_string()
        }
        _ => "**UNMEASURED** (see HTP parity below)".to_string(),
    };
    let _ = writeln!(
        md,
        "- Each context's HTP parity against its golden: {parity}\n"
    );
}

/// The bundle's folders, with every binary and its size.
fn contents(b: &BundleInfo, md: &mut String) {
    let _ = writeln!(
        md,
        "## What's in here\n\n```\nctx/      {} HTP context binaries (soc_id {} / Hexagon v{}), {}",
        b.components.len(),
        b.soc_id,
        b.htp_arch,
        precision_summary(b)
    );
    for c in &b.components {
        let _ = writeln!(md, "  {:<40} {:>8}", c.bin_file, mb(c.bin_bytes));
    }
    let _ = writeln!(
        md,
        "golden/   reference I/O, the parity gate for every context\nonnx/     per-component ONNX graphs that feed the DLC/context build\nreports/  the reports this card is generated from\n```\n"
    );
}

fn io_contract(b: &BundleInfo, md: &mut String) {
    let _ = writeln!(
        md,
        "## Per-component I/O contract\n\n| context | inputs (name: shape, dtype) | outputs |\n|---|---|---|"
    );
    let io = |v: &[(String, Vec<usize>, String)]| {
        v.iter()
            .map(|(n, s, d)| format!("`{n}: {}` {d}", shape(s)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for c in &b.components {
        let _ = writeln!(
            md,
            "| `{}` | {} | {} |",
            c.name,
            io(&c.inputs),
            io(&c.outputs)
        );
    }
}

/// The CPU stage's cosines, from each component's cpu-parity build step: QNN's CPU backend
/// for a float context, its QDQ simulation (ORT's CPU EP) for a quantized one, each named.
fn cpu_parity(b: &BundleInfo, md: &mut String) {
    let _ = writeln!(
        md,
        "\n## Validated parity (host CPU stage vs golden)\n\n**Cosine is the correctness gate**; `within_tol` is informational. A float context's CPU stage is QNN's CPU backend; a quantized context's is its QDQ simulation on ORT's CPU EP (QNN's CPU backend does not run QDQ graphs), against the float golden.\n\n| context | CPU stage | output | cosine |\n|---|---|---|---|"
    );
    for c in &b.components {
        let stage = match &c.quantized {
            Some(q) => format!("{} ({})", q.cpu_stage, q.precision),
            None => "QNN CPU backend".to_string(),
        };
        let names: Vec<&str> = c.cpu_cosine.iter().map(|(n, _)| n.as_str()).collect();
        let cos: Vec<String> = c
            .cpu_cosine
            .iter()
            .map(|(_, v)| format!("**{}**", fmt_cosine(*v)))
            .collect();
        let _ = writeln!(
            md,
            "| `{}` | {stage} | {} | {} |",
            c.name,
            names.join(" / "),
            cos.join(" / ")
        );
    }
}

fn htp_parity(b: &BundleInfo, htp: Option<&HtpFigures>, md: &mut String) {
    let Some(h) = htp else {
        let _ = writeln!(
            md,
            "\n## HTP parity\n\n**Not measured** for these binaries."
        );
        if !b.htp_unmeasured.is_empty() {
            let _ = writeln!(
                md,
                "Packaged with `--allow-unmeasured`; never measured on the HTP:\n"
            );
            for why in &b.htp_unmeasured {
                let _ = writeln!(md, "- {why}");
            }
        }
        return;
    };
    let how = match h.emulated {
        Some(true) => "HTP emulated on x86_64",
        Some(false) => "on the device's NPU",
        None => "HTP",
    };
    let _ = writeln!(
        md,
        "\n## HTP parity ({how}, {})\n\n| context | output | cosine |\n|---|---|---|",
        short_precision(b)
    );
    for (comp, outs) in &h.cosines {
        let names: Vec<&str> = outs.iter().map(|(n, _)| n.as_str()).collect();
        let cos: Vec<String> = outs.iter().map(|(_, v)| fmt_cosine(*v)).collect();
        let _ = writeln!(
            md,
            "| `{comp}` | {} | {} |",
            names.join(" / "),
            cos.join(" / ")
        );
    }
}

/// One line per distinct lowered gate and reason, naming every output it applies to.
fn waivers(b: &BundleInfo, md: &mut String) {
    let mut lines: Vec<(f64, f64, &str, Vec<String>)> = Vec::new();
    for c in &b.components {
        for w in &c.waivers {
            let who = format!("`{}` {}", c.name, w.output);
            match lines
                .iter_mut()
                .find(|(f, t, r, _)| *f == w.from && *t == w.to && *r == w.reason)
            {
                Some(l) => l.3.push(who),
                None => lines.push((w.from, w.to, &w.reason, vec![who])),
            }
        }
    }
    if !lines.is_empty() {
        let _ = writeln!(md, "\n## Gates lowered by the recipes\n");
        for (from, to, reason, who) in &lines {
            let _ = writeln!(
                md,
                "- gate lowered from {from} to {to} on {}: {reason}",
                who.join(", ")
            );
        }
    }
}

fn latency_table(l: &LatencyFigures, md: &mut String) {
    let how = if l.emulated == Some(true) {
        " (HTP emulated on x86_64: not device latency)"
    } else {
        ""
    };
    let how = if l.on_device {
        " (on the device: device figures)"
    } else {
        how
    };
    let _ = writeln!(
        md,
        "\n## Latency, `{}` backend{how}\n\n| stage | p50 ms | p90 ms |\n|---|---|---|",
        l.backend
    );
    for (n, p50, p90) in &l.rows {
        let _ = writeln!(md, "| {n} | {p50:.2} | {p90:.2} |");
    }
    if let Some(a) = &l.actions {
        let _ = writeln!(md, "\nEnd-to-end actions vs expected: {a}.");
    }
}

#[cfg(test)]
#[path = "card_tests.rs"]
mod tests;
