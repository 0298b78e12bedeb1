//! Hugging Face's own CLI (`hf`, from the `huggingface_hub` package), run as a subprocess:
//! found on PATH, with a timeout, and every failure shown with its argv, exit status and the
//! tail of its output.

use std::time::Duration;

use anyhow::{Context, Result, bail};

/// Uploads and downloads of multi-GB bundles take long; a hang is still stopped.
const HF_TIMEOUT: Duration = Duration::from_secs(6 * 3600);

pub fn require_hf() -> Result<()> {
    if crate::proc::on_path("hf").is_none() {
        bail!("the Hugging Face CLI `hf` is not on PATH: {INSTALL_HF}");
    }
    Ok(())
}

/// The `huggingface_hub` version whose CLI verbs and flags this tool uses and was checked
/// against (its `src/huggingface_hub/cli/`), and which the workflow installs.
pub const HF_HUB_PIN: &str = "2.4.0";

const INSTALL_HF: &str =
    "install it with `python3 -m pip install huggingface_hub==2.4.0` (it provides `hf`)";

/// The installed `huggingface_hub` version, from `hf version --format json`.
pub fn hub_version() -> Result<String> {
    let out = run_hf(&["version".into(), "--format".into(), "json".into()])?;
    let v = last_json(&out)?;
    v["version"]
        .as_str()
        .map(str::to_string)
        .with_context(|| format!("`hf version` printed no version: {}", out.trim()))
}

/// The last line of `output` that is a JSON object (`--format json` results; warnings may
/// come before it on the same stream).
pub fn last_json(output: &str) -> Result<serde_json::Value> {
    output
        .lines()
        .rev()
        .find_map(|l| {
            let l = l.trim();
            l.starts_with('{')
                .then(|| serde_json::from_str(l).ok())
                .flatten()
        })
        .with_context(|| format!("`hf` printed no JSON result: {}", output.trim()))
}

/// Runs `hf <args>`; returns its output, or an error with the command and the output's tail.
pub fn run_hf(args: &[String]) -> Result<String> {
    require_hf()?;
    let done = crate::proc::Proc::new("hf")
        .args(args)
        .heartbeat(format!("hf {}", args.first().map_or("", String::as_str)))
        .timeout(HF_TIMEOUT)
        .run()?;
    Ok(done.output)
}

/// Refuses to upload unless `hf auth whoami` says who is logged in, and returns what it said.
/// Its output is read, not only its exit code: before huggingface_hub 1.9 it printed "Not
/// logged in" and exited 0; since then it exits 1 (`cli/auth.py`, `auth_whoami`).
pub fn require_login() -> Result<String> {
    const LOGIN: &str = "not logged in to Hugging Face: set HF_TOKEN or run `hf auth login`";
    let (status, output) = crate::proc::Proc::new("hf")
        .args(["auth", "whoami"])
        .timeout(Duration::from_secs(120))
        .run_unchecked()?;
    if !status.success() || output.to_ascii_lowercase().contains("not logged in") {
        bail!("{LOGIN} (`hf auth whoami` said: {})", output.trim());
    }
    logged_in_user(&output).with_context(|| {
        format!(
            "`hf auth whoami` said it is logged in but named no user: {}",
            output.trim()
        )
    })
}

/// The user `hf auth whoami` names: the `user:` field of its result ("✓ Logged in" then
/// "  user: NAME", `out.result("Logged in", user=…)` in cli/auth.py), or, from CLIs before
/// that output layer, the name alone on its first line.
fn logged_in_user(output: &str) -> Option<String> {
    let lines = || output.lines().map(str::trim).filter(|l| !l.is_empty());
    lines()
        .find_map(|l| l.strip_prefix("user:"))
        .map(|u| u.trim().to_string())
        .or_else(|| {
            lines()
                .next()
                .filter(|l| !l.starts_with('✓') && !l.contains(' '))
                .map(str::to_string)
        })
        .filter(|u| !u.is_empty())
}

