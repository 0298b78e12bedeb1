//! The bundle's model card (`README.md`), rendered only from the bundle's own reports
//! (`reports/bundle.json`, `reports/parity-htp.json`, `reports/run-*.json`), so `verify` can
//! render it again and prove the card's tables match the reports shipped beside it.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::report::fmt_cosine;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BundleInfo {
    pub model: String,
    pub description: String,
    pub soc_id: u32,
    pub soc_chips: Vec<String>,
    pub htp_arch: u32,
    pub qairt: String,
    pub qnn_build: String,
    pub onnxruntime: String,
    pub toolchain: String,
    pub commit: String,
    pub allow_stale: bool,
    /// Components whose artifacts were stale when packaged (only with --allow-stale).
    pub stale: Vec<String>,
    /// Inputs fetched without a manifest (`fetch --unverified`) this bundle was made from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unverified_inputs: Option<String>,
    pub components: Vec<BundleComponent>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BundleComponent {
    pub name: String,
    pub description: String,
    pub inputs: Vec<(String, Vec<usize>, String)>,
    pub outputs: Vec<(String, Vec<usize>, String)>,
    /// CPU-backend cosine per output, from the build's cpu-parity step.
    pub cpu_cosine: Vec<(String, f64)>,
    pub graph_name: String,
    pub ep_sdk_version: Option<String>,
    pub bin_file: String,
    pub bin_bytes: u64,
    /// What was compiled, from the build record's typed facts (never from the recipe).
    pub optimization_level: u8,
    pub fp16: bool,
    /// 0 = the backend's default.
    pub vtcm_mb: u32,
    /// Whose tools built the binary, from its build record.
    pub toolchain: crate::ctx_build::facts::ToolchainUsed,
    /// The DLC's float bitwidth, from the convert record.
    pub float_bitwidth: u8,
    /// How far the DLC was checked, from the convert record.
    pub dlc_validation: String,
    /// The graph rewrites QNN's copy of the ONNX got, from the convert record.
    pub rewrites: Option<crate::rewritten::RewriteCheck>,
    /// The schema of the build record these facts were read from.
    pub record_schema: u32,
    /// The tool versions that built the binary (its context record).
    pub built_with: crate::ctx_build::facts::ToolVersions,
    pub recipe_sha256: String,
    pub onnx_sha256: String,
    pub golden_sha256: String,
    /// Output name → (gate, reason) for every waived output.
    pub waivers: Vec<(String, f64, String)>,
}

/// "fp16 HTP precision" when every context was built so, else the per-context mix.
fn precision_summary(b: &BundleInfo) -> String {
    let fp16 = b.components.iter().filter(|c| c.fp16).count();
    match (fp16, b.components.len()) {
        (f, n) if f == n => "fp16 HTP precision".into(),
        (0, _) => "fp32 HTP precision (fp16 off)".into(),
        (f, n) => format!("fp16 HTP precision in {f} of {n} (see Build provenance)"),
    }
}

fn short_precision(b: &BundleInfo) -> &'static str {
    match b.components.iter().filter(|c| c.fp16).count() {
        f if f == b.components.len() => "fp16",
        0 => "fp32",
        _ => "mixed fp16/fp32",
    }
}

/// HTP parity figures the card shows (from the bundle's `parity-htp.json`).
#[derive(Debug, Clone, Default)]
pub struct HtpFigures {
    pub emulated: Option<bool>,
    pub cosines: Vec<(String, Vec<(String, f64)>)>,
}

/// Latency the card shows (from a bundle `run-<backend>.json`).
#[derive(Debug, Clone, Default)]
pub struct LatencyFigures {
    pub backend: String,
    pub emulated: Option<bool>,
    pub rows: Vec<(String, f64, f64)>,
    pub actions_max_abs_err: Option<f64>,
}

pub fn htp_figures(report: &serde_json::Value) -> HtpFigures {
    let cosines = report["components"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let outs = c["outputs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|o| {
                    (
                        o["name"].as_str().unwrap_or("?").to_string(),
                        o["metrics"]["cosine"].as_f64().unwrap_or(f64::NAN),
                    )
                })
                .collect();
            (c["component"].as_str().unwrap_or("?").to_string(), outs)
        })
        .collect();
    HtpFigures {
        emulated: report["htp_emulated"].as_bool(),
        cosines,
    }
}

