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
        .timeout(HF_TIMEOUT)
        .run()?;
    Ok(done.output)
}

/// Refuses to upload unless `hf auth whoami` says who is logged in. Its output is read, not
/// only its exit code: before huggingface_hub 1.9 it printed "Not logged in" and exited 0.
pub fn require_login() -> Result<()> {
    const LOGIN: &str = "not logged in to Hugging Face: set HF_TOKEN or run `hf auth login`";
    let (status, output) = crate::proc::Proc::new("hf")
        .args(["auth", "whoami"])
        .timeout(Duration::from_secs(120))
        .run_unchecked()?;
    if !status.success() || output.to_ascii_lowercase().contains("not logged in") {
        bail!("{LOGIN} (`hf auth whoami` said: {})", output.trim());
    }
    Ok(())
}

/// `OWNER/NAME`, nothing else.
pub fn check_repo_id(repo: &str) -> Result<()> {
    let parts: Vec<&str> = repo.split('/').collect();
    let ok = parts.len() == 2
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        });
    if !ok {
        bail!("--repo must be OWNER/NAME (letters, digits, - _ .), got {repo:?}");
    }
    Ok(())
}
