//! The search's progress on stderr: a line as each configuration starts (`precision [3]
//! measuring alone: vision at w8a16`), and, without a terminal, a heartbeat line every
//! `ui::progress::heartbeat_every()` (30 s; `XTASK_HEARTBEAT_SECS` overrides) naming what runs
//! and for how long, through builds and chain runs alike: an emulated HTP chain of tiny runs
//! its vision alone for ~30 s without a word of its own. On a terminal the build's spinners and
//! a bar per chain (`ui::progress::Task`) show the same. `-q` silences all of it.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use xtask_base::ui::progress::{Beat, Task, human_secs};

struct Doing {
    what: String,
    since: Instant,
}

/// The search's pulse: what runs now, and the heartbeat that names it.
pub struct SearchProgress {
    doing: Arc<Mutex<Doing>>,
    /// What an interruption of the search keeps, said again after each build (a build says
    /// what it keeps while it runs).
    keeps: Option<String>,
    _beat: Option<Beat>,
}

impl Default for SearchProgress {
    fn default() -> Self {
        Self::start()
    }
}

impl SearchProgress {
    pub fn start() -> Self {
        let doing = Arc::new(Mutex::new(Doing {
            what: "starting".into(),
            since: Instant::now(),
        }));
        let started = Instant::now();
        let plain = !xtask_base::ui::term::bars_enabled() && !xtask_base::ui::quiet();
        let beat = plain.then(|| {
            let doing = doing.clone();
            Beat::start(
                Box::new(|_: &str| {}),
                Box::new(move |_: &str| {
                    let (what, secs) = match doing.lock() {
                        Ok(d) => (d.what.clone(), d.since.elapsed().as_secs_f64()),
                        Err(_) => return,
                    };
                    xtask_base::errln!(
                        "precision: {what} (still running, {} in it, {} in all)",
                        human_secs(secs),
                        human_secs(started.elapsed().as_secs_f64())
                    );
                }),
            )
        });
        SearchProgress {
            doing,
            keeps: None,
            _beat: beat,
        }
    }

    /// What an interruption of the search keeps (the interrupted line says it).
    pub fn keeps(&mut self, what: &str) {
        xtask_base::ui::interrupt::keeps(what);
        self.keeps = Some(what.to_string());
    }

    /// A new piece of work, said in one line (and named by the heartbeats after it).
    pub fn step(&self, what: &str) {
        if let Some(k) = &self.keeps {
            xtask_base::ui::interrupt::keeps(k);
        }
        self.set(what);
        if !xtask_base::ui::quiet() {
            xtask_base::errln!("precision: {what}");
        }
    }

    /// What runs now, for the heartbeats and an interruption's line only (no line of its own).
    pub fn set(&self, what: &str) {
        xtask_base::ui::interrupt::doing(&format!("precision: {what}"));
        if let Ok(mut d) = self.doing.lock() {
            d.what = what.to_string();
            d.since = Instant::now();
        }
    }

    /// A bar for one chain run on a terminal (None without one: the heartbeat speaks there).
    pub fn chain_bar(&self, what: &str) -> Option<Task> {
        (xtask_base::ui::term::bars_enabled() && !xtask_base::ui::quiet())
            .then(|| Task::new(&format!("precision: {what}"), 1))
    }
}
