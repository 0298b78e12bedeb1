//! Gate values checked when a recipe loads, each error naming file, line and key: a NaN or
//! out-of-range threshold would otherwise turn every comparison into a silent pass (`x < NaN`
//! is false) or a certain failure.

use std::path::Path;

use anyhow::{Result, bail};

/// 1-based line of `key = …` inside the `nth` (0-based) table whose header is `[table]` or
/// `[[table]]`; `table = ""` means the top level before any header.
pub fn key_line(text: &str, table: &str, key: &str, nth: usize) -> Option<usize> {
    let mut current = String::new();
    let mut seen = usize::from(table.is_empty());
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('[') {
            current = t.trim_matches(|c| c == '[' || c == ']').trim().to_string();
            if current == table {
                seen += 1;
            }
            continue;
        }
        let is_key = [key.to_string(), format!("\"{key}\""), format!("'{key}'")]
            .iter()
            .filter_map(|k| t.strip_prefix(k.as_str()))
            .any(|rest| rest.trim_start().starts_with('='));
        if is_key && current == table && seen == nth + 1 {
            return Some(i + 1);
        }
    }
    None
}

/// "file:line: table.key" (or "file: table.key" when the key is not written, i.e. defaulted).
pub fn at(path: &Path, text: &str, table: &str, key: &str, nth: usize) -> String {
    let dotted = if table.is_empty() {
        key.to_string()
    } else {
        format!("{table}.{key}")
    };
    located(path, key_line(text, table, key, nth), &dotted)
}

/// "file:line: what", or "file: what" when the line is not known.
fn located(path: &Path, line: Option<usize>, what: &str) -> String {
    match line {
        Some(line) => format!("{}:{line}: {what}", path.display()),
        None => format!("{}: {what}", path.display()),
    }
}

/// "file:line: table.key" of one entry of a map that may be written as its own table
/// (`[table]` then `key = …`) or inline in its parent (`name = { key = … }`, the line of
/// `name`); "file: table.key" when neither is found.
pub fn at_entry(path: &Path, text: &str, table: &str, key: &str) -> String {
    let line = key_line(text, table, key, 0)
        .or_else(|| {
            let (parent, name) = table.rsplit_once('.')?;
            key_line(text, parent, name, 0)
        })
        .or_else(|| header_line(text, &format!("{table}.{key}")));
    located(path, line, &format!("{table}.{key}"))
}

/// 1-based line of the table header `[name]` (an entry written as its own table).
fn header_line(text: &str, name: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            l.trim().trim_matches(|c| c == '[' || c == ']').trim() == name
                && l.trim().starts_with('[')
        })
        .map(|i| i + 1)
}

/// A number as the recipe would write it: `1e300`, not three hundred digits.
/// Whether a waiver's reason says something: at least three words of letters (`"ok"`,
/// `"xxxxxxxxxxxx"` or `"- - - -"` name no reason a reader of the report could weigh).
pub fn is_a_reason(text: &str) -> bool {
    text.split_whitespace()
        .filter(|w| w.chars().filter(|c| c.is_alphabetic()).count() >= 2)
        .count()
        >= 3
}

