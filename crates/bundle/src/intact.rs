//! One check of a bundle folder, for `verify` and for `fetch` (on its download, before anything
//! is laid out): the same function, so `fetch` never lays out what `verify` refuses.
//!
//! In order: every (selected) file re-hashed against `manifest.json` (a changed, missing or
//! extra file is named), `SHA256SUMS` consistent; then, for a bundle of plain, listed, intact
//! files only, every file bound to `reports/bundle.json` (`bound`), the files bound to each
//! other (`cross_refs`: wrappers, binaries, graphs, goldens) and to their build records
//! (`records`); the card equal to what the bundled reports render; the chain's report
//! consistent with `bundle.json`; and the signature (`signature`): with a key, a valid
//! signature by it over exactly the bundle's files.

use std::path::Path;

use anyhow::Result;

use super::card::render;
use super::card_figures::{HtpFigures, LatencyFigures, RUN_BACKENDS, htp_figures, latency_figures};
use super::info::{BundleInfo, read_info};
use super::manifest::{check_files_matching, read_manifest};
use super::reader;
use super::signature::{Signed, VerifyingKey};
use xtask_base::vocab::BackendKind;
use xtask_chain::chain::report::RunReport;
use xtask_parity::parity::report::ParityReport;

/// What of a bundle folder is checked: all of it (`verify`), or a partial download.
pub struct Scope<'a> {
    /// Listed files that must be in the folder (the others are checked in the manifest only).
    pub files: &'a dyn Fn(&str) -> bool,
    /// Components whose files are checked against each other and their build records.
    pub components: &'a dyn Fn(&str) -> bool,
    /// Whether the components' `ctx/` files are in the folder.
    pub binaries: bool,
}

impl Scope<'_> {
    /// Every file and component.
    pub fn all() -> Scope<'static> {
        Scope {
            files: &|_| true,
            components: &|_| true,
            binaries: true,
        }
    }
}

/// What the check found: every problem (each naming its file), and the signature's state.
pub struct Checked {
    pub problems: Vec<String>,
    pub signed: Signed,
}

/// Checks the bundle folder `dir` within `scope`; with `key`, a valid signature by it is
/// required. An unreadable manifest is an error; every other finding is a problem.
pub fn check(dir: &Path, scope: &Scope<'_>, key: Option<&VerifyingKey>) -> Result<Checked> {
    let mut problems = check_files_matching(dir, scope.files)?;
    let manifest = read_manifest(dir)?;
    let intact = problems.is_empty();
    // Only a bundle of plain, listed, intact files is read any further.
    if intact {
        match read_info(dir) {
            Err(e) => problems.push(format!("{e:#}")),
            Ok(info) => problems.extend(bound_to_each_other(dir, &manifest, &info, scope)),
        }
    }
    problems.extend(check_parity_report(dir));
    problems.extend(check_card(dir));
    problems.extend(check_chain(dir));
    let mut signed = Signed::Unsigned;
    if intact {
        match super::signature::check(dir, &manifest, key) {
            Ok(s) => signed = s,
            Err(p) => problems.extend(p),
        }
    }
    problems.dedup();
    Ok(Checked { problems, signed })
}

/// The files against `bundle.json`, each other and their build records.
fn bound_to_each_other(
    dir: &Path,
    manifest: &super::manifest::Manifest,
    info: &BundleInfo,
    scope: &Scope<'_>,
) -> Vec<String> {
    let mut problems = super::bound::check(dir, manifest, info, scope.files);
    if scope.binaries {
        problems.extend(super::cross_refs::check(
            dir,
            manifest,
            info,
            scope.components,
        ));
        problems.extend(super::records::check_records(
            dir,
            manifest,
            info,
            scope.components,
        ));
    } else {
        problems.extend(
            info.components
                .iter()
                .filter(|c| (scope.components)(&c.name))
                .flat_map(|c| super::cross_refs::hashed_inputs(manifest, c)),
        );
    }
    problems
}

