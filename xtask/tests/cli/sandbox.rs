//! A scratch project with witnesses beside it: a sentinel folder next to the project that must
//! stay exactly as it was, and a secret file whose bytes must never appear inside the project.
//! The hostile suites run every case in one, and check both after each.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::{Run, Scratch};

pub struct Sandbox {
    /// Declared first: the project is removed before the folder that holds it.
    pub p: Scratch,
    outer: tempfile::TempDir,
    sentinel: BTreeMap<String, Vec<u8>>,
    pub secret: Vec<u8>,
}

impl Sandbox {
    /// `outer/outside/` (the sentinel folder, with a recipe a hostile name may point at),
    /// `outer/secret.txt`, and the project in `outer/<tmp>/`.
    pub fn new() -> Self {
        let outer = tempfile::tempdir().unwrap();
        let outside = outer.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(
            outside.join("keep.txt"),
            b"the sentinel folder: never touched",
        )
        .unwrap();
        let p = Scratch::tiny_in(outer.path());
        let recipe = std::fs::read_to_string(p.path("recipes/tiny/action_context.toml")).unwrap();
        std::fs::write(
            outside.join("evil.toml"),
            recipe.replace(
                "name = \"action_context\"",
                "name = \"../../../outside/evil\"",
            ),
        )
        .unwrap();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let secret =
            format!("SENTINEL-SECRET-{}-{nanos}-do-not-copy", std::process::id()).into_bytes();
        std::fs::write(outer.path().join("secret.txt"), &secret).unwrap();
        let sentinel = snapshot(&outside);
        Sandbox {
            p,
            outer,
            sentinel,
            secret,
        }
    }

    pub fn secret_path(&self) -> PathBuf {
        self.outer.path().join("secret.txt")
    }

    pub fn outside(&self) -> PathBuf {
        self.outer.path().join("outside")
    }

    /// The tool on the project, from the project root (relative flags resolve inside it).
    pub fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut cmd = self.p.command(args);
        cmd.current_dir(self.p.dir.path());
        for (k, v) in env {
            cmd.env(k, v);
        }
        Run::from(cmd.output().unwrap())
    }

    /// Nothing beside the project changed, nothing new appeared beside it, and no file of the
    /// project holds the secret's bytes (links are not followed: the shared runtime is one).
    #[track_caller]
    pub fn assert_untouched(&self, case: &str) {
        assert_eq!(
            snapshot(&self.outside()),
            self.sentinel,
            "{case}: the sentinel folder beside the project changed"
        );
        let mut beside: Vec<String> = std::fs::read_dir(self.outer.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        beside.sort();
        let project = self.p.dir.path().file_name().unwrap().to_string_lossy();
        let mut want = vec!["outside".to_string(), "secret.txt".into(), project.into()];
        want.sort();
        assert_eq!(
            beside, want,
            "{case}: something was written beside the project"
        );
        let runtime = self.p.path("target/qnn-runtime");
        let walk = walkdir::WalkDir::new(self.p.dir.path())
            .into_iter()
            .filter_entry(|e| e.path() != runtime);
        for entry in walk {
            let entry = entry.unwrap();
            if !entry.file_type().is_file() {
                continue;
            }
            let bytes = std::fs::read(entry.path()).unwrap_or_default();
            assert!(
                !bytes.windows(self.secret.len()).any(|w| w == self.secret),
                "{case}: the secret's bytes are inside the project, in {}",
                entry.path().display()
            );
        }
    }
}

fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap())
        .map(|e| {
            let rel = e.path().strip_prefix(dir).unwrap().display().to_string();
            let bytes = if e.file_type().is_file() {
                std::fs::read(e.path()).unwrap()
            } else {
                Vec::new()
            };
            (rel, bytes)
        })
        .collect()
}

/// Replaces the first `from` with `to` in a project file (the case's setup must apply).
pub fn edit(p: &Scratch, rel: &str, from: &str, to: &str) {
    let path = p.path(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{rel} lacks {from:?}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

/// One hostile case: a setup, a command (with environment), its exit code, what it must say,
/// and a check of what it left behind.
pub struct Case {
    pub name: &'static str,
    pub setup: fn(&Sandbox),
    pub args: &'static [&'static str],
    pub env: &'static [(&'static str, &'static str)],
    pub code: i32,
    pub says: &'static [&'static str],
    pub after: fn(&Sandbox),
}

pub fn nothing(_: &Sandbox) {}

/// Runs every case in a fresh sandbox; prints the table (case | exit | first error line) and
/// fails with every mismatch at once.
pub fn run_cases(cases: Vec<Case>) {
    let mut failures = Vec::new();
    let mut table = Vec::new();
    for case in cases {
        let s = Sandbox::new();
        (case.setup)(&s);
        let run = s.run(case.args, case.env);
        let all = run.all();
        let first = run
            .stderr
            .lines()
            .chain(run.stdout.lines())
            .find(|l| l.contains("error") || l.contains("FAIL") || l.contains("MISMATCH"))
            .unwrap_or("")
            .to_string();
        table.push(format!("| {} | {} | {} |", case.name, run.code, first));
        let missing: Vec<&str> = case
            .says
            .iter()
            .copied()
            .filter(|w| !all.contains(w))
            .collect();
        if run.code != case.code || !missing.is_empty() || all.contains("panicked") {
            failures.push(format!(
                "{}: exit {} (expected {}), missing {missing:?}\n{all}",
                case.name, run.code, case.code
            ));
        }
        (case.after)(&s);
        s.assert_untouched(case.name);
    }
    println!("{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
