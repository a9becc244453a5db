//! Simulated time: integer nanoseconds since the start of a run. The types
//! and conversions are the policy crate's, so that the simulator and
//! production code measure time alike.

pub use retrysim_policy::time::{NANOS_PER_SEC, NEVER, Nanos, from_secs_f64, nanos_f64, to_secs_f64};
