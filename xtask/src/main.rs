//! `cargo xtask`: regenerate and validate QNN HTP context bundles of split robot policies.
//! A thin entry point: parse flags, dispatch to one function per command.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use xtask::{commands, project, runtime};

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    version,
    about = "Build and validate QNN HTP context bundles (QAIRT 2.47) of split robot policies"
)]
struct Cli {
    /// Project root (default: the nearest folder above the working directory with recipes/).
    #[arg(long, global = true)]
    root: Option<PathBuf>,
    /// Say more (why a step is dirty, placement details).
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show the runtime libraries, their versions and which backends are usable here.
    Doctor(commands::doctor::Doctor),
    /// Compare every component's outputs with its golden tensors on one backend.
    Parity(commands::parity::Parity),
    /// Build every component: ONNX → DLC, QNN CPU-backend parity, HTP context binary.
    BuildCtx(commands::build_ctx::BuildCtx),
    /// The build cache shared by checkouts (`build-ctx --cache`): list entries, collect garbage.
    Cache(commands::cache::Cache),
    /// Run the whole chain end to end: chain parity and latency reports.
    Run(commands::run::Run),
    /// The build plan; `--json` prints it as a CI matrix (one entry per component and SoC).
    Plan(commands::plan::Plan),
    /// Assemble the Hugging Face bundle (card, manifest, checksums) of a built model.
    Package(commands::package::Package),
    /// Prove a bundle intact: hashes, wrappers, HTP loads, card vs reports.
    Verify(commands::verify::Verify),
    /// Upload a verified bundle to Hugging Face with `hf upload`.
    Release(commands::release::Release),
    /// Download a published bundle with `hf download` and lay it out for a model.
    Fetch(commands::fetch::Fetch),
    /// Merge the per-component parity reports of CI matrix entries into the model's reports.
    MergeReports(commands::merge_reports::MergeReports),
    /// Find the first operator where a QNN backend diverges from ONNX Runtime's CPU EP.
    Bisect(commands::bisect::Bisect),
    /// Scan golden and intermediate tensors for values fp16 on the HTP cannot hold.
    LintFp16(commands::lint_fp16::LintFp16),
    /// Every operator the graphs run, alone, on the QNN CPU backend and the HTP vs ORT's CPU EP.
    Conformance(commands::conformance::Conformance),
    /// Warn about graph operators the conformance report finds deviating (never fails).
    Lint(commands::lint::Lint),
    /// Benchmarks with ratios against a baseline of the same run: build, chain, parity.
    Bench(commands::bench::Bench),
}

/// Exit codes: 0 all good, 1 a parity gate or build step failed, 2 bad input or environment.
fn main() -> ExitCode {
    let cli = Cli::parse();
    // A bundle must verify anywhere: outside a project, the runtime of this binary's checkout
    // (or ORT_DYLIB_PATH + QNN_LIB_DIR) is used.
    let root = match cli.command {
        Command::Verify(_) => project::find_root_or_tool_home(cli.root.as_deref()),
        _ => project::find_root(cli.root.as_deref()),
    };
    let result = root.and_then(|root| {
        runtime::stdio::isolate_native_stdout(
            &xtask::project::scratch_dir(&root, "xtask-native-stdout.log"),
            cli.verbose,
        );
        let ctx = commands::Ctx {
            root,
            verbose: cli.verbose,
        };
        match cli.command {
            Command::Doctor(cmd) => cmd.run(&ctx),
            Command::Parity(cmd) => cmd.run(&ctx),
            Command::BuildCtx(cmd) => cmd.run(&ctx),
            Command::Cache(cmd) => cmd.run(&ctx),
            Command::Bench(cmd) => cmd.run(&ctx),
            Command::Run(cmd) => cmd.run(&ctx),
            Command::Package(cmd) => cmd.run(&ctx),
            Command::MergeReports(cmd) => cmd.run(&ctx),
            Command::Verify(cmd) => cmd.run(&ctx),
            Command::Release(cmd) => cmd.run(&ctx),
            Command::Fetch(cmd) => cmd.run(&ctx),
            Command::Plan(cmd) => cmd.run(&ctx),
            Command::Bisect(cmd) => cmd.run(&ctx),
            Command::LintFp16(cmd) => cmd.run(&ctx),
            Command::Conformance(cmd) => cmd.run(&ctx),
            Command::Lint(cmd) => cmd.run(&ctx),
        }
    });
    match result {
        Ok(xtask::vocab::Outcome::Success) => ExitCode::SUCCESS,
        Ok(xtask::vocab::Outcome::GateFailed) => ExitCode::from(1),
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
