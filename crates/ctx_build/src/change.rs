//! How a changed key part is told to people: `optimization_level 3 → 2` for option lists
//! (`key=value` lines), the values themselves when short, and only "changed" for hashes.

/// "part changed: what changed" for a key part that went from `old` to `new`.
pub fn describe(part: &str, old: &str, new: &str) -> String {
    if let (Some(a), Some(b)) = (options(old), options(new)) {
        let mut diffs = Vec::new();
        for (k, v) in &b {
            match a.iter().find(|(ka, _)| ka == k) {
                Some((_, va)) if va != v => diffs.push(format!("{k} {va} → {v}")),
                None => diffs.push(format!("{k} (new) {v}")),
                _ => {}
            }
        }
        for (k, v) in a.iter().filter(|(k, _)| !b.iter().any(|(kb, _)| kb == k)) {
            diffs.push(format!("{k} {v} → (removed)"));
        }
        if !diffs.is_empty() {
            return format!("{part} changed: {}", diffs.join(", "));
        }
    }
    if is_hash(old) || is_hash(new) || old.len() > 60 || new.len() > 60 || old.contains('\n') {
        return format!("{part} changed");
    }
    format!("{part} changed: {old} → {new}")
}

/// `key=value` lines, if every non-empty line is one.
fn options(text: &str) -> Option<Vec<(String, String)>> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return None;
    }
    lines
        .iter()
        .map(|l| {
            l.split_once('=')
                .filter(|(k, _)| !k.is_empty() && !k.contains(' '))
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect()
}

fn is_hash(s: &str) -> bool {
    s.len() == 64 && s.chars().all(|c| c.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn options_say_which_value_changed_hashes_only_that_they_did() {
        assert_eq!(
            describe(
                "htp target",
                "optimization_level=3\nfp16=true\n",
                "optimization_level=2\nfp16=true\n"
            ),
            "htp target changed: optimization_level 3 → 2"
        );
        let (a, b) = ("a".repeat(64), "b".repeat(64));
        assert_eq!(describe("onnx", &a, &b), "onnx changed");
        assert_eq!(
            describe("qnn version", "v2.46", "v2.47"),
            "qnn version changed: v2.46 → v2.47"
        );
    }
}
