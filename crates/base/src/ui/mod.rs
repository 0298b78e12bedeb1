//! How the tool talks to its user, set once from the global flags: `-q` (results and errors
//! only), `-v` (more detail, native output shown), `--color` (with `NO_COLOR`), `--json` (one
//! document on stdout), the coloured verdicts, warnings said once with a count, and the
//! progress of long work (`progress`).

pub mod interrupt;
pub mod json;
pub mod progress;
pub mod stdio;
pub mod suggest;
pub mod term;
pub mod warnings;

use std::sync::OnceLock;

/// `--color`: when verdicts are coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour on a terminal unless `NO_COLOR` is set (to anything but the empty string).
    #[default]
    Auto,
    Always,
    Never,
}

/// The global output flags.
#[derive(Debug, Clone, Copy, Default)]
pub struct Settings {
    pub verbose: bool,
    pub quiet: bool,
    pub color: ColorChoice,
    pub json: bool,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();

/// Sets the flags once for the process (later calls are ignored).
pub fn init(settings: Settings) {
    let _ = SETTINGS.set(settings);
}

fn settings() -> Settings {
    SETTINGS.get().copied().unwrap_or_default()
}

pub fn verbose() -> bool {
    settings().verbose
}

/// `-q`: no progress, notes or warnings; results and errors only.
pub fn quiet() -> bool {
    settings().quiet
}

pub fn json() -> bool {
    settings().json
}

/// Whether lines on the tool's stdout (`stdout = true`) or stderr get colour.
pub fn color(stdout: bool) -> bool {
    let (out, err) = crate::ui::stdio::terminals();
    match settings().color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
            // Under --json the human lines go to stderr.
            let on = if stdout && !json() { out } else { err };
            on && !no_color
        }
    }
}

/// `PASS`/`FAIL` (or any verdict word), green or red when the stdout lines are coloured.
pub fn verdict(word: &str, pass: bool) -> String {
    paint(word, if pass { "32" } else { "31" }, true)
}

/// `text` in the ANSI colour `code` (bold) when the chosen stream is coloured.
pub fn paint(text: &str, code: &str, stdout: bool) -> String {
    if color(stdout) {
        format!("\x1b[1;{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// A warning said now on stderr (`warning: …`), unless `-q`.
pub fn warning(text: &str) {
    if !quiet() {
        crate::errln!("warning: {text}");
    }
}

/// A note for the user on stderr (`note: …`), unless `-q`.
pub fn note(text: &str) {
    if !quiet() {
        crate::errln!("note: {text}");
    }
}

/// An error message as the user reads it: the OS's `No such file or directory (os error 2)`
/// said as "not found" (and the like), never a raw `(os error N)` glued on.
pub fn humanize(text: &str) -> String {
    let mut out = text
        .replace("No such file or directory (os error 2)", "not found")
        .replace("Permission denied (os error 13)", "permission denied")
        .replace("Is a directory (os error 21)", "is a folder, not a file")
        .replace(
            "Not a directory (os error 20)",
            "a part of the path is not a folder",
        )
        .replace(
            "No space left on device (os error 28)",
            "no space left on the disk",
        );
    while let Some(start) = out.find(" (os error ") {
        match out[start..].find(')') {
            Some(end) => out.replace_range(start..start + end + 1, ""),
            None => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn os_errors_read_as_words() {
        assert_eq!(
            super::humanize("cannot read x: No such file or directory (os error 2)"),
            "cannot read x: not found"
        );
        assert_eq!(
            super::humanize("busy: Resource busy (os error 16)"),
            "busy: Resource busy"
        );
    }
}
