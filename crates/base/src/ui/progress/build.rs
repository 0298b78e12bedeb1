//! Progress of a build, drawn by the CLI layer: a spinner per component with the running step
//! and its elapsed time on a terminal, plain lines otherwise (CI logs, pipes). Every line here
//! is progress and goes to stderr: stdout carries only the build's summary (the result), so a
//! pipe or a redirected stdout gets results only.

use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

pub struct Progress {
    multi: Option<MultiProgress>,
}

/// A component's spinner (absent in plain mode).
pub struct Bar(Option<ProgressBar>);

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}

impl Progress {
    pub fn new() -> Self {
        Progress {
            multi: crate::ui::term::bars_enabled()
                .then(|| MultiProgress::with_draw_target(crate::ui::term::draw_target())),
        }
    }

    pub fn component(&self, name: &str) -> Bar {
        Bar(self.multi.as_ref().map(|m| {
            let bar = m.add(ProgressBar::new_spinner());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {prefix:<16} {msg} [{elapsed}]")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_prefix(name.to_string());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        }))
    }

    pub fn step_started(&self, bar: &Bar, component: &str, step: &str) {
        crate::ui::interrupt::doing(&format!("build-ctx {component} {step}"));
        match &bar.0 {
            Some(b) => b.set_message(format!("{step} ...")),
            None if crate::ui::quiet() => {}
            None => crate::errln!("{component:<16} {step:<15} running"),
        }
    }

    pub fn step_line(
        &self,
        bar: &Bar,
        component: &str,
        step: &str,
        state: &str,
        seconds: Option<f64>,
    ) {
        // -q keeps failures only.
        if crate::ui::quiet() && !state.to_ascii_uppercase().contains("FAIL") {
            return;
        }
        let took = seconds.map(|s| format!(" ({s:.1}s)")).unwrap_or_default();
        let line = format!("{component:<16} {step:<15} {state}{took}");
        match (&self.multi, &bar.0) {
            (Some(m), Some(_)) => {
                let _ = m.println(line);
            }
            _ => crate::errln!("{line}"),
        }
    }

    /// Where a long step's live status goes: the spinner's message on a terminal (nothing
    /// otherwise, the heartbeat speaks there).
    pub fn ticker(&self, bar: &Bar, step: &str) -> super::Report {
        let step = step.to_string();
        match bar.0.clone() {
            Some(b) => Box::new(move |status: &str| b.set_message(format!("{step}: {status}"))),
            None => Box::new(|_: &str| {}),
        }
    }

    /// Heartbeat lines of a long step, for logs without a terminal (CI).
    pub fn heartbeat(&self, bar: &Bar, component: &str, step: &str) -> super::Report {
        if bar.0.is_some() || crate::ui::quiet() {
            return Box::new(|_: &str| {});
        }
        let prefix = format!("{component:<16} {step:<15}");
        Box::new(move |status: &str| crate::errln!("{prefix} {status}"))
    }

    pub fn note(&self, bar: &Bar, text: &str) {
        match (&self.multi, &bar.0) {
            (Some(m), Some(_)) => {
                let _ = m.println(text);
            }
            _ => crate::errln!("{text}"),
        }
    }

    pub fn finish(&self, bar: &Bar, _component: &str, ok: bool) {
        if let Some(b) = &bar.0 {
            b.finish_with_message(if ok { "done" } else { "FAILED" });
        }
    }

    pub fn clear(&self) {
        if let Some(m) = &self.multi {
            let _ = m.clear();
        }
    }
}
