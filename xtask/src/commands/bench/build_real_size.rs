//! `cargo xtask bench build --real-size` (opt-in, long: hours on 2 cores; README "At the
//! bundle's real size" has the measured durations). In `target/bench/realsize/` (generated
//! once by `gen_tiny_model.py --real-size`, ~19 GB):
//!
//! 1. **Vision compile scaling:** the real-width vision graph with 1, 2, 3 and the card's 10
//!    ViT layers (`realsize-vit<N>`), each built cold; the context step's wall and CPU seconds and the
//!    compiler's slowest stage, as ratios against the 1-layer build of the same run.
//! 2. **Remedies, by recipe alone,** on the 1-layer graph: O2 instead of O3, and the
//!    `decompose_layernorm` rewrite at O3. Each is a recipe folder beside the base one
//!    (`realsize-vit1-o2`, `realsize-vit1-ln`), built and then judged by `parity --backend htp`
//!    against the same golden; compile seconds as ratios against the O3 build above.
//! 3. **The vision split probe** (`vsplit<N>`, from `gen_tiny_model.py --vision-split`): the
//!    N-layer graph cut at its residual adds into one context per ViT layer plus the tail, and
//!    at the junction only (body + tail); each piece built alone at O3, the sums of their
//!    compile CPU seconds against the whole graph's above; `parity --backend htp` of the
//!    1-layer pieces.
//! 4. **The real-size model:** `build-ctx` of every component (`--jobs`), the per-step table
//!    (seconds, CPU seconds, peak RSS, the scheduler's estimate, compiler stages), `parity
//!    --backend htp` of one LLM split and the action components, and each context binary's
//!    size against the card's.
//! 5. **The action_context size probe:** the real-size action_context cut down to its parts
//!    (`ctxp-*`: the projections alone, with the per-layer RMSNorm, at widths 1024, 768 and
//!    512), each built alone: what its binary holds besides the weights.
//!
//! Every build report is kept in `target/bench/build-realsize/`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use xtask_ctx_build::report::BuildReport;
use xtask_parity::parity::report::ParityReport;

use super::{generate_once, xtask_in};

/// The card's context binary sizes (MB, `../model-card.md`).
const CARD_MB: &[(&str, f64)] = &[
    ("vision", 447.0),
    ("llm_split0", 1821.0),
    ("llm_split1", 1821.0),
    ("llm_split2", 1821.0),
    ("llm_split3", 1821.0),
    ("action_context", 4.0),
    ("action_step", 1162.0),
];

/// The phases to run (all by default).
pub struct Phases {
    pub vision_layers: Vec<u32>,
    pub vision_split: Vec<u32>,
    pub remedies: bool,
    pub model: bool,
    pub context_probes: bool,
    pub jobs: usize,
}

pub fn run(repo: &Path, phases: &Phases) -> Result<()> {
    let project = xtask_base::project::scratch_dir(repo, "bench/realsize");
    let out = xtask_base::project::scratch_dir(repo, "bench/build-realsize");
    std::fs::create_dir_all(&out)?;
    let mut base: Option<(f64, f64)> = None;
    let mut whole_cpu = std::collections::BTreeMap::new();
    if !phases.vision_layers.is_empty() {
        xtask_base::outln!("vision compile scaling (real width, O3, fp16, soc 77):");
        for &n in &phases.vision_layers {
            let model = format!("realsize-vit{n}");
            generate(repo, &project, Some(n))?;
            let report = build(&project, &out, &model, 1)?;
            let (wall, cpu, stage) = context_seconds(&report, "vision");
            whole_cpu.insert(n, cpu);
            let (bw, bc) = *base.get_or_insert((wall / n as f64, cpu / n as f64));
            xtask_base::outln!(
                "  {n} layer(s): context {wall:.0} s wall, {cpu:.0} s CPU ({:.2}x / {:.2}x the 1-layer figure per layer); slowest stage {stage}",
                wall / n as f64 / bw,
                cpu / n as f64 / bc,
            );
        }
    }
    if phases.remedies {
        generate(repo, &project, Some(1))?;
        xtask_base::outln!("remedies on the 1-layer vision graph, each by recipe:");
        for (suffix, what, edit) in REMEDIES {
            let model = remedy_recipes(&project, "realsize-vit1", suffix, *edit)?;
            let report = build(&project, &out, &model, 1)?;
            let (wall, cpu, stage) = context_seconds(&report, "vision");
            let parity = htp_parity(&project, &out, &model, "vision")?;
            xtask_base::outln!(
                "  {what}: context {wall:.0} s wall, {cpu:.0} s CPU, slowest stage {stage}; HTP parity {parity}"
            );
        }
    }
    if !phases.vision_split.is_empty() {
        xtask_base::outln!("vision split probe (each piece its own context; O3, fp16, soc 77):");
        for &n in &phases.vision_split {
            vision_split(repo, &project, &out, n, whole_cpu.get(&n).copied())?;
        }
    }
    if phases.model {
        generate(repo, &project, None)?;
        let report = build(&project, &out, "realsize", phases.jobs)?;
        super::build_full_width::print_steps_of(&report);
        let only = "llm_split0,action_context,action_step";
        let started = Instant::now();
        let parity = htp_parity(&project, &out, "realsize", only)?;
        xtask_base::outln!(
            "parity --backend htp --only {only}: {:.0} s; {parity}",
            started.elapsed().as_secs_f64()
        );
        xtask_base::outln!("context binaries against the card:");
        for (comp, card) in CARD_MB {
            let bin = project.join(format!("ctx/realsize/{comp}_socid77_archv73.bin"));
            match std::fs::metadata(&bin) {
                Ok(m) => {
                    let mb = m.len() as f64 / 1e6;
                    xtask_base::outln!(
                        "  {comp:<15} {mb:>8.1} MB  card {card:>6.0} MB  {:+.1} %",
                        (mb / card - 1.0) * 100.0
                    );
                }
                Err(_) => xtask_base::outln!("  {comp:<15} not built"),
            }
        }
    }
    if phases.context_probes {
        context_probes(repo, &out)?;
    }
    xtask_base::outln!("(reports kept in {})", xtask_base::project::rel(repo, &out));
    Ok(())
}

