//! `cargo xtask`: regenerate and validate QNN HTP context bundles of split robot policies.
//! A thin entry point: parse flags, dispatch to one function per command.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use xtask::commands;
use xtask_base::{project, ui};

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
    /// Say more (why a step is dirty, placement details, edge-case findings) and show what
    /// the native QNN/ORT libraries print instead of keeping it in the command's log.
    #[arg(short, long, global = true, conflicts_with = "quiet")]
    verbose: bool,
    /// Print results and errors only: no progress, notes or warnings.
    #[arg(short, long, global = true)]
    quiet: bool,
    /// Colour the PASS/FAIL verdicts: on a terminal (auto, off when NO_COLOR is set), always
    /// or never.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "auto",
        value_name = "WHEN"
    )]
    color: ui::ColorChoice,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show the runtime libraries, their versions and which backends are usable here.
    #[command(
        after_help = "Examples:\n  cargo xtask doctor\n  cargo xtask doctor --quantizer\n  cargo xtask doctor --device ssh://me@board/data/xtask"
    )]
    Doctor(commands::doctor::Doctor),
    /// Compare every component's outputs with its golden tensors on one backend.
    #[command(
        after_help = "Examples:\n  cargo xtask parity --backend htp\n  cargo xtask parity --backend ort --model mine\n  cargo xtask parity --backend htp --iters 20 --device ssh://me@board/data/xtask"
    )]
    Parity(commands::parity::Parity),
    /// Build every component: ONNX → DLC, QNN CPU-backend parity, HTP context binary.
    #[command(
        after_help = "Examples:\n  cargo xtask build-ctx --soc 77\n  cargo xtask build-ctx --soc 77 --dry-run\n  cargo xtask build-ctx --soc 77 --only vision --force"
    )]
    BuildCtx(commands::build_ctx::BuildCtx),
    /// The build cache shared by checkouts (`build-ctx --cache`): list entries, collect garbage.
    #[command(
        after_help = "Examples:\n  cargo xtask cache ls --cache ~/.cache/xtask-steps\n  cargo xtask cache gc --cache ~/.cache/xtask-steps --max-size 50G"
    )]
    Cache(commands::cache::Cache),
    /// Run the whole chain end to end: chain parity and latency reports.
    #[command(
        after_help = "Examples:\n  cargo xtask run --backend htp --iters 2 --warmup 1\n  cargo xtask run --backend cpu --attribute\n  cargo xtask run --backend htp --iters 10 --warmup 2 --device ssh://me@board/data/xtask"
    )]
    Run(commands::run::Run),
    /// Pick each component's precision by the chain's own action error against the float golden.
    #[command(after_help = "Examples:\n  cargo xtask precision --model tiny --budget 1e-2")]
    Precision(commands::precision::PrecisionCmd),
    /// The build plan; `--json` prints it as a CI matrix (one entry per component and SoC).
    #[command(after_help = "Examples:\n  cargo xtask plan\n  cargo xtask plan --json")]
    Plan(commands::plan::Plan),
    /// Assemble the Hugging Face bundle (card, manifest, checksums) of a built model.
    #[command(
        after_help = "Examples:\n  cargo xtask package --soc 77 --out dist/tiny\n  cargo xtask package --soc 77 --out dist/tiny --allow-unmeasured"
    )]
    Package(commands::package::Package),
    /// Prove a bundle intact: hashes, wrappers, HTP loads, card vs reports.
    #[command(
        after_help = "Examples:\n  cargo xtask verify dist/tiny\n  cargo xtask verify dist/tiny --json"
    )]
    Verify(commands::verify::Verify),
    /// Upload a verified bundle to Hugging Face with `hf upload`.
    #[command(
        after_help = "Examples:\n  cargo xtask release --repo OWNER/NAME --bundle dist/tiny --dry-run\n  cargo xtask release --repo OWNER/NAME --bundle dist/tiny"
    )]
    Release(commands::release::Release),
    /// Download a published bundle with `hf download` and lay it out for a model.
    #[command(
        after_help = "Examples:\n  cargo xtask fetch --repo OWNER/NAME --model M\n  cargo xtask fetch --model M --inputs-only"
    )]
    Fetch(commands::fetch::Fetch),
    /// Merge the per-component parity reports of CI matrix entries into the model's reports.
    #[command(after_help = "Examples:\n  cargo xtask merge-reports --model M entry-reports/*/")]
    MergeReports(commands::merge_reports::MergeReports),
    /// Find the first operator where a QNN backend diverges from ONNX Runtime's CPU EP.
    #[command(
        after_help = "Examples:\n  cargo xtask bisect vision --backend htp\n  cargo xtask bisect action_context --backend cpu"
    )]
    Bisect(commands::bisect::Bisect),
    /// Scan golden and intermediate tensors for values fp16 on the HTP cannot hold.
    #[command(
        after_help = "Examples:\n  cargo xtask lint-fp16\n  cargo xtask lint-fp16 --model mine"
    )]
    LintFp16(commands::lint_fp16::LintFp16),
    /// Every operator the graphs run, alone, on the QNN CPU backend and the HTP vs ORT's CPU EP.
    #[command(
        after_help = "Examples:\n  cargo xtask conformance\n  cargo xtask conformance --model mine --backend cpu"
    )]
    Conformance(commands::conformance::Conformance),
    /// Warn about graph operators the conformance report finds deviating (exit 0; --deny: 1).
    #[command(after_help = "Examples:\n  cargo xtask lint\n  cargo xtask lint --deny")]
    Lint(commands::lint::Lint),
    /// Benchmarks with ratios against a baseline of the same run: build, chain, parity.
    #[command(after_help = "Examples:\n  cargo xtask bench build\n  cargo xtask bench chain")]
    Bench(commands::bench::Bench),
    /// Print a shell completion script (`cargo xtask completions bash > …`).
    #[command(
        after_help = "Examples:\n  cargo xtask completions bash > ~/.local/share/bash-completion/completions/xtask"
    )]
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// The commands whose `--json` prints the one JSON document of `ui::json`.
const JSON_COMMANDS: &[&str] = &["doctor", "parity", "run", "bisect", "verify"];

