//! What packaging refuses and what it leaves out: broken artifacts (refused whatever the
//! freshness), and reports that failed or are about other binaries (left out of the card).

use std::path::Path;

use anyhow::{Result, bail};

use xtask_base::hashing::HashMemo;
use xtask_base::record::{Unreadable, Versioned};
use xtask_base::soc::Soc;
use xtask_chain::chain::report::RunReport;
use xtask_ctx_build::fingerprint::ComponentRecord;
use xtask_parity::parity::report::ParityReport;
use xtask_recipe::recipe::Component;

/// What is wrong with a component's built binary and wrapper, whatever its freshness: the
/// binary must hash to what its context step recorded, and the wrapper's EPContext node must
/// name that binary, beside it (a path leaving the folder is refused).
pub fn broken_artifacts(
    root: &Path,
    comp: &Component,
    record: &ComponentRecord,
    soc: &Soc,
    art: &xtask_ctx_build::plan::Artifacts,
    memo: &mut HashMemo,
) -> Vec<String> {
    let mut broken = Vec::new();
    let name = comp.name();
    let bin_rel = art.bin.display().to_string();
    let recorded = record
        .steps
        .get(&format!("context@soc{}", soc.id))
        .and_then(|r| r.outputs.get(&bin_rel));
    match (recorded, memo.sha256(&root.join(&art.bin))) {
        (_, Err(_)) => broken.push(format!("{name}: {bin_rel} is missing")),
        (None, _) => match &record.refused {
            Some(why) => broken.push(format!("{name}: {why}")),
            None => broken.push(format!("{name}: {bin_rel} has no build record")),
        },
        (Some(want), Ok(got)) if *want != got => broken.push(format!(
            "{name}: {bin_rel} is not the binary its build recorded (sha256 {got}, recorded {want}): truncated or replaced"
        )),
        _ => {}
    }
    let wrapper = root.join(&art.wrapper);
    let targets: Vec<String> = xtask_onnx::onnx::proto::read_summary(&wrapper)
        .map(|s| {
            s.nodes
                .iter()
                .filter(|n| n.op_type == "EPContext")
                .filter_map(|n| n.attr_str("ep_cache_context").map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let bin_name = art.bin_name();
    if !wrapper.is_file() {
        broken.push(format!("{name}: {} is missing", art.wrapper.display()));
    } else if targets.is_empty() {
        broken.push(format!(
            "{name}: {} is not a readable EPContext wrapper",
            art.wrapper.display()
        ));
    }
    for t in targets.iter().filter(|t| **t != bin_name) {
        broken.push(format!(
            "{name}: {} points at {t:?}, not at {bin_name} beside it",
            art.wrapper.display()
        ));
    }
    broken
}

/// What packaging asks of a report before the card shows it.
pub trait CardReport: Versioned {
    /// When the report was written.
    fn created_unix(&self) -> u64;
    /// Every component it measured, with when (a merged report holds results of several
    /// runs; a result without its own time counts as the report's).
    fn measured(&self) -> Vec<(&str, u64)>;
    fn pass(&self) -> bool;
}

impl CardReport for ParityReport {
    fn created_unix(&self) -> u64 {
        self.created_unix
    }

    fn measured(&self) -> Vec<(&str, u64)> {
        self.components
            .iter()
            .map(|c| {
                let when = Some(c.measured_unix).filter(|t| *t > 0);
                (c.component.as_str(), when.unwrap_or(self.created_unix))
            })
            .collect()
    }

    fn pass(&self) -> bool {
        self.pass
    }
}

/// A chain run measures the chain as a whole: its time is the report's.
impl CardReport for RunReport {
    fn created_unix(&self) -> u64 {
        self.created_unix
    }

    fn measured(&self) -> Vec<(&str, u64)> {
        Vec::new()
    }

    fn pass(&self) -> bool {
        self.pass
    }
}

/// When each packaged component's context binary was built (its context step's finish time).
pub type ContextBuilt = std::collections::BTreeMap<String, u64>;

/// A report the card may use, read through its type (`rebuild` is the command that writes it
/// again, named when the file is refused): it must pass (a failed gate refuses the package),
/// measure each of `comps` after that component's binary was built, and (a report of the
/// whole chain, `comps` empty) be newer than every packaged binary; else it is about other
/// binaries and is left out. None when there is no such file.
pub fn usable_report<T: CardReport>(
    path: &Path,
    rebuild: &str,
    comps: &[&Component],
    built: &ContextBuilt,
    what: &str,
) -> Result<Option<T>> {
    let report: T = match xtask_base::record::read_or_missing(path, rebuild) {
        Ok(r) => r,
        Err(Unreadable::Missing) => return Ok(None),
        Err(Unreadable::Refused(e)) => return Err(e),
    };
    let newest = built.values().copied().max().unwrap_or(0);
    let about_these = match comps.is_empty() {
        true => report.created_unix() >= newest,
        false => unmeasured(&report, comps, built).is_empty(),
    };
    if !about_these {
        return Ok(None);
    }
    if !report.pass() {
        bail!(
            "{what} failed ({}): fix it before packaging",
            path.display()
        );
    }
    Ok(Some(report))
}

/// Each of `comps` the report did not measure on the binary being packaged, with why
/// (`vision: measured before its binary was built`). The parity report records when each
/// component was measured, not the binary's sha256, so "the same binary" is judged by time:
/// a measurement older than the binary's build is about another binary.
pub fn unmeasured<T: CardReport>(
    report: &T,
    comps: &[&Component],
    built: &ContextBuilt,
) -> Vec<String> {
    let measured = report.measured();
    comps
        .iter()
        .filter_map(|c| {
            let name = c.name();
            let binary = built.get(name).copied().unwrap_or(0);
            match measured.iter().find(|(m, _)| *m == name) {
                None => Some(format!("{name}: not in the report")),
                Some((_, t)) if *t < binary => {
                    Some(format!("{name}: measured before its binary was built"))
                }
                Some(_) => None,
            }
        })
        .collect()
}