pub fn latency_figures(report: &serde_json::Value) -> LatencyFigures {
    let rows = report["latency"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| {
            (
                l["name"].as_str().unwrap_or("?").to_string(),
                l["p50_ms"].as_f64().unwrap_or(f64::NAN),
                l["p90_ms"].as_f64().unwrap_or(f64::NAN),
            )
        })
        .collect();
    LatencyFigures {
        backend: report["backend"].as_str().unwrap_or("?").into(),
        emulated: report["htp_emulated"].as_bool(),
        rows,
        actions_max_abs_err: report["actions_max_abs_err"].as_f64(),
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

pub fn render(
    b: &BundleInfo,
    htp: Option<&HtpFigures>,
    latency: Option<&LatencyFigures>,
) -> String {
    let mut md = String::new();
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
        b.qairt
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
    let _ = writeln!(
        md,
        "## Per-component I/O contract\n\n| context | inputs (name: shape, dtype) | outputs |\n|---|---|---|"
    );
    for c in &b.components {
        let io = |v: &[(String, Vec<usize>, String)]| {
            v.iter()
                .map(|(n, s, d)| format!("`{n}: {}` {d}", shape(s)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            md,
            "| `{}` | {} | {} |",
            c.name,
            io(&c.inputs),
            io(&c.outputs)
        );
    }
    let _ = writeln!(
        md,
        "\n## Validated parity (host, QNN CPU backend vs golden)\n\n**Cosine is the correctness gate**; `within_tol` is informational.\n\n| context | output | cosine |\n|---|---|---|"
    );
    for c in &b.components {
        let names: Vec<&str> = c.cpu_cosine.iter().map(|(n, _)| n.as_str()).collect();
        let cos: Vec<String> = c
            .cpu_cosine
            .iter()
            .map(|(_, v)| format!("**{}**", fmt_cosine(*v)))
            .collect();
        let _ = writeln!(
            md,
            "| `{}` | {} | {} |",
            c.name,
            names.join(" / "),
            cos.join(" / ")
        );
    }
    match htp {
        Some(h) => {
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
        None => {
            let _ = writeln!(md, "\n## HTP parity\n\nNot measured for these binaries.");
        }
    }
    // One line per distinct (gate, reason), naming every output it applies to.
    let mut waivers: Vec<(f64, &str, Vec<String>)> = Vec::new();
    for c in &b.components {
        for (o, g, r) in &c.waivers {
            let who = format!("`{}` {o}", c.name);
            match waivers.iter_mut().find(|(wg, wr, _)| wg == g && wr == r) {
                Some(w) => w.2.push(who),
                None => waivers.push((*g, r, vec![who])),
            }
        }
    }
    if !waivers.is_empty() {
        let _ = writeln!(md, "\n## Waivers\n");
        for (g, r, who) in &waivers {
            let _ = writeln!(md, "- gate {g} on {}: {r}", who.join(", "));
        }
    }
    if let Some(l) = latency {
        let how = if l.emulated == Some(true) {
            " (HTP emulated on x86_64: not device latency)"
        } else {
            ""
        };
        let _ = writeln!(
            md,
            "\n## Latency, `{}` backend{how}\n\n| stage | p50 ms | p90 ms |\n|---|---|---|",
            l.backend
        );
        for (n, p50, p90) in &l.rows {
            let _ = writeln!(md, "| {n} | {p50:.2} | {p90:.2} |");
        }
        if let Some(e) = l.actions_max_abs_err {
            let _ = writeln!(
                md,
                "\nEnd-to-end actions vs expected: max abs error {e:.3e}."
            );
        }
    }
    let _ = writeln!(md, "\n## Build provenance\n");
    let _ = writeln!(
        md,
        "- Toolchain: {}; QAIRT {} (QNN build `{}`), ONNX Runtime {}",
        b.toolchain, b.qairt, b.qnn_build, b.onnxruntime
    );
    let _ = writeln!(
        md,
        "- Target: soc_id {} ({}), Hexagon v{}; per context, from its build records:",
        b.soc_id,
        b.soc_chips.join(" / "),
        b.htp_arch
    );
    let _ = writeln!(
        md,
        "\n| context | toolchain | HTP precision | optimization | VTCM | DLC | DLC checked |\n|---|---|---|---|---|---|---|"
    );
    for c in &b.components {
        let _ = writeln!(
            md,
            "| `{}` | {} | {} | O{} | {} | float{} | {} |",
            c.name,
            c.toolchain.label(),
            if c.fp16 { "fp16" } else { "fp32 (fp16 off)" },
            c.optimization_level,
            match c.vtcm_mb {
                0 => "default".to_string(),
                mb => format!("{mb} MB"),
            },
            c.float_bitwidth,
            c.dlc_validation
        );
    }
    rewrites_section(b, &mut md);
    let _ = writeln!(md);
    let _ = writeln!(md, "- Repository commit: `{}`", b.commit);
    let _ = writeln!(
        md,
        "\n| context | graph name | QNN SDK in binary | recipe sha256 | ONNX sha256 | golden sha256 |\n|---|---|---|---|---|---|"
    );
    for c in &b.components {
        let _ = writeln!(
            md,
            "| `{}` | `{}` | {} | `{}` | `{}` | `{}` |",
            c.name,
            c.graph_name,
            c.ep_sdk_version.as_deref().unwrap_or("-"),
            &c.recipe_sha256[..12],
            &c.onnx_sha256[..12],
            &c.golden_sha256[..12]
        );
    }
    md
}

/// The graph rewrites of the contexts that had any: QNN built those from a rewritten copy of
/// the ONNX shipped in `onnx/` (which is the original).
fn rewrites_section(b: &BundleInfo, md: &mut String) {
    let with: Vec<_> = b
        .components
        .iter()
        .filter_map(|c| c.rewrites.as_ref().map(|r| (c, r)))
        .collect();
    if with.is_empty() {
        return;
    }
    let table = crate::rewritten::rewrites_table(
        "context",
        with.iter().flat_map(|(c, r)| r.cells(&c.name)),
    );
    let _ = write!(
        md,
        "\nGraph rewrites: QNN built these contexts from a rewritten copy of the ONNX in `onnx/` \
         (which is the original), checked on ONNX Runtime against the golden:\n\n{table}"
    );
}