/// What a dry run checks without changing anything on the Hub: `hf` is on PATH, says its
/// version, and is logged in. Prints what it found; returns the problems a real release would
/// stop at (empty when it could start).
pub fn preflight() -> Vec<String> {
    if crate::proc::on_path("hf").is_none() {
        return vec![format!(
            "the Hugging Face CLI `hf` is not on PATH: {INSTALL_HF}"
        )];
    }
    let mut problems = Vec::new();
    match hub_version() {
        Ok(v) if v == HF_HUB_PIN => crate::outln!("hf: huggingface_hub {v}"),
        Ok(v) => crate::outln!(
            "hf: huggingface_hub {v} (this tool's `hf` calls were checked against {HF_HUB_PIN})"
        ),
        Err(e) => problems.push(format!("`hf version` failed: {e:#}")),
    }
    match require_login() {
        Ok(user) => crate::outln!("hf login: {user}"),
        Err(e) => problems.push(format!("{e:#}")),
    }
    problems
}

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

/// The repository id check under its older name (kept for callers being rewritten elsewhere).
pub fn check_repo_id(repo: &str) -> Result<()> {
    validate_repo_id(repo)
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

/// Owned arguments for `hf` from string slices (what `run_hf` and `hf_argv` take).
pub fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// The argv of one `hf` subcommand: its options, then `--`, then the positional arguments.
/// `hf` is a Typer (click) program, and click's parser ends option processing at `--`
/// (click `parser.py`, `_process_args_for_options`): whatever follows is positional, even when
/// it starts with `-`.
pub fn hf_argv(sub: &str, options: &[String], positionals: &[String]) -> Vec<String> {
    let mut argv = vec![sub.to_string()];
    argv.extend(options.iter().cloned());
    argv.push("--".into());
    argv.extend(positionals.iter().cloned());
    argv
}

/// The repository's tags as (name, target commit); none when the repository does not exist.
pub fn tags(repo: &str) -> Result<Vec<(String, String)>> {
    let argv = hf_argv(
        "repos",
        &args(&["tag", "list", "--format", "json"]),
        &args(&[repo]),
    );
    let output = match run_hf(&argv) {
        Ok(out) => out,
        Err(e) if format!("{e:#}").contains("not found") => return Ok(Vec::new()),
        Err(e) => return Err(e.context(format!("cannot list the tags of {repo}"))),
    };
    let json = output
        .lines()
        .find(|l| l.trim_start().starts_with('['))
        .with_context(|| format!("`hf repos tag list` printed no JSON list: {output}"))?;
    let rows: Vec<serde_json::Value> = serde_json::from_str(json)
        .with_context(|| format!("`hf repos tag list` printed {json:?}"))?;
    Ok(rows
        .iter()
        .filter_map(|r| {
            let name = r["name"].as_str()?.to_string();
            Some((
                name,
                r["target_commit"].as_str().unwrap_or_default().to_string(),
            ))
        })
        .collect())
}

/// The commit `hf download` recorded for `manifest.json` (first line of its metadata file in
/// `.cache/huggingface/download/`, huggingface_hub `_local_folder.py`).
pub fn downloaded_commit(dir: &std::path::Path) -> Option<String> {
    std::fs::read_to_string(dir.join(".cache/huggingface/download/manifest.json.metadata"))
        .ok()?
        .lines()
        .next()
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whoami_names_its_user_in_either_layout() {
        assert_eq!(
            logged_in_user("✓ Logged in\n  user: alice\n  orgs: acme\n").as_deref(),
            Some("alice")
        );
        assert_eq!(logged_in_user("bob\norgs: acme\n").as_deref(), Some("bob"));
        assert_eq!(logged_in_user("✓ Logged in\n"), None);
        assert_eq!(logged_in_user("user:\n"), None);
    }

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

    #[test]
    fn positionals_follow_the_end_of_options() {
        let argv = hf_argv(
            "download",
            &["--revision".into(), "main".into()],
            &["o/n".into()],
        );
        assert_eq!(argv, ["download", "--revision", "main", "--", "o/n"]);
    }
}
