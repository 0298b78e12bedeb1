//! How a plan is shown: the dry run's text (steps, inputs, outputs, fresh or why dirty), the
//! commands and config files a toolchain will run, and the same plan as JSON for machines
//! (`build-ctx --dry-run --json`).

use serde::Serialize;

use crate::fingerprint::{DirtyReason, Freshness};
use crate::plan::{ComponentPlan, PlannedStep, StepKind, Versions};
use xtask_base::soc::Soc;
use xtask_recipe::recipe::Model;

pub fn print_plan(
    model: &Model,
    plans: &[ComponentPlan],
    versions: &Versions,
    soc: &Soc,
    verbose: bool,
) {
    xtask_base::outln!(
        "plan: soc {} ({}, v{}), onnxruntime {}, QNN {}",
        soc.id,
        soc.chips.join("/"),
        soc.htp_arch,
        versions.onnxruntime,
        versions.qnn
    );
    let mut all_missing = Vec::new();
    for plan in plans {
        xtask_base::outln!("{}", plan.component);
        for step in &plan.steps {
            let state = match &step.freshness {
                Freshness::Fresh => "fresh".to_string(),
                Freshness::Dirty(reasons) => format!("dirty: {}", reasons.join("; ")),
            };
            xtask_base::outln!("  {:<15} {state}", step.kind.label());
            if let Some(built) = &step.built {
                xtask_base::outln!("      built:   {built}");
            }
            xtask_base::outln!("      inputs:  {}", step.inputs.join(", "));
            if !step.outputs.is_empty() {
                xtask_base::outln!("      outputs: {}", step.outputs.join(", "));
            }
            if verbose && let Some(key) = &step.key {
                xtask_base::outln!("      key:     {}", key.key);
            }
        }
        for m in &plan.missing {
            xtask_base::outln!("  MISSING {m}");
            all_missing.push(m.clone());
        }
    }
    if all_missing.is_empty() {
        xtask_base::outln!("dry run: nothing was run");
    } else {
        xtask_base::outln!(
            "dry run: nothing was run; {} input file(s) are missing (listed above)",
            all_missing.len()
        );
        let hint = model
            .file
            .model
            .obtain
            .as_deref()
            .unwrap_or("see the model's recipes");
        xtask_base::outln!("how to obtain them: {hint}");
    }
}

/// `build-ctx --print-keys`: one line per step, `<component> <step record> <key>`, the key
/// `-` when an input is missing (CI keys its step cache on these lines).
pub fn print_keys(plans: &[ComponentPlan]) -> anyhow::Result<()> {
    for plan in plans {
        for step in &plan.steps {
            let key = step.key.as_ref().map_or("-", |k| k.key.as_str());
            xtask_base::outln!("{} {} {key}", plan.component, step.record_name);
        }
    }
    Ok(())
}

/// The exact commands and config files each step runs, when its toolchain runs commands
/// (`toolchain` says whose: e.g. `QAIRT SDK 2.47.0 at $QAIRT_SDK_ROOT`).
pub fn print_commands(toolchain: &str, model: &Model, plans: &[ComponentPlan]) {
    let runs_commands = plans
        .iter()
        .flat_map(|p| &p.steps)
        .any(|s| !s.rendered.commands.is_empty());
    if !runs_commands {
        return;
    }
    xtask_base::outln!(
        "{toolchain}: commands (run from the project root; STAGING = ctx/{}/.staging-<id>)",
        model.file.model.name
    );
    for plan in plans {
        xtask_base::outln!("{}", plan.component);
        for step in &plan.steps {
            let label = match step.kind {
                StepKind::Quantize => "quantize:",
                StepKind::Convert => "convert:",
                StepKind::CpuParity => "cpu parity:",
                StepKind::Context => "context:",
            };
            for (i, line) in step.rendered.commands.iter().enumerate() {
                let label = if i == 0 { label } else { "" };
                xtask_base::outln!("  {label:<13}{line}");
            }
            for (path, config) in &step.rendered.files {
                let json = serde_json::to_string(config).unwrap_or_default();
                xtask_base::outln!("  {path}: {json}");
            }
        }
    }
}

#[derive(Serialize)]
pub struct PlanJson<'a> {
    pub model: &'a str,
    pub soc: &'a Soc,
    pub versions: &'a Versions,
    pub toolchain: String,
    pub dirty_steps: usize,
    pub components: Vec<ComponentJson<'a>>,
}

#[derive(Serialize)]
pub struct ComponentJson<'a> {
    pub component: &'a str,
    pub missing: &'a [String],
    pub steps: Vec<StepJson<'a>>,
}

#[derive(Serialize)]
pub struct StepJson<'a> {
    pub kind: StepKind,
    pub label: &'static str,
    pub record_name: &'a str,
    pub fresh: bool,
    /// What the recorded step compiled (its typed facts' summary), when it has a record.
    pub built: Option<String>,
    /// Structured reasons (`{"reason": "part_changed", "part": "..."}`); empty when fresh.
    pub reasons: &'a [DirtyReason],
    pub inputs: &'a [String],
    pub outputs: &'a [String],
    /// None when an input file is missing.
    pub key: Option<&'a str>,
    pub key_parts: Option<&'a std::collections::BTreeMap<String, String>>,
    pub commands: &'a [String],
    pub files: &'a [(String, xtask_recipe::htp_target::sdk_config::SdkConfigFile)],
}

fn step_json(step: &PlannedStep) -> StepJson<'_> {
    let reasons: &[DirtyReason] = match &step.freshness {
        Freshness::Fresh => &[],
        Freshness::Dirty(r) => &r.0,
    };
    StepJson {
        kind: step.kind,
        label: step.kind.label(),
        record_name: &step.record_name,
        fresh: step.is_fresh(),
        built: step.built.clone(),
        reasons,
        inputs: &step.inputs,
        outputs: &step.outputs,
        key: step.key.as_ref().map(|k| k.key.as_str()),
        key_parts: step.key.as_ref().map(|k| &k.parts),
        commands: &step.rendered.commands,
        files: &step.rendered.files,
    }
}

/// The plan as one JSON document.
pub fn plan_json<'a>(
    model: &'a Model,
    soc: &'a Soc,
    versions: &'a Versions,
    toolchain: String,
    plans: &'a [ComponentPlan],
) -> PlanJson<'a> {
    PlanJson {
        model: &model.file.model.name,
        soc,
        versions,
        toolchain,
        dirty_steps: plans
            .iter()
            .flat_map(|p| &p.steps)
            .filter(|s| !s.is_fresh())
            .count(),
        components: plans
            .iter()
            .map(|p| ComponentJson {
                component: &p.component,
                missing: &p.missing,
                steps: p.steps.iter().map(step_json).collect(),
            })
            .collect(),
    }
}
