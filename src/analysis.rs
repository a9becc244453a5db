//! Many runs: replications of every variant in parallel, and the statistics
//! that summarise them.

pub mod anatomy;
pub mod audit;
pub mod collapse;
pub mod estimate;
pub mod exact;
pub mod frontier;
pub mod lint;
pub mod precision;
pub mod replicate;
pub mod stats;
pub mod survival;
pub mod sweep;
pub mod tune;
pub mod warmup;

pub use replicate::{RunSet, VariantRuns, run_all, run_all_with, run_ranges};
pub use stats::{Summary, summarize};
