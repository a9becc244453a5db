//! `retrysim vectors`: the conformance vectors of a policy file on stdout
//! (`schema = "retrysim.vectors/1"`, docs/vectors.md), for an SDK to replay.

use super::EXIT_OK;
use crate::config::load_policy_file;
use crate::error::InputError;
use clap::Args;
use retrysim_policy::vectors::{DEFAULT_CASES, vectors};
use std::path::PathBuf;

/// The most cases one call writes: about 50 MB of JSON.
pub const MAX_CASES: usize = 10_000;

/// `retrysim vectors`.
#[derive(Args, Debug, Clone)]
pub struct VectorsArgs {
    /// The policy file.
    pub policy: PathBuf,
    /// How many cases: the designed ones first (every rule, kind and
    /// transition), then random scripts on the policy as given; at most
    /// 10 000.
    #[arg(long, default_value_t = DEFAULT_CASES)]
    pub cases: usize,
}

/// Runs the `vectors` command.
pub fn run(args: &VectorsArgs) -> anyhow::Result<i32> {
    if args.cases == 0 || args.cases > MAX_CASES {
        return Err(InputError::field(
            "--cases",
            "--cases",
            format!(
                "must be 1 to {MAX_CASES} (each case is a few kilobytes of JSON, built in memory), got {}",
                args.cases
            ),
        )
        .into());
    }
    let policy = load_policy_file(&args.policy)?;
    let source = args.policy.display().to_string().replace('\\', "/");
    let v = vectors(&policy, &source, args.cases);
    println!("{}", serde_json::to_string_pretty(&v)?);
    Ok(EXIT_OK)
}
