//! The operator conformance sweep (`cargo xtask conformance`) and the lint that reads its
//! report (`cargo xtask lint`, printed by `build-ctx` before it builds).
//!
//! Why: a component's parity says *that* a backend deviates, bisect says *where* in one graph;
//! the sweep says which operator, with which attributes, deviates on which backend, measured
//! alone on the inputs the graphs really give it and on edge cases, so a graph that uses a
//! deviating operator is known before a build spends an hour on it.
//!
//! `graph` decides what is measured and the keys; `collect` turns graphs into single-node
//! models; `inputs` makes the input sets; `judge` holds the bounds; `report` the committed
//! report; `lint` the warnings.

pub mod collect;
pub mod graph;
pub mod html;
pub mod inputs;
pub mod judge;
pub mod lint;
pub mod report;

use std::path::Path;
use std::time::Instant;

use anyhow::Result;

use collect::{Group, collect, feeds};
use judge::{Judged, Verdict, bound, fp16_inputs_explain, worst_output};
use report::{ConformanceReport, Described, InputHash, OpGroup, Row};

use xtask_base::vocab::BackendKind;
use xtask_recipe::recipe::{Component, Model};
use xtask_runtime::runtime::{Backend, Runtime};

/// What one sweep measures.
pub struct SweepJob<'a> {
    pub root: &'a Path,
    pub model: &'a Model,
    pub comps: Vec<&'a Component>,
    pub rt: &'a Runtime,
    /// `cpu` and/or `htp`.
    pub backends: Vec<xtask_base::vocab::BackendKind>,
    /// Operator types to measure (all when empty).
    pub ops: Vec<String>,
    pub seed: u64,
    /// The command line that reproduces this sweep.
    pub command: String,
}

/// The sweep as steps: every component's graph collected into operator groups (with the
/// hashes of the files measured), every group measured on every backend, then the report.
pub fn sweep(job: &SweepJob<'_>) -> Result<ConformanceReport> {
    let started = Instant::now();
    let (groups, hashes) = collect_groups(job)?;
    xtask_base::outln!(
        "conformance {}: {} operator group(s) from {} component(s)",
        job.model.file.model.name,
        groups.len(),
        job.comps.len()
    );
    let rows = measure_groups(job, &groups)?;
    Ok(assemble(job, &groups, hashes, rows, started))
}

/// The operator groups of every component (in order, a node joining the first group of its
/// key) and the hashes of each component's ONNX and external data.
fn collect_groups(job: &SweepJob<'_>) -> Result<(Vec<Group>, Vec<InputHash>)> {
    let model_name = &job.model.file.model.name;
    let mut groups = Vec::new();
    let mut hashes = Vec::new();
    let memo_path = xtask_base::hashing::HashMemo::path_in(job.root);
    let mut memo = xtask_base::hashing::HashMemo::load(&memo_path);
    for comp in &job.comps {
        let work = xtask_base::project::scratch_dir(job.root, "conformance")
            .join(model_name)
            .join(comp.name());
        let graph = collect(job.root, &work, job.rt, comp, &job.ops, &mut groups)?;
        hashes.push(input_hash_with(
            job.root,
            comp,
            &graph.external_data,
            &mut memo,
        )?);
    }
    memo.save(&memo_path)?;
    Ok((groups, hashes))
}

/// Every group's rows, with one progress line per group (each backend's summary).
fn measure_groups(job: &SweepJob<'_>, groups: &[Group]) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for (i, group) in groups.iter().enumerate() {
        let found = measure(job, group)?;
        let line: Vec<String> = job
            .backends
            .iter()
            .map(|b| backend_summary(*b, &found))
            .collect();
        xtask_base::outln!(
            "[{}/{}] {} {{{}}} ({}): {}",
            i + 1,
            groups.len(),
            group.op,
            group.attributes,
            group.shapes,
            line.join("; ")
        );
        rows.extend(found);
    }
    Ok(rows)
}

