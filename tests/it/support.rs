//! Helpers shared by several test modules.

pub mod bad_input_case;
pub mod exported;
pub mod lint_run;
pub mod simulator_trace;
pub mod tune_run;
