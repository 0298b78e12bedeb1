//! Hugging Face's own CLI (`hf`, from the `huggingface_hub` package), run as a subprocess:
//! found on PATH, with a timeout, and every failure shown with its argv, exit status and the
//! tail of its output.

use std::time::Duration;

use anyhow::{Context, Result, bail};

/// Uploads and downloads of multi-GB bundles take long; a hang is still stopped.
const HF_TIMEOUT: Duration = Duration::from_secs(6 * 3600);

pub fn require_hf() -> Result<()> {
    let found = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join("hf").is_file()));
    if !found {
        bail!(
            "the Hugging Face CLI `hf` is not on PATH: install it with `python3 -m pip install -U huggingface_hub` (it provides `hf`)"
        );
    }
    Ok(())
}

/// Runs `hf <args>`; returns its stdout, or an error with the command and the output's tail.
pub fn run_hf(args: &[String]) -> Result<String> {
    require_hf()?;
    let handle = duct::cmd("hf", args)
        .stderr_to_stdout()
        .stdout_capture()
        .unchecked()
        .start()
        .context("cannot start `hf`")?;
    let Some(out) = handle.wait_timeout(HF_TIMEOUT)? else {
        handle.kill()?;
        bail!(
            "`hf {}` did not finish within {} s and was stopped",
            args.join(" "),
            HF_TIMEOUT.as_secs()
        );
    };
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        let tail: Vec<&str> = text
            .lines()
            .rev()
            .take(15)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        bail!(
            "`hf {}` failed ({}):\n{}",
            args.join(" "),
            out.status,
            tail.join("\n")
        );
    }
    Ok(text)
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
