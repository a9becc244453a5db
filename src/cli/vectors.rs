//! `retrysim vectors`: the conformance vectors of a policy file on stdout
//! (`schema = "retrysim.vectors/1"`, docs/vectors.md), for an SDK to replay.

use super::EXIT_OK;
use crate::config::load_policy_file;
use crate::error::InputError;
use clap::Args;
use retrysim_policy::vectors::{DEFAULT_CASES, vectors};
use std::path::PathBuf;

/// `retrysim vectors`.
#[derive(Args, Debug, Clone)]
pub struct VectorsArgs {
    /// The policy file.
    pub policy: PathBuf,
    /// How many cases: the designed ones first (every rule, kind and
    /// transition), then random scripts on the policy as given.
    #[arg(long, default_value_t = DEFAULT_CASES)]
    pub cases: usize,
}

/// Runs the `vectors` command.
pub fn run(args: &VectorsArgs) -> anyhow::Result<i32> {
    if args.cases == 0 {
        return Err(InputError::field("--cases", "--cases", "must be at least 1").into());
    }
    let policy = load_policy_file(&args.policy)?;
    let source = args.policy.display().to_string().replace('\\', "/");
    let v = vectors(&policy, &source, args.cases);
    println!("{}", serde_json::to_string_pretty(&v)?);
    Ok(EXIT_OK)
}
