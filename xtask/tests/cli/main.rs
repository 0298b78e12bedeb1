//! The CLI tests, one crate (one link) with a module per area. The offline tier (no runtime,
//! no network) is the `offline_cli` module: `cargo test --release --test cli -- offline_cli::`.

mod bisect_cli;
mod bisect_rank_cli;
mod build_ctx_cli;
mod build_record_cli;
mod bundle_facts_cli;
mod bundle_hardening_cli;
mod cli_manners;
#[allow(dead_code)]
mod common;
mod conformance_cli;
mod device_ssh_cli;
mod docs_cli;
mod dry_run_truth_cli;
mod fp16_version_cli;
mod generator_cli;
mod golden_script_cli;
mod hostile_bound_cli;
mod hostile_bundle_cli;
mod hostile_bundle_refs_cli;
mod hostile_cli;
mod hostile_recipes_cli;
mod hostile_runtime_cli;
mod hostile_values_cli;
mod inputs_bound_cli;
mod interrupt_cli;
mod leftovers_cli;
mod new_model_cli;
mod newcomer_cli;
mod offline_cli;
mod package_truth_cli;
mod parity_cli;
mod quantize_cli;
mod refusals_cli;
mod regenerate_cache_cli;
mod regenerate_cli;
mod release_cli;
mod release_preflight_cli;
mod report_pages_cli;
mod report_tables_cli;
mod reports_kept_cli;
mod rewrite_cli;
mod rewrite_decompose;
mod run_cli;
mod runtime_cli;
#[allow(dead_code)]
mod sandbox;
mod sdk_cli;
mod signing_cli;
mod stdout_stderr_cli;
mod step_cache_cli;
mod step_cache_share_cli;
mod tidy;
mod verdict_cli;
mod whatif_cli;
mod workflow_schema;
