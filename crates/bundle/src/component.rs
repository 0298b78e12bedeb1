//! The bundle's view of one component: its I/O contract, gates and hashes from the recipe and
//! inputs, and everything about what was built from its build record's typed facts (the
//! recipe may have changed since the build). A record without those facts is refused.

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::info::BundleComponent;
use xtask_base::hashing::{HashMemo, sha256_bytes};
use xtask_base::soc::Soc;
use xtask_base::vocab::BackendKind;
use xtask_ctx_build::facts::{ContextFacts, ConvertFacts, CpuParityFacts, StepFacts};
use xtask_ctx_build::fingerprint::ComponentRecord;
use xtask_ctx_build::plan::Artifacts;
use xtask_recipe::htp_target::HtpGraph;
use xtask_recipe::recipe::{Component, Model, TensorSpec};

/// The facts of a component's three build steps the bundle states.
struct RecordFacts<'a> {
    convert: &'a ConvertFacts,
    cpu: &'a CpuParityFacts,
    context: &'a ContextFacts,
    /// The graph options the context was compiled with.
    graph: &'a HtpGraph,
}

/// The bundle's view of `comp`, from its build `record` and its recipe.
pub fn bundle_component(
    root: &Path,
    model: &Model,
    comp: &Component,
    record: &ComponentRecord,
    soc: &Soc,
    art: &Artifacts,
    memo: &mut HashMemo,
) -> Result<BundleComponent> {
    let rebuild = |what: &str| {
        format!(
            "`{}`: {what}: rebuild it (`cargo xtask build-ctx --soc {} --model {} --only {}`)",
            comp.name(),
            soc.id,
            model.file.model.name,
            comp.name()
        )
    };
    let facts = record_facts(record, soc, &rebuild)?;
    let RecordFacts {
        convert,
        cpu,
        context,
        graph,
    } = facts;
    Ok(BundleComponent {
        name: comp.name().into(),
        description: comp.file.component.description.clone(),
        inputs: comp.file.inputs.iter().map(tensor).collect(),
        outputs: comp.file.outputs.iter().map(tensor).collect(),
        cpu_cosine: cpu
            .result
            .outputs
            .iter()
            .map(|o| (o.name.clone(), o.metrics.cosine))
            .collect(),
        graph_name: context.graph_name.clone(),
        ep_sdk_version: context.ep_sdk_version.clone(),
        bin_file: art.bin_name(),
        bin_bytes: std::fs::metadata(root.join(&art.bin)).map_or(0, |m| m.len()),
        // What was compiled, as the record holds it (the recipe may have changed since).
        optimization_level: graph.optimization_level,
        fp16: graph.fp16,
        vtcm_mb: graph.vtcm_mb,
        toolchain: context.versions.toolchain.clone(),
        built_with: context.versions.clone(),
        float_bitwidth: convert.float_bitwidth,
        dlc_validation: convert.dlc_validation.clone(),
        rewrites: convert.rewrites.clone(),
        record_schema: xtask_ctx_build::facts::RECORD_SCHEMA,
        recipe_sha256: sha256_bytes(comp.recipe_text.as_bytes()),
        // The freshness check hashed both this run: its full memo answers.
        onnx_sha256: memo.sha256(&root.join(&comp.file.component.onnx))?,
        golden_sha256: memo.sha256(&root.join(&comp.file.golden.file))?,
        waivers: waivers(model, comp),
        quantized: quantized_facts(record, model, comp, &rebuild)?,
    })
}

/// The convert, cpu-parity and context facts of the record, for this SoC; `rebuild` words the
/// refusal when one is missing, of the wrong kind, or about another SoC.
/// A quantized component's quantize record, stated; a component whose recipe says it is
/// quantized but whose record holds no quantize step is refused (it was built float).
fn quantized_facts(
    record: &ComponentRecord,
    model: &Model,
    comp: &Component,
    rebuild: &dyn Fn(&str) -> String,
) -> Result<Option<super::info::QuantizedFacts>> {
    let facts = record.step("quantize").ok().map(|r| &r.facts);
    let output = comp.file.outputs.first().map(|o| o.name.get_ref().clone());
    let gate = comp.gate(
        &model.file,
        output.as_deref().unwrap_or(""),
        BackendKind::Htp,
    );
    match (comp.precision().is_quantized(), facts) {
        (false, _) => Ok(None),
        (true, Some(StepFacts::Quantize(q))) => Ok(Some(super::info::QuantizedFacts {
            precision: q.precision,
            per_channel: q.per_channel,
            calibration_source: q.calibration.source.clone(),
            method: q.method.label().to_string(),
            exclude: q.exclude.clone(),
            calibration_sha256: q.calibration.sha256.clone(),
            calibration_samples: q.calibration.origins.len(),
            cpu_stage: xtask_parity::parity::component::QDQ_SIMULATION.into(),
            gate_min_cosine: gate.min_cosine,
            gate_max_norm_ratio_error: gate.max_norm_ratio_error,
            gate_source: gate.source,
        })),
        (true, _) => bail!(
            "{}",
            rebuild(&format!(
                "its recipe says {} but its build record holds no quantize step",
                comp.precision()
            ))
        ),
    }
}

fn record_facts<'a>(
    record: &'a ComponentRecord,
    soc: &Soc,
    rebuild: &dyn Fn(&str) -> String,
) -> Result<RecordFacts<'a>> {
    let facts = |name: &str| {
        record
            .step(name)
            .map(|r| &r.facts)
            .with_context(|| rebuild(&format!("no usable `{name}` build record")))
    };
    let (StepFacts::Convert(convert), StepFacts::CpuParity(cpu), StepFacts::Context(context)) = (
        facts("convert")?,
        facts("cpu_parity")?,
        facts(&xtask_ctx_build::steps::Context::record_name(soc))?,
    ) else {
        bail!(
            "{}",
            rebuild("its build record holds the wrong kind of facts")
        );
    };
    let graph = context
        .target
        .graph
        .as_ref()
        .with_context(|| rebuild("its context record names no graph options"))?;
    if context.soc_id != soc.id {
        bail!(
            "{}",
            rebuild(&format!("its binary was built for soc {}", context.soc_id))
        );
    }
    Ok(RecordFacts {
        convert,
        cpu,
        context,
        graph,
    })
}

/// Every waived output of the recipe, once per distinct (output, gate, reason), over every
/// backend's gate.
fn waivers(model: &Model, comp: &Component) -> Vec<super::info::Waiver> {
    let mut out: Vec<super::info::Waiver> = Vec::new();
    for o in &comp.file.outputs {
        let name = o.name.get_ref();
        for b in BackendKind::ALL {
            let gate = comp.gate(&model.file, name, b);
            if let Some(reason) = gate.waiver {
                // What the gate was lowered from: a quantized component's precision default on
                // the QNN backends, else the recipe's `[parity] min_cosine`.
                let from = match &comp.file.quantize {
                    Some(q) if q.precision.is_quantized() && b.is_qnn() => {
                        xtask_recipe::recipe::quantize::default_gate(q.precision).0
                    }
                    _ => comp.file.parity.min_cosine,
                };
                let w = super::info::Waiver {
                    output: name.clone(),
                    from,
                    to: gate.min_cosine,
                    reason,
                };
                if !out.contains(&w) {
                    out.push(w);
                }
            }
        }
    }
    out
}

/// (name, shape, dtype) of a recipe tensor, as the card's I/O contract shows it.
pub(super) fn tensor(s: &TensorSpec) -> (String, Vec<usize>, String) {
    (
        s.name.get_ref().clone(),
        s.shape.clone(),
        s.dtype.to_string(),
    )
}