/// The `n`-layer vision split probe: every piece built, its compile CPU seconds; the cut per
/// layer (every `vision_l<i>` + the tail) and at the junction (`vision_body` + the tail) as
/// sums, against the whole graph's compile (`whole_cpu`, when built in this run).
fn vision_split(
    repo: &Path,
    project: &Path,
    out: &Path,
    n: u32,
    whole_cpu: Option<f64>,
) -> Result<()> {
    let model = format!("vsplit{n}");
    let layers = n.to_string();
    generate_once(
        repo,
        project,
        &format!(".complete-{model}"),
        &format!("{model} (once; about 0.3 GB per layer)"),
        &["--vision-split", "--vision-layers", &layers],
    )?;
    let report = build(project, out, &model, 1)?;
    let mut per_layer = 0.0;
    let mut pieces = (0..n).map(|i| format!("vision_l{i}")).collect::<Vec<_>>();
    pieces.push("vision_tail".into());
    for piece in &pieces {
        let (wall, cpu, stage) = context_seconds(&report, piece);
        per_layer += cpu;
        xtask_base::outln!(
            "  {n} layer(s), {piece:<12} context {wall:>6.0} s wall, {cpu:>6.0} s CPU; slowest stage {stage}"
        );
    }
    let versus = |cpu: f64| {
        whole_cpu.map_or(String::new(), |w| {
            format!(" ({:.2}x the whole graph's {w:.0} s)", cpu / w)
        })
    };
    xtask_base::outln!(
        "  {n} layer(s): one context per layer + tail: {per_layer:.0} s CPU in all{}",
        versus(per_layer)
    );
    if n > 1 {
        let (wall, body, stage) = context_seconds(&report, "vision_body");
        let (_, tail, _) = context_seconds(&report, "vision_tail");
        xtask_base::outln!(
            "  {n} layer(s), vision_body  context {wall:>6.0} s wall, {body:>6.0} s CPU; slowest stage {stage}"
        );
        xtask_base::outln!(
            "  {n} layer(s): cut at the junction (body + tail): {:.0} s CPU{}",
            body + tail,
            versus(body + tail)
        );
    }
    if n == 1 {
        let parity = htp_parity(project, out, &model, "vision_l0,vision_tail")?;
        xtask_base::outln!("  1 layer: HTP parity of the pieces: {parity}");
    }
    Ok(())
}

/// The action_context size probe (`gen_tiny_model.py --context-probes`, in its own project
/// `target/bench/ctxprobe/`): each cut-down variant built alone, its binary against its
/// weights at fp16 (half its float32 ONNX bytes).
fn context_probes(repo: &Path, out: &Path) -> Result<()> {
    let project = xtask_base::project::scratch_dir(repo, "bench/ctxprobe");
    generate_once(
        repo,
        &project,
        ".complete-ctxprobe",
        "the action_context size probe (once; 0.4 GB, about 1 min)",
        &["--context-probes"],
    )?;
    let mut models: Vec<String> = std::fs::read_dir(project.join("recipes"))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("ctxp-"))
        .collect();
    models.sort();
    xtask_base::outln!("action_context size probe (each variant alone; soc 77, fp16, O3):");
    for model in &models {
        build(&project, out, model, 1)?;
        let bytes =
            |rel: String| std::fs::metadata(project.join(&rel)).map(|m| m.len() as f64 / 1e6);
        let onnx = bytes(format!("onnx/{model}/action_context.onnx"))?;
        let bin = bytes(format!("ctx/{model}/action_context_socid77_archv73.bin"))?;
        xtask_base::outln!(
            "  {model:<18} weights {:>5.2} MB at fp16  binary {bin:>5.2} MB ({:.2}x)",
            onnx / 2.0,
            bin / (onnx / 2.0)
        );
    }
    Ok(())
}

type Edit = fn(&str) -> String;

