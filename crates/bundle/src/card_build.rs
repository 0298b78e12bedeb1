//! The model card's build sections: what built the binaries (provenance), with which options,
//! from which rewritten graphs, and the hashes of every input.

use std::fmt::Write as _;

use super::info::BundleInfo;

/// The versions that built the binaries and the tool that drove them, from the build records.
pub(super) fn provenance(b: &BundleInfo, md: &mut String) {
    let code = |v: &str| format!("`{v}`");
    let built = &b.built_by;
    let _ = writeln!(md, "\n## Build provenance\n");
    let _ = writeln!(
        md,
        "- Toolchain: {}; QAIRT {} (QNN build {}), ONNX Runtime {}",
        b.toolchain,
        built.qairt,
        built.qnn_build.shown(code),
        built.onnxruntime
    );
    let _ = writeln!(
        md,
        "- Built by xtask {} (the tool identity its build records name)",
        built.xtask.shown(code)
    );
    let _ = writeln!(
        md,
        "- Target: soc_id {} ({}), Hexagon v{}; per context, from its build records:",
        b.soc_id,
        b.soc_chips.join(" / "),
        b.htp_arch
    );
}

/// What each context was compiled with, from its build records.
pub(super) fn build_options(b: &BundleInfo, md: &mut String) {
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
            match &c.quantized {
                Some(q) => format!(
                    "{} (calibration `{}`, {} sample(s); CPU stage: {})",
                    q.precision,
                    &q.calibration_sha256[..q.calibration_sha256.len().min(16)],
                    q.calibration_samples,
                    q.cpu_stage
                ),
                None if c.fp16 => "fp16".into(),
                None => "fp32 (fp16 off)".into(),
            },
            c.optimization_level,
            match c.vtcm_mb {
                0 => "default".to_string(),
                mb => format!("{mb} MB"),
            },
            c.float_bitwidth,
            c.dlc_validation
        );
    }
}

/// The repository commit, and per context its graph, the QNN build its binary names and the
/// hashes of what it was built from.
pub(super) fn hashes(b: &BundleInfo, md: &mut String) {
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
}

/// The graph rewrites of the contexts that had any: QNN built those from a rewritten copy of
/// the ONNX shipped in `onnx/` (which is the original).
pub(super) fn rewrites_section(b: &BundleInfo, md: &mut String) {
    let with: Vec<_> = b
        .components
        .iter()
        .filter_map(|c| c.rewrites.as_ref().map(|r| (c, r)))
        .collect();
    if with.is_empty() {
        return;
    }
    let table = xtask_parity::rewritten::rewrites_table(
        "context",
        with.iter().flat_map(|(c, r)| r.cells(&c.name)),
    );
    let _ = write!(
        md,
        "\nGraph rewrites: QNN built these contexts from a rewritten copy of the ONNX in `onnx/` \
         (which is the original), checked on ONNX Runtime against the golden:\n\n{table}"
    );
}
