//! The real-size model of `bench real-size`: generated once and reused while its files hash to
//! what its generation recorded (`generated.json`: the generator's own sha256 and every
//! file's), the model variant of the chosen precisions (`realsize`, `realsize-w8a16`,
//! `realsize-mixed`), the stages' estimates, and the figures read back from the reports each
//! stage wrote.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::RealSizePrecision;
use super::measure::Measured;
use super::summary::{ChainFigure, OutputFigure, StageResult, Summary};
use xtask_base::vocab::BackendKind;

/// The generated model's name (the generator's `--real-size` writes `recipes/realsize/`).
const BASE: &str = "realsize";

pub fn variant_name(p: RealSizePrecision) -> String {
    match p {
        RealSizePrecision::Fp16 => BASE.into(),
        RealSizePrecision::W8a16 => format!("{BASE}-w8a16"),
        RealSizePrecision::Mixed => format!("{BASE}-mixed"),
    }
}

/// What one generation wrote: the generator's sources' sha256 and each file's.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Generated {
    generator_sha256: String,
    files: BTreeMap<String, String>,
}

/// The generator's sources (the script and its package), hashed together.
fn generator_sha256(repo: &Path) -> Result<String> {
    let mut files = vec![repo.join("xtask/scripts/gen_tiny_model.py")];
    for e in walkdir::WalkDir::new(repo.join("xtask/scripts/tinygen")).sort_by_file_name() {
        let e = e?;
        if e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "py") {
            files.push(e.path().to_path_buf());
        }
    }
    let mut all = String::new();
    for f in &files {
        all.push_str(&xtask_base::hashing::sha256_file(f)?);
        all.push('\n');
    }
    Ok(xtask_base::hashing::sha256_bytes(all.as_bytes()))
}

/// Every file the generation wrote (onnx/, golden/ and recipes/ of `realsize`).
fn generated_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for top in ["onnx", "golden", "recipes"] {
        let base = dir.join(top).join(BASE);
        for e in walkdir::WalkDir::new(&base)
            .sort_by_file_name()
            .into_iter()
            .flatten()
        {
            if e.file_type().is_file()
                && let Ok(rel) = e.path().strip_prefix(dir)
            {
                out.push(rel.display().to_string());
            }
        }
    }
    out
}

fn hash_all(dir: &Path, files: &[String]) -> Result<BTreeMap<String, String>> {
    let task =
        xtask_base::ui::progress::Task::new("bench real-size: hashing the model", files.len());
    let mut out = BTreeMap::new();
    for f in files {
        task.working_on(f);
        out.insert(f.clone(), xtask_base::hashing::sha256_file(&dir.join(f))?);
        task.step_done(f, true);
    }
    Ok(out)
}

/// Generates the model into `dir`, or reuses the one there when the generator is the same and
/// every file still hashes to what the generation recorded. A model generated before its
/// hashes were recorded (the marker, no `generated.json`) has them recorded now.
pub fn generate_or_reuse(repo: &Path, dir: &Path, estimate: Option<f64>) -> Result<StageResult> {
    let started = std::time::Instant::now();
    let record = dir.join("generated.json");
    let marker = dir.join(format!(".complete-{BASE}"));
    let generator = generator_sha256(repo)?;
    let reuse = match (marker.is_file(), std::fs::read(&record)) {
        (true, Ok(bytes)) => {
            let want: Generated = serde_json::from_slice(&bytes)
                .with_context(|| format!("{} is not a generation record", record.display()))?;
            let files: Vec<String> = want.files.keys().cloned().collect();
            let now = hash_all(dir, &files)?;
            match (want.generator_sha256 == generator, now == want.files) {
                (true, true) => Some("reused: every file hashes to what its generation recorded"),
                (false, _) => {
                    xtask_base::ui::warning(
                        "the generator changed since the model was generated: generating it again",
                    );
                    None
                }
                (true, false) => {
                    xtask_base::ui::warning(
                        "files of the generated model changed since it was generated: generating it again",
                    );
                    None
                }
            }
        }
        (true, Err(_)) => Some("reused (generated before its hashes were recorded; recorded now)"),
        _ => None,
    };
    let outcome = match reuse {
        Some(how) => how.to_string(),
        None => {
            for top in ["onnx", "golden", "recipes"] {
                let d = dir.join(top).join(BASE);
                if d.exists() {
                    std::fs::remove_dir_all(&d)?;
                }
            }
            let _ = std::fs::remove_file(&marker);
            super::super::generate_once(
                repo,
                dir,
                &format!(".complete-{BASE}"),
                "the real-size model (~18 GB; about 6 min on an idle 2-core machine, an hour loaded)",
                &["--real-size"],
            )?;
            "generated".to_string()
        }
    };
    super::super::link_runtime(repo, dir)?;
    if !record.is_file() || outcome == "generated" {
        let files = generated_files(dir);
        let hashes = hash_all(dir, &files)?;
        let g = Generated {
            generator_sha256: generator,
            files: hashes,
        };
        xtask_base::atomic::write_atomic(&record, &serde_json::to_vec_pretty(&g)?)?;
    }
    let wall = started.elapsed().as_secs_f64();
    Ok(StageResult {
        name: "generate".into(),
        command: format!(
            "python3 xtask/scripts/gen_tiny_model.py --real-size {}",
            dir.display()
        ),
        measured: Measured {
            exit_code: 0,
            wall_s: wall,
            ..Measured::default()
        },
        disk_bytes: super::measure::disk_bytes(&[
            &dir.join("onnx").join(BASE),
            &dir.join("golden").join(BASE),
        ]),
        estimate_s: estimate,
        kept_from_earlier_run: false,
        outcome,
    })
}