/// The HTP parity report a bundle must hold: when `bundle.json` lists no binary HTP parity
/// left unmeasured, the report is what the card's figures come from, and its absence is named
/// (rather than found as a card that no longer renders the same).
fn check_parity_report(dir: &Path) -> Vec<String> {
    let Ok(info) = read_info(dir) else {
        return Vec::new();
    };
    let path = format!("reports/parity-{}.json", BackendKind::Htp);
    let held = std::fs::symlink_metadata(dir.join(&path)).is_ok();
    if held || !info.htp_unmeasured.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "{path} is missing: reports/bundle.json says HTP parity measured every binary, and the card shows that report's figures"
    )]
}

/// Renders the card from the bundled reports and compares it with README.md.
pub fn check_card(dir: &Path) -> Vec<String> {
    let expected = match rendered_card(dir) {
        Ok(card) => card,
        Err(e) => return vec![format!("{e:#}: the card cannot be checked")],
    };
    let actual = reader::read_small(dir, "README.md")
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    if actual == expected {
        return Vec::new();
    }
    let line = expected
        .lines()
        .zip(actual.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(expected.lines().count().min(actual.lines().count()));
    vec![format!(
        "README.md does not match the reports in the bundle (first difference at line {}: {:?})",
        line + 1,
        actual.lines().nth(line).unwrap_or("<end of file>")
    )]
}

/// The card the bundle's own reports render.
fn rendered_card(dir: &Path) -> Result<String> {
    let f = bundled_figures(dir)?;
    Ok(render(&f.info, f.htp.as_ref(), f.run.as_ref()))
}

/// What the card and the bundle's verdict rest on: `bundle.json` and the bundled reports.
pub struct BundledFigures {
    pub info: BundleInfo,
    pub htp: Option<HtpFigures>,
    /// The chain run of the first of `RUN_BACKENDS` the bundle holds.
    pub run: Option<LatencyFigures>,
}

/// Reads the bundle's figures, each report through its type (a report of another schema is
/// refused, naming it and the `package` command that writes the bundle again).
pub fn bundled_figures(dir: &Path) -> Result<BundledFigures> {
    let info = read_info(dir)?;
    let rebuild = repackage(dir, &info);
    let htp: Option<ParityReport> = reader::read_record(
        dir,
        &format!("reports/parity-{}.json", BackendKind::Htp),
        &rebuild,
    )?;
    let mut run: Option<RunReport> = None;
    for b in RUN_BACKENDS {
        run = reader::read_record(dir, &format!("reports/run-{b}.json"), &rebuild)?;
        if run.is_some() {
            break;
        }
    }
    Ok(BundledFigures {
        info,
        htp: htp.as_ref().map(htp_figures),
        run: run.as_ref().map(latency_figures),
    })
}

pub fn repackage(dir: &Path, info: &BundleInfo) -> String {
    format!(
        "cargo xtask package --model {} --soc {} --out {}",
        info.model,
        info.soc_id,
        dir.display()
    )
}

/// The chain's report in the bundle against `bundle.json`: present and consistent with its own
/// figures when the bundle claims a measured chain; a report that passes figures failing the
/// gate it names (or says PASS over failing rows) is refused.
pub fn check_chain(dir: &Path) -> Vec<String> {
    let Ok(info) = read_info(dir) else {
        return Vec::new();
    };
    let rebuild = repackage(dir, &info);
    let path = format!("reports/run-{}.json", BackendKind::Htp);
    let report: Option<RunReport> = match reader::read_record(dir, &path, &rebuild) {
        Ok(r) => r,
        Err(e) => return vec![format!("{e:#}")],
    };
    match (report, &info.chain_unmeasured) {
        (None, None) => vec![format!(
            "{path} is missing: bundle.json says the chain was measured on the HTP, and the bundle's verdict is that run's"
        )],
        (Some(r), _) => {
            let mut problems: Vec<String> = r
                .contradictions()
                .into_iter()
                .map(|c| format!("{path}: {c}"))
                .collect();
            if !r.pass {
                problems.push(format!(
                    "{path}: the chain FAILED on the HTP ({}); a bundle's verdict is its chain's",
                    r.failures.join("; ")
                ));
            }
            problems
        }
        (None, Some(_)) => Vec::new(),
    }
}
