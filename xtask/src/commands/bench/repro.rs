//! `cargo xtask bench repro`: are context binaries reproducible? The tiny model is built in two
//! checkouts at different paths and twice in one path (with `--force`); every binary is
//! compared byte for byte, and for those that differ the report says where (the first differing
//! offset, how many bytes, and the printable text around it, e.g. a graph name).

use std::path::Path;

use anyhow::Result;

use super::super::{Ctx, Outcome};
use super::xtask_in;

#[derive(clap::Args)]
pub struct BenchRepro {}

impl BenchRepro {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let a = super::tiny_project(&ctx.root, "repro/a")?;
        let b = super::tiny_project(&ctx.root, "repro/b/at/another/depth")?;
        let build = |p: &Path, force: bool| -> Result<()> {
            let mut args = vec!["build-ctx", "--soc", "77", "--model", "tiny"];
            if force {
                args.push("--force");
            }
            xtask_in(p, &args).map(|_| ())
        };
        build(&a, false)?;
        build(&b, false)?;
        let first_a = read_bins(&a)?;
        let across = compare(&first_a, &read_bins(&b)?);
        build(&a, true)?;
        let twice = compare(&first_a, &read_bins(&a)?);
        for (title, rows) in [("across two paths", &across), ("twice in one path", &twice)] {
            let same = rows.iter().filter(|r| r.1.is_none()).count();
            xtask_base::outln!("{title}: {same} of {} binaries byte-identical", rows.len());
            for (name, diff) in rows {
                if let Some(d) = diff {
                    xtask_base::outln!("  {name}: {d}");
                }
            }
        }
        Ok(Outcome::Success)
    }
}

fn read_bins(project: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(project.join("ctx/tiny"))?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".bin") {
            out.push((name, std::fs::read(entry.path())?));
        }
    }
    out.sort();
    Ok(out)
}

/// Per binary: None when identical, else where and how much differs.
fn compare(a: &[(String, Vec<u8>)], b: &[(String, Vec<u8>)]) -> Vec<(String, Option<String>)> {
    a.iter()
        .map(|(name, x)| {
            let Some((_, y)) = b.iter().find(|(n, _)| n == name) else {
                return (name.clone(), Some("missing in the other build".into()));
            };
            if x == y {
                return (name.clone(), None);
            }
            let differing = x.iter().zip(y).filter(|(p, q)| p != q).count()
                + x.len().abs_diff(y.len());
            let first = x.iter().zip(y).position(|(p, q)| p != q).unwrap_or(x.len().min(y.len()));
            let context = |v: &[u8]| -> String {
                v[first.saturating_sub(48)..(first + 16).min(v.len())]
                    .iter()
                    .map(|&c| if c.is_ascii_graphic() { c as char } else { '.' })
                    .collect()
            };
            (
                name.clone(),
                Some(format!(
                    "{differing} byte(s) differ, first at offset {first} (sizes {} / {}): {:?} vs {:?}",
                    x.len(),
                    y.len(),
                    context(x),
                    context(y)
                )),
            )
        })
        .collect()
}
