//! Hugging Face's own CLI (`hf`, from the `huggingface_hub` package), run as a subprocess:
//! found on PATH, with a timeout, and every failure shown with its argv, exit status and the
//! tail of its output.

use std::time::Duration;

use anyhow::{Context, Result, bail};

/// Uploads and downloads of multi-GB bundles take long; a hang is still stopped.
const HF_TIMEOUT: Duration = Duration::from_secs(6 * 3600);

pub fn require_hf() -> Result<()> {
    if xtask_base::proc::on_path("hf").is_none() {
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
    let done = xtask_base::proc::Proc::new("hf")
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
    let (status, output) = xtask_base::proc::Proc::new("hf")
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
    if xtask_base::proc::on_path("hf").is_none() {
        return vec![format!(
            "the Hugging Face CLI `hf` is not on PATH: {INSTALL_HF}"
        )];
    }
    let mut problems = Vec::new();
    match hub_version() {
        Ok(v) if v == HF_HUB_PIN => xtask_base::outln!("hf: huggingface_hub {v}"),
        Ok(v) => xtask_base::outln!(
            "hf: huggingface_hub {v} (this tool's `hf` calls were checked against {HF_HUB_PIN})"
        ),
        Err(e) => problems.push(format!("`hf version` failed: {e:#}")),
    }
    match require_login() {
        Ok(user) => xtask_base::outln!("hf login: {user}"),
        Err(e) => problems.push(format!("{e:#}")),
    }
    problems
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
    fn positionals_follow_the_end_of_options() {
        let argv = hf_argv(
            "download",
            &["--revision".into(), "main".into()],
            &["o/n".into()],
        );
        assert_eq!(argv, ["download", "--revision", "main", "--", "o/n"]);
    }
}
