//! Which files of a published bundle a fetch asks the Hub for: the `--include` patterns of the
//! selected components (plus what every partial download brings), matched as the Hub's fnmatch
//! matches them. `plan` uses the same patterns to size a partial fetch.

use super::fetch_request::FetchRequest;
use xtask_recipe::recipe::{Component, Model};

/// What every partial download brings besides the selected files: the manifest, its sums and
/// the signature (to check each file), `bundle.json` (which binds every file), the other
/// reports and the card (checked as `verify` checks them).
pub(crate) const ALWAYS: [&str; 5] = [
    "manifest.json",
    "SHA256SUMS",
    super::manifest::SIGNATURE,
    "reports/*",
    "README.md",
];

/// The Hub's `--include` patterns (fnmatch: `*` also matches `/`) of the selected files.
pub fn include_patterns(req: &FetchRequest<'_>) -> Option<Vec<String>> {
    let all: Vec<&Component> = req.model.components.iter().collect();
    let comps = match (&req.only, req.inputs_only) {
        (Some(c), _) => c,
        (None, true) => &all,
        (None, false) => return None,
    };
    let mut pats: Vec<String> = ALWAYS.iter().map(|p| p.to_string()).collect();
    for comp in comps {
        pats.extend(component_patterns(req.model, comp, req.inputs_only));
    }
    Some(pats)
}

/// One component's files in a bundle: `onnx/<c>/*`, its golden file (and the trace for the
/// component that owns the vision input), and unless `inputs_only` its `ctx/` artifacts.
pub fn component_patterns(model: &Model, comp: &Component, inputs_only: bool) -> Vec<String> {
    let name = comp.name();
    let mut pats = vec![format!("onnx/{name}/*")];
    if let Some(g) = comp.file.golden.file.file_name() {
        pats.push(format!("golden/{}", g.to_string_lossy()));
    }
    if model.file.host.as_ref().is_some_and(|h| h.vision == name) {
        pats.push("golden/trace*".into());
    }
    if !inputs_only {
        pats.push(format!("ctx/{name}.*"));
        pats.push(format!("ctx/{name}_socid*"));
    }
    pats
}

/// fnmatch as the Hub applies `--include`: `*` any run of characters (`/` too), `?` one.
pub fn glob_match(pat: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pat.chars().collect(), text.chars().collect());
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

pub(crate) fn selected(pats: &[String], path: &str) -> bool {
    pats.iter().any(|p| glob_match(p, path))
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs_match_as_the_hubs_include_does() {
        assert!(glob_match("onnx/vision/*", "onnx/vision/vision.onnx"));
        assert!(glob_match("onnx/vision/*", "onnx/vision/sub/w.bin"));
        assert!(!glob_match("onnx/vision/*", "onnx/vision_x/a"));
        assert!(glob_match("golden/trace*", "golden/trace.json"));
        assert!(glob_match(
            "ctx/action_step.*",
            "ctx/action_step.record.json"
        ));
        assert!(!glob_match(
            "ctx/action_step.*",
            "ctx/action_step_socid77_archv73.bin"
        ));
        assert!(glob_match("ctx/a?c", "ctx/abc"));
        assert!(glob_match("manifest.json", "manifest.json"));
        assert!(!glob_match("manifest.json", "x/manifest.json"));
    }
}