/// The report: what reproduces it (command, seed, tools, HTP, input hashes), the input sets
/// and bounds it judged by, each group with its repro command, and the rows.
fn assemble(
    job: &SweepJob<'_>,
    groups: &[Group],
    hashes: Vec<InputHash>,
    rows: Vec<Row>,
    started: Instant,
) -> ConformanceReport {
    let model_name = &job.model.file.model.name;
    let htp_used = job.backends.contains(&xtask_base::vocab::BackendKind::Htp);
    ConformanceReport {
        schema_version: <ConformanceReport as xtask_base::record::Versioned>::SCHEMA,
        model: model_name.clone(),
        command: job.command.clone(),
        seed: job.seed,
        created_unix: xtask_runtime::report::now_unix(),
        versions: xtask_runtime::report::ToolVersions::of(job.rt),
        htp: htp_used.then(|| xtask_runtime::runtime::probe::HtpKind::of(job.rt)),
        inputs: hashes,
        input_sets: inputs::INPUT_SETS
            .iter()
            .map(|(name, what)| Described {
                name: name.to_string(),
                what: what.to_string(),
            })
            .collect(),
        bounds: job.backends.iter().map(|b| bound(*b)).collect(),
        ops: groups
            .iter()
            .map(|g| OpGroup {
                op: g.op.clone(),
                attributes: g.attributes.clone(),
                shapes: g.shapes.clone(),
                nodes: g.nodes.clone(),
                repro: repro(model_name, g, job.seed),
            })
            .collect(),
        rows,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// `cpu ok` or `cpu DEVIATES on real, random (worst max-abs 1.2e-3)`.
fn backend_summary(backend: BackendKind, rows: &[Row]) -> String {
    let mine: Vec<&Row> = rows.iter().filter(|r| r.backend == backend).collect();
    let worst = mine.iter().map(|r| r.verdict).max().unwrap_or(Verdict::Ok);
    let sets: Vec<&str> = mine
        .iter()
        .filter(|r| r.verdict == worst)
        .map(|r| r.input_set.as_str())
        .collect();
    let peak = mine
        .iter()
        .filter(|r| r.verdict == worst)
        .map(|r| r.max_abs)
        .filter(|x| x.is_finite())
        .fold(f64::NAN, f64::max);
    match worst {
        Verdict::Ok => format!("{backend} ok"),
        v => format!(
            "{backend} {} on {}{}",
            v.label(),
            sets.join(", "),
            if peak.is_nan() {
                String::new()
            } else {
                format!(" (worst max-abs {peak:.2e})")
            }
        ),
    }
}

/// The command that measures `group` again, alone.
fn repro(model: &str, g: &Group, seed: u64) -> String {
    let op = g.op.rsplit("::").next().unwrap_or(&g.op);
    format!(
        "cargo xtask conformance --model {model} --only {} --op {op}{}",
        g.component,
        seed_flag(seed)
    )
}

/// The seed of the committed reports.
pub const DEFAULT_SEED: u64 = 13;

/// ` --seed N` for a command line, empty for the default seed (which the command need not say).
pub fn seed_flag(seed: u64) -> String {
    if seed == DEFAULT_SEED {
        String::new()
    } else {
        format!(" --seed {seed}")
    }
}

/// Every row of one group: per backend, per input set (one `-` row when the backend refused
/// the operator). The reference opens first: when it cannot, no backend can be judged.
fn measure(job: &SweepJob<'_>, g: &Group) -> Result<Vec<Row>> {
    let comp = job
        .comps
        .iter()
        .find(|c| c.name() == g.component)
        .expect("a group's component is one of the job's");
    let mut reference = match job.rt.open(&g.model_path, &Backend::OrtCpu) {
        Ok(s) => s,
        Err(e) => {
            let text = format!(
                "the reference (ORT CPU EP) cannot open it: {}",
                short_reason(job.root, &e)
            );
            return Ok(job
                .backends
                .iter()
                .map(|b| {
                    row(
                        job,
                        g,
                        *b,
                        "-",
                        Judged::failed(Verdict::Error, text.clone()),
                    )
                })
                .collect());
        }
    };
    let mut sessions = open_backends(job, g, comp)?;
    let mut rows = refused_rows(job, g, &sessions);
    let sets: Vec<&str> = if g.data.is_empty() {
        vec!["real"]
    } else {
        inputs::INPUT_SETS.iter().map(|(n, _)| *n).collect()
    };
    for set in sets {
        rows.extend(measure_set(job, g, set, &mut reference, &mut sessions));
    }
    Ok(rows)
}

/// One session per backend measured, or why the backend refused the operator (one line).
type Sessions = Vec<(
    BackendKind,
    std::result::Result<xtask_runtime::runtime::session::CheckedSession, String>,
)>;

/// The group's single-node model opened on each backend of the job.
fn open_backends(job: &SweepJob<'_>, g: &Group, comp: &Component) -> Result<Sessions> {
    let mut sessions = Vec::new();
    for b in &job.backends {
        let backend = xtask_runtime::runtime::backend_for_component(job.model, comp, *b)?;
        let session = job.rt.open(&g.model_path, &backend);
        sessions.push((*b, session.map_err(|e| short_reason(job.root, &e))));
    }
    Ok(sessions)
}

/// The `-` row of each backend that refused the operator.
fn refused_rows(job: &SweepJob<'_>, g: &Group, sessions: &Sessions) -> Vec<Row> {
    let mut rows = Vec::new();
    for (name, session) in sessions {
        if let Err(reason) = session {
            let text = format!("not supported on {name}: {reason}");
            rows.push(row(
                job,
                g,
                *name,
                "-",
                Judged::failed(Verdict::Unsupported, text),
            ));
        }
    }
    rows
}

/// The rows of one input set: the reference run once, then each backend that opened judged
/// against it (on the HTP, a deviation is checked against fp16-rounded inputs too).
fn measure_set(
    job: &SweepJob<'_>,
    g: &Group,
    set: &str,
    reference: &mut xtask_runtime::runtime::session::CheckedSession,
    sessions: &mut Sessions,
) -> Vec<Row> {
    let why = |e: anyhow::Error| short_reason(job.root, &e);
    let inputs = feeds(g, set, job.seed);
    let expected = match reference.run(&inputs) {
        Ok(out) => out,
        Err(e) => {
            let text = format!("the reference (ORT CPU EP) failed: {}", why(e));
            return sessions
                .iter()
                .filter(|(_, s)| s.is_ok())
                .map(|(name, _)| {
                    row(
                        job,
                        g,
                        *name,
                        set,
                        Judged::failed(Verdict::Error, text.clone()),
                    )
                })
                .collect();
        }
    };
    let mut rows = Vec::new();
    for (name, session) in sessions.iter_mut() {
        let Ok(session) = session else { continue };
        let judged = match session.run(&inputs) {
            Ok(actual) => {
                let mut judged = worst_output(*name, &expected, &actual);
                if *name == BackendKind::Htp && judged.verdict == Verdict::Deviates {
                    judged.wrong += &fp16_inputs_explain(reference, &inputs, &actual);
                }
                judged
            }
            Err(e) => Judged::failed(Verdict::Error, format!("run failed on {name}: {}", why(e))),
        };
        rows.push(row(job, g, *name, set, judged));
    }
    rows
}

/// One row of the report: the group's key, the backend and input set, what was judged.
fn row(job: &SweepJob<'_>, g: &Group, backend: BackendKind, set: &str, j: Judged) -> Row {
    Row {
        op: g.op.clone(),
        attributes: g.attributes.clone(),
        shapes: g.shapes.clone(),
        backend,
        input_set: set.into(),
        cosine: j.cosine,
        max_abs: j.max_abs,
        rel_l2: j.rel_l2,
        non_finite: j.non_finite,
        verdict: j.verdict,
        wrong: xtask_base::project::scrub(job.root, &j.wrong),
    }
}

/// A refusal or failure in one line, without this machine's paths.
fn short_reason(root: &Path, e: &anyhow::Error) -> String {
    let refused = e
        .chain()
        .find_map(|c| c.downcast_ref::<xtask_runtime::runtime::placement::NotOnQnn>());
    let text = match refused {
        Some(n) => format!("QNN said: {}", n.qnn_reasons.join(" | ")),
        None => xtask_base::project::scrub(root, &format!("{e:#}")),
    };
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(400) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

/// The hashes of a component's ONNX and its external data, as the report records them.
/// `locations` are the external-data locations of the graph as already parsed
/// (`OnnxSummary::external_data`), so the ONNX is not parsed again.
pub fn input_hash_with(
    root: &Path,
    comp: &Component,
    locations: &[String],
    memo: &mut xtask_base::hashing::HashMemo,
) -> Result<InputHash> {
    let onnx = root.join(&comp.file.component.onnx);
    let mut external_data = Vec::new();
    for loc in locations {
        external_data.push((loc.clone(), memo.sha256(&onnx.with_file_name(loc))?));
    }
    Ok(InputHash {
        component: comp.name().to_string(),
        onnx: comp.file.component.onnx.display().to_string(),
        sha256: memo.sha256(&onnx)?,
        external_data,
    })
}
