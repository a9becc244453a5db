//! What users see: the summary (JSON, CSV, terminal table) and the time
//! series, written atomically and never over an input file.

pub mod answer;
pub mod collapse_rate;
pub mod columns;
pub mod differences;
pub mod export;
pub mod files;
pub mod findings;
pub mod frontier;
pub mod frontier_report;
pub mod layout;
pub mod manifest;
pub mod markdown;
pub mod notes;
pub mod numbers;
pub mod plain_table;
pub mod report;
pub mod shards;
pub mod summary;
pub mod sweep;
pub mod table;
pub mod timeseries;
pub mod trace;
pub mod vs_baseline;

pub use files::{check_outputs, write_atomic, write_streamed};
pub use summary::{VariantSummary, summarize_runs, summary_json};