fn shown(v: f64) -> String {
    if v.is_finite() && v != 0.0 && !(1e-4..1e6).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

/// A cosine threshold: finite, within [0, 1]. A negative threshold would accept an output
/// pointing the other way (a negated tensor has cosine -1).
pub fn check_cosine(where_: &str, value: f64) -> Result<()> {
    if !(value.is_finite() && (0.0..=1.0).contains(&value)) {
        bail!(
            "{where_} = {} is not a cosine threshold: it must be a finite number in [0, 1]",
            shown(value)
        );
    }
    Ok(())
}

/// The largest absolute tolerance (`atol`, `actions_max_abs`) a recipe may set: every tensor
/// these graphs gate is an activation, a normalised value or an action in robot units, all far
/// below it, so a larger bound would pass anything (`1e300`).
pub const MAX_ABS_TOLERANCE: f64 = 1e3;

/// An absolute tolerance: finite, in [0, MAX_ABS_TOLERANCE].
pub fn check_tolerance(where_: &str, value: f64) -> Result<()> {
    check_bounded(where_, value, MAX_ABS_TOLERANCE, "an absolute tolerance")
}

/// A relative bound (`rtol`, `max_norm_ratio_error`): finite, in [0, 1]; above 1 (100 %) it
/// accepts an output of any size.
pub fn check_relative(where_: &str, value: f64) -> Result<()> {
    check_bounded(where_, value, 1.0, "a relative tolerance")
}

fn check_bounded(where_: &str, value: f64, max: f64, what: &str) -> Result<()> {
    if !(value.is_finite() && (0.0..=max).contains(&value)) {
        bail!(
            "{where_} = {} is not {what}: it must be a finite number in [0, {max}]",
            shown(value)
        );
    }
    Ok(())
}

/// A per-backend scale gate map (`{ htp = 0.05 }`): known backends, bounds in [0, 1].
pub fn check_norm_ratio_map(
    path: &Path,
    text: &str,
    table: &str,
    map: &std::collections::BTreeMap<String, f64>,
) -> Result<()> {
    for (backend, value) in map {
        let where_ = at_entry(path, text, table, backend);
        if let Err(e) = backend.parse::<xtask_base::vocab::BackendKind>() {
            bail!("{where_}: {e}");
        }
        check_relative(&where_, *value)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "[component]\nname = 'c'\n[parity]\nmin_cosine = nan\natol = 1e-4\n\
        [[parity.override]]\nmin_cosine = 0.9\nreason = 'a'\n[[parity.override]]\nmin_cosine = 1.5\n";

    #[test]
    fn keys_are_found_in_their_table_and_occurrence() {
        assert_eq!(key_line(TEXT, "parity", "min_cosine", 0), Some(4));
        assert_eq!(key_line(TEXT, "parity", "atol", 0), Some(5));
        assert_eq!(key_line(TEXT, "parity.override", "min_cosine", 1), Some(10));
        assert_eq!(key_line(TEXT, "parity", "rtol", 0), None);
        assert_eq!(
            at(
                Path::new("c.toml"),
                TEXT,
                "parity.override",
                "min_cosine",
                1
            ),
            "c.toml:10: parity.override.min_cosine"
        );
    }

    #[test]
    fn map_entries_are_found_as_tables_inline_or_quoted() {
        let text = "[host]\nx = 1\n[host.denorm]\ndims = { 6 = 'pass' }\n\
            [host.trace_keys]\n\"trajectory_step{i}_out\" = 'y_{i}'\nq01 = 'lo'\n";
        let p = Path::new("m.toml");
        assert_eq!(
            at_entry(p, text, "host.denorm.dims", "6"),
            "m.toml:4: host.denorm.dims.6"
        );
        assert_eq!(
            at_entry(p, text, "host.trace_keys", "trajectory_step{i}_out"),
            "m.toml:6: host.trace_keys.trajectory_step{i}_out"
        );
        assert_eq!(
            at_entry(p, text, "host.trace_keys", "q01"),
            "m.toml:7: host.trace_keys.q01"
        );
        assert_eq!(
            at_entry(p, text, "host.trace_keys", "q99"),
            "m.toml: host.trace_keys.q99"
        );
    }

    #[test]
    fn a_reason_is_a_few_words() {
        assert!(is_a_reason("fp16 rounding near 0.9999"));
        assert!(is_a_reason("HTP runs fp16 weights"));
        for not in [
            "",
            "ok",
            "xxxxxxxxxxxx",
            "- - - - - -",
            "a b c d",
            "fp16 rounding",
        ] {
            assert!(!is_a_reason(not), "{not:?}");
        }
    }

    #[test]
    fn thresholds_must_be_finite_and_in_range() {
        for bad in [f64::NAN, -2.0, -1.0, -0.5, 1.5, f64::INFINITY] {
            assert!(check_cosine("k", bad).is_err(), "{bad}");
        }
        for good in [0.0, 0.9999, 1.0] {
            check_cosine("k", good).unwrap();
        }
        for bad in [-1e-3, f64::NAN, 1e300, 1e4] {
            assert!(check_tolerance("k", bad).is_err(), "{bad}");
        }
        check_tolerance("k", 0.0).unwrap();
        check_tolerance("k", 1e-2).unwrap();
        assert!(check_relative("k", 2.0).is_err());
        check_relative("k", 0.02).unwrap();
    }
}
