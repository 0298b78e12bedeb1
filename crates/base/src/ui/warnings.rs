//! Warnings said once: a warning raised many times in one command (a waiver per output, a
//! note per component) is collected and printed once at the end with how often it came up.

use std::sync::Mutex;

static WARNINGS: Mutex<Vec<(String, usize)>> = Mutex::new(Vec::new());

/// Records a warning; printed by `flush` (once, with a count), unless `-q`.
pub fn warn(text: impl Into<String>) {
    let text = text.into();
    let mut all = WARNINGS.lock().unwrap_or_else(|e| e.into_inner());
    match all.iter_mut().find(|(t, _)| *t == text) {
        Some((_, n)) => *n += 1,
        None => all.push((text, 1)),
    }
}

/// The collected warnings as lines, each once with its count (and forgets them).
pub fn take_lines() -> Vec<String> {
    let mut all = WARNINGS.lock().unwrap_or_else(|e| e.into_inner());
    std::mem::take(&mut *all)
        .into_iter()
        .map(|(text, n)| match n {
            1 => format!("warning: {text}"),
            n => format!("warning: {text} ({n} times)"),
        })
        .collect()
}

/// Prints the collected warnings on stderr (at the end of a command).
pub fn flush() {
    let lines = take_lines();
    if super::quiet() {
        return;
    }
    for line in lines {
        crate::errln!("{line}");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_repeated_warning_is_one_line_with_its_count() {
        super::warn("fp16 waiver applies");
        super::warn("other");
        super::warn("fp16 waiver applies");
        let lines = super::take_lines();
        assert_eq!(
            lines,
            vec![
                "warning: fp16 waiver applies (2 times)".to_string(),
                "warning: other".to_string()
            ]
        );
    }
}