/// Writes the model variant of the precision (w8a16: every component quantized at the default
/// gates); `mixed` must exist already, written by `precision --apply` or by hand.
pub fn write_variant(dir: &Path, p: RealSizePrecision) -> Result<()> {
    let name = variant_name(p);
    let to = dir.join("recipes").join(&name);
    match p {
        RealSizePrecision::Fp16 => Ok(()),
        RealSizePrecision::Mixed => {
            if !to.join("model.toml").is_file() {
                bail!(
                    "--precision mixed builds {} as it stands, and it does not exist: write it with `cargo xtask --root {} precision --model {BASE} --backend qdq --apply` (then copy its recipes there), or by hand from recipes/{BASE}/",
                    to.display(),
                    dir.display()
                );
            }
            Ok(())
        }
        RealSizePrecision::W8a16 => {
            let from = dir.join("recipes").join(BASE);
            std::fs::create_dir_all(&to)?;
            for e in std::fs::read_dir(&from)? {
                let path = e?.path();
                let file = path.file_name().context("recipe file name")?.to_owned();
                let text = std::fs::read_to_string(&path)?;
                let text = if file == "model.toml" {
                    text.replace(&format!("name = \"{BASE}\""), &format!("name = \"{name}\""))
                } else {
                    format!("{}\n[quantize]\nprecision = \"w8a16\"\n", text.trim_end())
                };
                // Rewritten only when different, so an unchanged variant keeps its builds fresh.
                let dest = to.join(&file);
                if std::fs::read_to_string(&dest).ok().as_deref() != Some(text.as_str()) {
                    xtask_base::atomic::write_atomic(&dest, text.as_bytes())?;
                }
            }
            Ok(())
        }
    }
}

/// Estimates in seconds: the generation, then each stage. From the earlier run's measurement
/// of a stage that completed, else from the size model (seconds per GB of the model's float ONNX,
/// measured on 2 cores with the HTP emulated: docs/real-size.md).
pub fn estimates(dir: &Path, p: RealSizePrecision, earlier: Option<&Summary>) -> Vec<Option<f64>> {
    let names = [
        "generate",
        "build",
        "parity-htp",
        "chain-htp",
        "package",
        "verify",
    ];
    let gb = super::measure::disk_bytes(&[&dir.join("onnx").join(BASE)]) as f64 / 1e9;
    let gb = if gb > 0.0 { gb } else { 17.9 };
    // Seconds per GB of float ONNX: fp16 builds compile slower and emulate far slower.
    let (build, parity, chain) = match p {
        RealSizePrecision::Fp16 => (110.0, 1500.0, 1500.0),
        _ => (110.0, 250.0, 250.0),
    };
    let model = [
        360.0,
        build * gb,
        parity * gb,
        chain * gb,
        8.0 * gb,
        6.0 * gb,
    ];
    // An earlier run's measurement of a stage that completed wins over the size model.
    names
        .iter()
        .zip(model)
        .map(|(n, m)| {
            let measured = earlier
                .and_then(|e| e.stage(n))
                .filter(|s| s.measured.exit_code == 0)
                .map(|s| s.measured.wall_s);
            Some(measured.unwrap_or(m))
        })
        .collect()
}