/// Exit codes: 0 all good, 1 a parity gate or build step failed, 2 bad input or environment.
fn main() -> ExitCode {
    xtask_base::identity::set(env!("CARGO_PKG_VERSION"), env!("XTASK_SOURCE_SHA256"));
    let matches = match Cli::command().try_get_matches() {
        Ok(m) => m,
        Err(e) => better_suggestion(e).exit(),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let (sub_name, sub) = matches.subcommand().expect("a subcommand is required");
    let json = JSON_COMMANDS.contains(&sub_name)
        && sub.try_get_one::<bool>("json").ok().flatten() == Some(&true);
    ui::init(ui::Settings {
        verbose: cli.verbose,
        quiet: cli.quiet,
        color: cli.color,
        json,
    });
    ui::interrupt::install(sub_name);
    if let Command::Completions { shell } = cli.command {
        let mut cmd = Cli::command();
        clap_complete::generate(shell, &mut cmd, "xtask", &mut std::io::stdout());
        return ExitCode::SUCCESS;
    }
    if json {
        ui::stdio::human_lines_to_stderr();
    }
    let result = match cli.command {
        // A cache is shared by many checkouts: its commands need no project at all.
        Command::Cache(cmd) => cmd.run(),
        command => {
            // A bundle must verify anywhere: outside a project, the runtime of this binary's
            // checkout (or ORT_DYLIB_PATH + QNN_LIB_DIR) is used.
            let root = match command {
                Command::Verify(_) => project::find_root_or_tool_home(cli.root.as_deref()),
                _ => project::find_root(cli.root.as_deref()),
            };
            root.and_then(|root| {
                let model = sub.try_get_one::<String>("model").ok().flatten();
                ui::stdio::isolate_native_output(
                    &project::native_log_path(&root, model.map(String::as_str), sub_name),
                    cli.verbose,
                );
                let ctx = commands::Ctx {
                    root,
                    verbose: cli.verbose,
                };
                dispatch(command, &ctx)
            })
        }
    };
    ui::warnings::flush();
    let (code, error) = match result {
        Ok(xtask_base::vocab::Outcome::Success) => (0, None),
        Ok(xtask_base::vocab::Outcome::GateFailed) => (1, None),
        Err(err) => {
            let text = ui::humanize(&format!("{err:#}"));
            xtask_base::errln!("error: {text}");
            (2, Some(text))
        }
    };
    if json {
        ui::json::emit(sub_name, code, error);
    }
    ExitCode::from(code)
}

/// An unknown flag gets the suggestion of `ui::suggest` (a swapped pair is one edit) among the
/// flags of the subcommand typed, when clap's own found none or a worse one.
fn better_suggestion(mut e: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return e;
    }
    let Some(ContextValue::String(typed)) = e.get(ContextKind::InvalidArg).cloned() else {
        return e;
    };
    let Some(word) = typed.strip_prefix("--") else {
        return e;
    };
    let root = Cli::command();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sub = args.iter().find_map(|a| root.find_subcommand(a));
    let longs: Vec<String> = sub
        .into_iter()
        .flat_map(|s| s.get_arguments())
        .chain(root.get_arguments())
        .filter_map(|a| a.get_long().map(str::to_string))
        .collect();
    if let Some(best) = ui::suggest::closest(word, longs.iter().map(String::as_str)) {
        e.insert(
            ContextKind::SuggestedArg,
            ContextValue::String(format!("--{best}")),
        );
    }
    e
}

fn dispatch(command: Command, ctx: &commands::Ctx) -> anyhow::Result<xtask_base::vocab::Outcome> {
    match command {
        Command::Doctor(cmd) => cmd.run(ctx),
        Command::Parity(cmd) => cmd.run(ctx),
        Command::BuildCtx(cmd) => cmd.run(ctx),
        Command::Cache(cmd) => cmd.run(),
        Command::Bench(cmd) => cmd.run(ctx),
        Command::Run(cmd) => cmd.run(ctx),
        Command::Package(cmd) => cmd.run(ctx),
        Command::MergeReports(cmd) => cmd.run(ctx),
        Command::Verify(cmd) => cmd.run(ctx),
        Command::Release(cmd) => cmd.run(ctx),
        Command::Fetch(cmd) => cmd.run(ctx),
        Command::Plan(cmd) => cmd.run(ctx),
        Command::Precision(cmd) => cmd.run(ctx),
        Command::Bisect(cmd) => cmd.run(ctx),
        Command::LintFp16(cmd) => cmd.run(ctx),
        Command::Conformance(cmd) => cmd.run(ctx),
        Command::Lint(cmd) => cmd.run(ctx),
        Command::Completions { .. } => Ok(xtask_base::vocab::Outcome::Success),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every flag and argument of every command says what it is for in `--help`.
    #[test]
    fn every_argument_has_help_text() {
        let mut missing = Vec::new();
        let root = Cli::command();
        let mut stack = vec![(String::new(), root)];
        while let Some((path, cmd)) = stack.pop() {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if arg.get_help().is_none() && !["help", "version"].contains(&id) {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                stack.push((format!("{path} {}", sub.get_name()), sub.clone()));
            }
        }
        assert!(missing.is_empty(), "no help text: {missing:?}");
    }
}
