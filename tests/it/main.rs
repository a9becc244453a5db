//! The integration tests: one binary, one module per behaviour (one link
//! instead of one per file). Tests that need a process of their own (they
//! set the process-wide interrupt flag) and the fuzz harness stay beside
//! this folder as their own binaries. New tests go here, as a module.

mod common;
mod support;
// The runtime crate's scripted HTTP server (its tests/support), at the
// crate root where it expects `served`.
#[path = "../../crates/retrysim-policy/tests/support/http_script.rs"]
mod http_script;
#[path = "../../crates/retrysim-policy/tests/support/served.rs"]
mod served;

mod attempt_trace;
mod audit;
mod aws_adaptive_botocore;
mod backoff_draws;
mod bad_input;
mod bad_input_hedging_throttle_dists;
mod breaker_and_retry_after;
mod brooker_retry_sim;
mod call_graphs;
mod charts;
mod client_modes;
mod client_throttling;
mod collapse_rate;
mod comparisons;
mod deep_replay_chains;
mod determinism;
mod edge_metrics;
mod emulate_input;
mod experiment_headers;
mod export;
mod export_hedging_throttle;
mod export_targets;
mod fault_timeline;
mod frontier;
mod hedged_runtime_matches_simulator;
mod hedging;
mod hedging_across_hosts;
mod hosts_in_files;
mod idempotency_ledgers;
mod import_round_trip;
mod lint;
mod lint_hedging;
mod load_balancing;

mod memory_estimate;
mod merge_checksums;
mod message_queues;
mod metastability;
mod naive_model;
mod occ_contention;
mod output_safety;
mod policy_presets;
mod policy_runtime_e2e;
mod properties;
mod queueing_theory;
mod reconcilers;
mod report_in_browser;
mod reports;
mod retry_budgets;
mod retry_formulas;
mod runtime_matches_simulator;
mod sdk_vectors;
mod shipped_experiments;
mod silent_accepts;
mod slurm_cluster;
mod summary_metrics;
mod sustaining_effects;
mod sweeps;
mod table_and_report;
mod terminal_width;
mod thundering_herd;
mod trace_hedges_and_throttles;
mod traced_system;
mod traces_import;
mod tune;
mod tune_choice;
mod tune_emit;
mod tune_input;
mod tune_space;
mod tutorial;
mod unknown_outcomes;
mod untrusted_inputs;
mod warmup_checks;
mod zero_delays;