/// What a stage concluded, read from the report it wrote.
pub fn outcome(dir: &Path, model: &str, stage: &str, m: &Measured) -> Result<String> {
    let reports = dir.join("reports").join(model);
    let word = if m.exit_code == 0 { "PASS" } else { "FAIL" };
    Ok(match stage {
        "build" => {
            match xtask_ctx_build::report::BuildReport::read(&reports.join("build-soc77.json")) {
                Ok(r) => {
                    let failed: Vec<String> = r
                        .components
                        .iter()
                        .filter(|c| !c.pass)
                        .map(|c| c.component.clone())
                        .collect();
                    if failed.is_empty() {
                        format!(
                            "{word}: {} components built{}",
                            r.components.len(),
                            reused_steps(&r)
                        )
                    } else {
                        format!("FAIL: {} failed", failed.join(", "))
                    }
                }
                Err(_) => format!("{word} (exit {})", m.exit_code),
            }
        }
        "chain-htp" => match xtask_chain::chain::report::RunReport::read_stem(
            &reports,
            "run-htp-iters1-warmup0",
        ) {
            Ok(r) => match r.actions() {
                Some(a) => format!(
                    "{}: actions {}",
                    r.verdict().word(),
                    xtask_chain::chain::report_md::actions_figure(a)
                ),
                None => r.verdict().word().to_string(),
            },
            Err(_) => format!("{word} (exit {})", m.exit_code),
        },
        _ => format!("{word} (exit {})", m.exit_code),
    })
}

/// The steps a resumed build took from an earlier run (fresh, their records kept) and the wall
/// seconds they took when they ran: the stage's own wall time leaves them out, so a resumed
/// bench's total is never read as the whole build's.
fn reused_steps(r: &xtask_ctx_build::report::BuildReport) -> String {
    use xtask_ctx_build::report::StepStatus;
    let reused: Vec<f64> = r
        .components
        .iter()
        .flat_map(|c| &c.steps)
        .filter(|s| s.status == StepStatus::Fresh)
        .map(|s| s.seconds)
        .collect();
    if reused.is_empty() {
        return String::new();
    }
    format!(
        " ({} steps fresh from an earlier run, {} s of wall time when they ran, not in this stage's)",
        reused.len(),
        reused.iter().sum::<f64>().round()
    )
}

/// Whether the build that just ran ran any step (else the binaries are the ones an earlier
/// run measured).
pub fn build_ran_steps(dir: &Path, model: &str) -> bool {
    let path = dir.join("reports").join(model).join("build-soc77.json");
    match xtask_ctx_build::report::BuildReport::read(&path) {
        Ok(r) => r.components.iter().any(|c| {
            c.steps.iter().any(|s| {
                !matches!(
                    s.status,
                    xtask_ctx_build::report::StepStatus::Fresh
                        | xtask_ctx_build::report::StepStatus::Earlier
                )
            })
        }),
        Err(_) => true,
    }
}

/// The binaries' sizes, the HTP parity figures and the chain's, from the reports so far.
pub fn collect_figures(dir: &Path, model: &str, s: &mut Summary) {
    let reports = dir.join("reports").join(model);
    let soc = xtask_base::soc::parse_soc("77").ok();
    if let (Ok(m), Some(soc)) = (xtask_recipe::recipe::load_model(dir, model), &soc) {
        s.binaries = m
            .components
            .iter()
            .filter_map(|c| {
                let art = xtask_ctx_build::artifacts::artifacts(model, c.name(), soc);
                let bytes = std::fs::metadata(dir.join(&art.bin)).ok()?.len();
                Some((c.name().to_string(), bytes))
            })
            .collect();
    }
    if let Ok(Some(p)) =
        xtask_parity::parity::report::ParityReport::read(&reports, BackendKind::Htp)
    {
        s.htp_parity = p
            .components
            .iter()
            .flat_map(|c| {
                c.outputs.iter().map(move |o| OutputFigure {
                    component: c.component.clone(),
                    output: o.name.clone(),
                    precision: c.precision.map_or("fp16".into(), |p| p.to_string()),
                    cosine: o.metrics.cosine,
                    gate: o.gate.min_cosine,
                    gate_source: o.gate.source.clone(),
                    verdict: xtask_base::vocab::Verdict::of(o.verdict.pass).word().into(),
                })
            })
            .collect();
    }
    if let Ok(r) =
        xtask_chain::chain::report::RunReport::read_stem(&reports, "run-htp-iters1-warmup0")
    {
        let actions = r.actions();
        s.chain = Some(ChainFigure {
            verdict: r.verdict().word().into(),
            actions_max_abs_err: r.actions_max_abs_err,
            actions_gate: actions
                .and_then(|a| a.max_abs_gate.as_ref())
                .map(|g| g.max_abs),
            actions_gate_source: actions
                .and_then(|a| a.max_abs_gate.as_ref())
                .map(|g| g.source.clone()),
            actions_cosine: r.actions_cosine,
            peak_rss_mb: r.run.peak_rss_mb,
            mode: r.run.mode.clone(),
            failures: r.failures.clone(),
            boundaries: r
                .run
                .boundaries
                .iter()
                .map(|b| {
                    (
                        b.name.clone(),
                        b.metrics.as_ref().map_or(f64::NAN, |m| m.cosine),
                    )
                })
                .collect(),
        });
    }
}
