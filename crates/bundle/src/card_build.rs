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
            "| `{}` | {} | {} | O{} | {} | {} | {} |",
            c.name,
            c.toolchain.label(),
            match &c.quantized {
                Some(q) => format!("{} (see Quantized contexts)", q.precision),
                None if c.fp16 => "fp16".into(),
                None => "fp32 (fp16 off)".into(),
            },
            c.optimization_level,
            match c.vtcm_mb {
                0 => "default".to_string(),
                mb => format!("{mb} MB"),
            },
            match &c.quantized {
                Some(q) => format!("{} (from the QDQ graph)", q.precision),
                None => format!("float{}", c.float_bitwidth),
            },
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

/// Every quantized context: its precision, its CPU stage's name, how it was calibrated (source,
/// samples, method, per-channel, excluded operators, the samples' hash) and the gate it is
/// judged by against the float golden.
pub(super) fn quantized_section(b: &BundleInfo, md: &mut String) {
    let quantized: Vec<_> = b
        .components
        .iter()
        .filter_map(|c| c.quantized.as_ref().map(|q| (c, q)))
        .collect();
    if quantized.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "\n## Quantized contexts\n\nEvery figure of a quantized context is against the **float** golden.\n\n| context | precision | CPU stage | calibration | samples | method | per-channel | kept in float | calibration sha256 | gate (cosine ≥, scale ≤) |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    for (c, q) in quantized {
        let _ = writeln!(
            md,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | `{}` | {}, {} ({}) |",
            c.name,
            q.precision,
            q.cpu_stage,
            q.calibration_source,
            q.calibration_samples,
            q.method,
            if q.per_channel { "yes" } else { "no" },
            if q.exclude.is_empty() {
                "-".to_string()
            } else {
                q.exclude.join(", ")
            },
            &q.calibration_sha256[..q.calibration_sha256.len().min(16)],
            q.gate_min_cosine,
            q.gate_max_norm_ratio_error,
            q.gate_source
        );
    }
}

/// How to run these binaries on the board: with this tool over ssh, or the SDK's own
/// `qnn-net-run` on the board.
pub(super) fn on_the_board(b: &BundleInfo, md: &mut String) {
    let bin = b
        .components
        .first()
        .map_or("<context>.bin".to_string(), |c| c.bin_file.clone());
    let _ = writeln!(
        md,
        "\n## On the board\n\nThe binaries run on soc_id {} (Hexagon v{}) with QAIRT {}'s HTP backend. From a machine with this tool, over ssh (the board needs `QNN_SDK_ROOT` set for non-interactive ssh and key-based login):\n\n```sh\ncargo xtask fetch --repo OWNER/NAME --model {model}\ncargo xtask parity --backend htp --model {model} --device ssh://user@board/data/xtask\ncargo xtask run --backend htp --model {model} --iters 10 --warmup 2 --device ssh://user@board/data/xtask\n```\n\nOn the board itself, with the SDK's tools (one context; inputs as raw files listed in `input_list.txt`):\n\n```sh\nqnn-net-run --retrieve_context ctx/{bin} --backend $QNN_SDK_ROOT/lib/aarch64-oe-linux-gcc11.2/libQnnHtp.so --input_list input_list.txt --output_dir out\n```",
        b.soc_id,
        b.htp_arch,
        b.built_by.qairt,
        model = b.model,
    );
}
