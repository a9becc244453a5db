//! `retrysim import`: a deployed retry config (gRPC, Envoy, AWS, Istio,
//! Gateway API, Linkerd) as a policy file on stdout; what has no policy
//! field on stderr.

use super::EXIT_OK;
use crate::error::InputError;
use crate::import::import;
use crate::output::export::Target;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// Where the config comes from.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum ImportSource {
    /// gRPC service config JSON (methodConfig retryPolicy / hedgingPolicy, retryThrottling).
    Grpc,
    /// Envoy route retry_policy YAML or JSON (a fragment, a bootstrap or a config dump).
    Envoy,
    /// AWS shared config profile (retry_mode, max_attempts).
    Aws,
    /// Istio VirtualService retries and timeout.
    Istio,
    /// Gateway API HTTPRoute retry and timeouts (+ XBackendTrafficPolicy retryConstraint).
    GatewayApi,
    /// Linkerd retry/timeout annotations (+ ServiceProfile retryBudget).
    Linkerd,
}

impl From<ImportSource> for Target {
    fn from(s: ImportSource) -> Self {
        match s {
            ImportSource::Grpc => Target::Grpc,
            ImportSource::Envoy => Target::Envoy,
            ImportSource::Aws => Target::Aws,
            ImportSource::Istio => Target::Istio,
            ImportSource::GatewayApi => Target::GatewayApi,
            ImportSource::Linkerd => Target::Linkerd,
        }
    }
}

/// `retrysim import`.
#[derive(Args, Debug, Clone)]
pub struct ImportArgs {
    /// The config file.
    pub file: PathBuf,
    /// What kind of config it is.
    #[arg(long, value_enum)]
    pub from: ImportSource,
    /// Say nothing on stderr but errors.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Runs the `import` command.
pub fn run(args: &ImportArgs) -> anyhow::Result<i32> {
    let shown = args.file.display().to_string();
    let text = crate::config::read::read_input(&args.file)
        .map_err(|e| InputError::file(&shown, format!("cannot read the config file: {e}")))?;
    let name = args.file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "imported".into());
    let target = Target::from(args.from);
    let out = import(&text, target, &shown, &name)?;
    print!(
        "# Policy imported by retrysim from {} ({}).\n{}",
        args.file.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
        target.label(),
        crate::policy::file::to_toml(&out.policy)
    );
    if !args.quiet {
        if out.losses.is_empty() {
            eprintln!("import of {shown} from {}: every setting has a policy field", target.label());
        } else {
            eprintln!(
                "import of {shown} from {}: {} without a policy field or filled by default:",
                target.label(),
                crate::words::plural(out.losses.len(), "setting")
            );
            for l in &out.losses {
                eprintln!("  {}: {}", l.field, l.why);
            }
        }
        for n in &out.notes {
            eprintln!("note: {n}");
        }
    }
    Ok(EXIT_OK)
}
