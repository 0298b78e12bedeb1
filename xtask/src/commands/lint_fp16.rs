//! `cargo xtask lint-fp16 [--model M]`: every golden input and output, and every intermediate
//! tensor (exposed as in `bisect`, computed by ORT's CPU EP from the golden inputs), scanned for
//! what fp16 on the HTP cannot hold. Exit 1 when there is an offender.

use anyhow::Result;

use super::{Ctx, Outcome, require_files};
use xtask_parity::parity::component::load_golden;
use xtask_recipe::fp16::{Fp16Finding, scan, scan_golden};
use xtask_runtime::runtime::bootstrap::ensure_runtime;
use xtask_runtime::runtime::{Backend, Runtime};

#[derive(clap::Args)]
pub struct LintFp16 {
    #[command(flatten)]
    sel: super::ModelArgs,
}

impl LintFp16 {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let sel = self.sel.select(ctx)?;
        let model = &sel.model;
        let comps = sel.components();
        require_files(ctx, model, &comps)?;
        let rt = Runtime::load(ensure_runtime(&ctx.root)?)?;
        let mut offenders = 0;
        let mut report = Vec::new();
        for comp in comps {
            let golden = load_golden(&ctx.root, comp)?;
            let mut findings = scan_golden(comp, &golden.inputs, &golden.expected);
            findings.extend(intermediates(ctx, &rt, comp, &golden.inputs)?);
            let largest = findings.iter().map(|f| f.max_abs).fold(0.0f64, f64::max);
            xtask_base::outln!(
                "{:<16} largest |x| {largest:.4e} over {} tensors",
                comp.name(),
                findings.len()
            );
            for f in &findings {
                if f.offender || f.status != "ok" || f.kind != "intermediate" {
                    xtask_base::outln!(
                        "  {:<12} {:<32} max |x| {:>11.4e}  {}{}",
                        f.kind,
                        f.tensor,
                        f.max_abs,
                        f.status,
                        f.file
                            .as_deref()
                            .filter(|_| f.offender)
                            .map(|file| format!(" ({file})"))
                            .unwrap_or_default()
                    );
                }
            }
            offenders += findings.iter().filter(|f| f.offender).count();
            report.push(serde_json::json!({ "component": comp.name(), "largest_abs": largest, "tensors": findings }));
        }
        let dir = xtask_base::project::reports_dir(&ctx.root, &self.sel.model);
        xtask_base::atomic::write_atomic(
            &dir.join("lint-fp16.json"),
            &serde_json::to_vec_pretty(&report)?,
        )?;
        xtask_base::outln!(
            "lint-fp16 {}: {offenders} offender(s); report {}",
            self.sel.model,
            xtask_base::project::rel(&ctx.root, &dir.join("lint-fp16.json"))
        );
        Ok(if offenders == 0 {
            Outcome::Success
        } else {
            Outcome::GateFailed
        })
    }
}

/// Every intermediate tensor of the component on ORT's CPU EP, through a copy of the graph
/// that exposes them (the user's file is not touched).
fn intermediates(
    ctx: &Ctx,
    rt: &Runtime,
    comp: &xtask_recipe::recipe::Component,
    inputs: &std::collections::BTreeMap<String, xtask_onnx::tensor::Tensor>,
) -> Result<Vec<Fp16Finding>> {
    let onnx = ctx.root.join(&comp.file.component.onnx);
    let bytes = std::fs::read(&onnx)?;
    let graph = xtask_onnx::onnx::proto::parse_model(&bytes)?;
    let names: Vec<String> = graph
        .nodes
        .iter()
        .flat_map(|n| n.outputs.iter().cloned())
        .filter(|o| !o.is_empty() && !graph.graph_outputs.contains(o))
        .collect();
    let work = xtask_base::project::scratch_dir(&ctx.root, "lint-fp16").join(comp.name());
    let copy =
        xtask_diagnose::diagnose::probe::write_exposed_copy(&work, &onnx, &bytes, &graph, &names)?;
    // Fed what the HTP is fed: marked masks clamped.
    let outputs = rt
        .open(&copy, &Backend::OrtCpu)?
        .run(&xtask_recipe::fp16::clamp_masks(comp, inputs))?;
    let feeds_softmax = |name: &str| {
        graph
            .nodes
            .iter()
            .any(|n| n.op_type == "Softmax" && n.inputs.iter().any(|i| i == name))
    };
    Ok(names
        .iter()
        .filter_map(|n| outputs.get(n).and_then(|t| scan(n, "intermediate", t, false)))
        .map(|mut f| {
            // Masked attention scores (mask + scores) dip just below -65504; fp16 saturates them
            // and Softmax gives those positions zero weight either way.
            if f.offender && f.min < -xtask_recipe::fp16::FP16_MAX && f.max_abs <= -f.min && -f.min < 2.0 * xtask_recipe::fp16::FP16_MAX && feeds_softmax(&f.tensor) {
                f.offender = false;
                f.status = "masked scores below -65504 (saturate in fp16; zero weight after the Softmax it feeds)".into();
            }
            f
        })
        .collect())
}
