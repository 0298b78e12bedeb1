//! Where a fetch downloads: a folder under `target/fetch/`, removed when dropped, and the
//! project-wide fetch lock under which the leftovers of killed fetches (their folders and the
//! `.<file>.fetching` copies staged beside destinations) are removed first.

use std::path::Path;

use anyhow::Result;

use super::fetch_request::FetchRequest;

/// A download folder under `target/fetch/`, removed when dropped (a failed fetch leaves none),
/// and the lock that makes this fetch the project's only one: the folders of killed fetches
/// (and their staged `.<file>.fetching` copies) are removed under it first.
pub(super) fn scratch(req: &FetchRequest<'_>) -> Result<(tempfile::TempDir, std::fs::File)> {
    let downloads = xtask_base::project::scratch_dir(req.root, "fetch");
    std::fs::create_dir_all(&downloads)?;
    let lock = xtask_base::atomic::lock_file(&downloads.join(".fetch.lock"), "fetch")?;
    for left in xtask_base::atomic::remove_leftovers(&downloads, "")? {
        xtask_base::errln!("removed target/fetch/{left}, left behind by an interrupted fetch");
    }
    remove_staged_leftovers(req);
    let tmp = tempfile::Builder::new()
        .prefix(&format!("{}-", req.model.file.model.name))
        .tempdir_in(&downloads)?;
    Ok((tmp, lock))
}

/// Removes the staged copies (`.<file>.fetching`) a killed fetch left beside the model's
/// destinations (`ctx/<model>/`, the folders of its ONNX graphs, goldens and trace).
fn remove_staged_leftovers(req: &FetchRequest<'_>) {
    let model = req.model;
    let mut dirs = std::collections::BTreeSet::new();
    dirs.insert(xtask_base::project::ctx_dir(
        req.root,
        &model.file.model.name,
    ));
    for c in &model.components {
        for file in [&c.file.component.onnx, &c.file.golden.file] {
            dirs.insert(req.root.join(file.parent().unwrap_or(Path::new(""))));
        }
    }
    if let Some(h) = &model.file.host {
        dirs.insert(req.root.join(h.trace.parent().unwrap_or(Path::new(""))));
    }
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let is_file = e.file_type().is_ok_and(|t| t.is_file());
            if is_file
                && name.starts_with('.')
                && name.ends_with(".fetching")
                && std::fs::remove_file(e.path()).is_ok()
            {
                xtask_base::errln!(
                    "removed {}, left behind by an interrupted fetch",
                    xtask_base::project::rel(req.root, &e.path())
                );
            }
        }
    }
}
