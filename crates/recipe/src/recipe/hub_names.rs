//! The Hub's names: a repository id and a revision, as `model.toml [model] source_repo` and
//! `source_revision` state them and as `fetch` and `release` pass them to `hf`. Here, in the
//! recipe layer, because a recipe is where they are first read (named with file and line);
//! the bundle layer's `hf` calls use the same rules.

use anyhow::{Result, bail};

/// `OWNER/NAME` as the Hub defines a repository id (huggingface_hub
/// `utils/_validators.py`, `validate_repo_id` and `REPO_ID_REGEX`): ASCII letters, digits,
/// `-`, `_` and `.`; each part starts and ends with a letter, a digit or `_` (the regex's word
/// boundaries), the name is at most 96 characters; `--` and `..` are forbidden, and so is a
/// trailing `.git`. Unlike the Hub we require the owner: a bundle lives in a user's or an
/// organization's namespace. Checked before `hf` sees it, so `-h/x` can never become an option.
pub fn validate_repo_id(repo: &str) -> Result<()> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let part_ok = |p: &str, max: usize| {
        !p.is_empty()
            && p.len() <= max
            && p.chars().all(|c| word(c) || c == '-' || c == '.')
            && p.starts_with(word)
            && p.ends_with(word)
    };
    let why = match repo.split_once('/') {
        None => Some("it must be OWNER/NAME"),
        Some((_, name)) if name.contains('/') => Some("it must be OWNER/NAME (one `/`)"),
        Some((owner, name)) if !part_ok(owner, 96) || !part_ok(name, 96) => Some(
            "each part holds ASCII letters, digits, `-`, `_` or `.`, starts and ends with a letter, a digit or `_`, and the name is at most 96 characters",
        ),
        _ if repo.contains("--") || repo.contains("..") => Some("`--` and `..` are forbidden"),
        _ if repo.ends_with(".git") => Some("it cannot end with `.git`"),
        _ => None,
    };
    if let Some(why) = why {
        bail!("--repo {repo:?} is not a Hugging Face repository id: {why}");
    }
    Ok(())
}

/// A revision (branch, tag, `refs/pr/N` or commit) as git accepts a ref name
/// (`git check-ref-format`): no leading `-` (it would read as an option), no `..`, `@{`,
/// `//`, control characters, space or any of `~^:?*[\`, no part starting with `.` or ending
/// with `.lock`, not ending with `/` or `.`, at most 255 bytes.
pub fn validate_revision(rev: &str) -> Result<()> {
    let bad_char = |c: char| c.is_ascii_control() || " ~^:?*[\\".contains(c) || !c.is_ascii();
    let why = if rev.is_empty() || rev.len() > 255 {
        Some("it must be 1 to 255 characters")
    } else if rev.starts_with('-') {
        Some("it cannot start with `-`")
    } else if rev.chars().any(bad_char) {
        Some("it holds a space, a control or non-ASCII character, or one of ~^:?*[\\")
    } else if rev.contains("..") || rev.contains("@{") || rev.contains("//") || rev == "@" {
        Some("`..`, `@{`, `//` and a lone `@` are not allowed")
    } else if rev.starts_with('/') || rev.ends_with('/') || rev.ends_with('.') {
        Some("it cannot start or end with `/` or end with `.`")
    } else if rev
        .split('/')
        .any(|p| p.starts_with('.') || p.ends_with(".lock"))
    {
        Some("no part may start with `.` or end with `.lock`")
    } else {
        None
    };
    if let Some(why) = why {
        bail!("--revision {rev:?} is not a git revision: {why}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_ids_follow_the_hubs_rule() {
        for good in [
            "owner/name",
            "Org_1/model-v2.1",
            "a/b",
            "0-hero/OIG-small-chip2",
        ] {
            validate_repo_id(good).unwrap();
        }
        for bad in [
            "../..",
            "owner/..",
            ".../...",
            "-h/x",
            "name",
            "a/b/c",
            "owner/na--me",
            "owner/x.git",
            "owner/-x",
            "owner/x.",
            "own er/x",
            "owner/é",
            "",
        ] {
            assert!(validate_repo_id(bad).is_err(), "{bad}");
        }
        validate_repo_id(&format!("o/{}", "n".repeat(96))).unwrap();
        assert!(validate_repo_id(&format!("o/{}", "n".repeat(97))).is_err());
    }

    #[test]
    fn revisions_follow_git_ref_rules() {
        for good in [
            "main",
            "v1.0",
            "refs/pr/1",
            "0123456789abcdef0123456789abcdef01234567",
        ] {
            validate_revision(good).unwrap();
        }
        for bad in [
            "-h", "--help", "a..b", "a b", "x~1", "a:b", ".hidden", "x.lock", "x/", "", "a@{1}",
        ] {
            assert!(validate_revision(bad).is_err(), "{bad}");
        }
    }
}
