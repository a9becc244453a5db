//! `retrysim export`: a policy file as gRPC service-config JSON, an Envoy
//! `retry_policy` YAML fragment, AWS SDK shared-config keys, Gateway API,
//! Istio or Linkerd resources or resilience4j Spring Boot YAML on stdout;
//! every field that could not be carried over on stderr, with why.

use super::{EXIT_CHECK_FAILED, EXIT_OK};
use crate::config::load_policy_file;
use crate::output::export::{Target, export};
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// Where to export to.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum ExportTarget {
    /// gRPC service config JSON (methodConfig retryPolicy, retryThrottling).
    Grpc,
    /// Envoy route retry_policy YAML (and cluster circuit_breakers for a concurrency budget).
    Envoy,
    /// AWS SDK shared config keys (retry_mode, max_attempts).
    Aws,
    /// Kubernetes Gateway API HTTPRoute retry and timeouts (+ XBackendTrafficPolicy retryConstraint).
    GatewayApi,
    /// Istio VirtualService retries (+ DestinationRule).
    Istio,
    /// Linkerd retry annotations (+ ServiceProfile retryBudget).
    Linkerd,
    /// Spring Boot resilience4j retry + circuitbreaker YAML.
    Resilience4j,
}

impl From<ExportTarget> for Target {
    fn from(t: ExportTarget) -> Self {
        match t {
            ExportTarget::Grpc => Target::Grpc,
            ExportTarget::Envoy => Target::Envoy,
            ExportTarget::Aws => Target::Aws,
            ExportTarget::GatewayApi => Target::GatewayApi,
            ExportTarget::Istio => Target::Istio,
            ExportTarget::Linkerd => Target::Linkerd,
            ExportTarget::Resilience4j => Target::Resilience4j,
        }
    }
}

/// `retrysim export`.
#[derive(Args, Debug, Clone)]
pub struct ExportArgs {
    /// The policy file.
    pub policy: PathBuf,
    /// What to translate it to.
    #[arg(long, value_enum)]
    pub to: ExportTarget,
    /// Exit with status 1 when a field could not be carried over.
    #[arg(long)]
    pub strict: bool,
    /// Say nothing on stderr but errors (not even the fields that were lost).
    #[arg(short, long)]
    pub quiet: bool,
}

/// Runs the `export` command.
pub fn run(args: &ExportArgs) -> anyhow::Result<i32> {
    let policy = load_policy_file(&args.policy)?;
    let target = Target::from(args.to);
    let out = export(&policy, target);
    print!("{}", out.text);
    if !args.quiet {
        if out.losses.is_empty() {
            eprintln!("export of \"{}\" to {}: every field carried over", policy.name, target.label());
        } else {
            eprintln!(
                "export of \"{}\" to {}: {} not carried over exactly:",
                policy.name,
                target.label(),
                crate::words::plural(out.losses.len(), "field")
            );
            for l in &out.losses {
                eprintln!("  {}: {}", l.field, l.why);
            }
        }
        for n in &out.notes {
            eprintln!("note: {n}");
        }
    }
    Ok(if args.strict && !out.losses.is_empty() { EXIT_CHECK_FAILED } else { EXIT_OK })
}