/// Remedies a recipe can express: (model suffix, what, edit of the component recipe).
const REMEDIES: &[(&str, &str, Edit)] = &[
    ("o2", "O2 instead of O3", |t| {
        t.replace("optimization_level = 3", "optimization_level = 2")
    }),
    ("ln", "decompose_layernorm at O3", |t| {
        format!("{t}\n[rewrite]\napply = [\"decompose_layernorm\"]\n")
    }),
];

/// `recipes/<base>-<suffix>/`: the base model's recipes (same ONNX and golden files) under a
/// new model name with the component recipes edited; returns the new model's name.
fn remedy_recipes(project: &Path, base: &str, suffix: &str, edit: Edit) -> Result<String> {
    let name = format!("{base}-{suffix}");
    let from = project.join("recipes").join(base);
    let to = project.join("recipes").join(&name);
    std::fs::create_dir_all(&to)?;
    for entry in std::fs::read_dir(&from)? {
        let path = entry?.path();
        let text = std::fs::read_to_string(&path)?;
        let file = path.file_name().context("recipe file name")?;
        let text = if file == "model.toml" {
            text.replace(&format!("name = \"{base}\""), &format!("name = \"{name}\""))
        } else {
            edit(&text)
        };
        std::fs::write(to.join(file), text)?;
    }
    Ok(name)
}

/// Generates the model (`vision_layers`: the vision-only study model) once.
fn generate(repo: &Path, project: &Path, vision_layers: Option<u32>) -> Result<()> {
    let model = vision_layers.map_or("realsize".to_string(), |n| format!("realsize-vit{n}"));
    let n = vision_layers.map(|n| n.to_string());
    let mut args = vec!["--real-size"];
    if let Some(n) = &n {
        args.extend(["--vision-layers", n.as_str()]);
    }
    generate_once(
        repo,
        project,
        &format!(".complete-{model}"),
        &format!("{model} (once; the whole model is 17.9 GB, 58 min measured on 2 loaded cores)"),
        &args,
    )
}

/// A cold `build-ctx` of `model`; its report, also kept in `out`.
fn build(project: &Path, out: &Path, model: &str, jobs: usize) -> Result<BuildReport> {
    xtask_base::errln!("build-ctx --model {model} --force --jobs {jobs} ...");
    let jobs = jobs.to_string();
    xtask_in(
        project,
        &[
            "build-ctx",
            "--soc",
            "77",
            "--model",
            model,
            "--force",
            "--jobs",
            &jobs,
        ],
    )?;
    BuildReport::read(&keep(project, out, model, "build-soc77.json")?)
}

/// `parity --backend htp --only <only>`: its verdict line per component.
fn htp_parity(project: &Path, out: &Path, model: &str, only: &str) -> Result<String> {
    xtask_base::errln!("parity --backend htp --model {model} --only {only} ...");
    // A failed gate is a finding here, not an error of the bench: read the report either way.
    let _ = xtask_in(
        project,
        &[
            "parity",
            "--backend",
            xtask_base::vocab::BackendKind::Htp.label(),
            "--model",
            model,
            "--only",
            only,
        ],
    );
    let kept = keep(project, out, model, "parity-htp.json")?;
    let report: ParityReport = xtask_base::record::read(&kept, "cargo xtask parity --backend htp")?;
    Ok(parity_summary(&report))
}

/// Copies a report of the run into `out` (kept beside the bench's figures); its path there.
fn keep(project: &Path, out: &Path, model: &str, file: &str) -> Result<PathBuf> {
    let from: PathBuf = project.join("reports").join(model).join(file);
    let kept = out.join(format!("{model}-{file}"));
    std::fs::copy(&from, &kept).with_context(|| format!("cannot keep {}", from.display()))?;
    Ok(kept)
}

/// The context step's wall and CPU seconds and its slowest compiler stage.
fn context_seconds(report: &BuildReport, comp: &str) -> (f64, f64, String) {
    let Some(step) = report.step(comp, "context binary") else {
        return (f64::NAN, f64::NAN, "-".into());
    };
    let slowest = step
        .detail
        .slowest_stage()
        .map_or("-".into(), |(n, s)| format!("{n} {s:.0} s"));
    (step.seconds, step.detail.cpu_s.unwrap_or(f64::NAN), slowest)
}

/// `vision: PASS, min cosine 0.99991 (1 - cos 9.0e-5)`, one part per component.
fn parity_summary(report: &ParityReport) -> String {
    report
        .components
        .iter()
        .map(|c| {
            let cos = c
                .outputs
                .iter()
                .map(|o| o.metrics.cosine)
                // A NaN cosine is shown as NaN, never hidden behind the others' minimum.
                .fold(f64::INFINITY, |a, c| {
                    if a.is_nan() || c.is_nan() {
                        f64::NAN
                    } else {
                        a.min(c)
                    }
                });
            format!(
                "{}: {}, min cosine {cos:.6} (1 - cos {:.1e})",
                c.component,
                if c.pass { "PASS" } else { "FAIL" },
                1.0 - cos
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}
