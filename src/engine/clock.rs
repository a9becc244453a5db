//! Simulated time: integer nanoseconds since the start of a run.

/// A point in simulated time or a duration, in nanoseconds.
pub type Nanos = u64;

/// A time that never comes ("no deadline", "no timeout").
pub const NEVER: Nanos = u64::MAX;

/// Nanoseconds per second.
pub const NANOS_PER_SEC: f64 = 1e9;

/// Converts seconds to nanoseconds, rounding to the nearest nanosecond and
/// saturating at [`NEVER`].
pub fn from_secs_f64(secs: f64) -> Nanos {
    if secs.is_nan() || secs <= 0.0 {
        return 0;
    }
    let ns = (secs * NANOS_PER_SEC).round();
    if ns >= NEVER as f64 { NEVER } else { ns as Nanos }
}

/// Converts nanoseconds to seconds.
pub fn to_secs_f64(ns: Nanos) -> f64 {
    ns as f64 / NANOS_PER_SEC
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_saturation() {
        assert_eq!(from_secs_f64(0.25), 250_000_000);
        assert_eq!(from_secs_f64(-1.0), 0);
        assert_eq!(from_secs_f64(1e30), NEVER);
        assert_eq!(to_secs_f64(1_500_000_000), 1.5);
    }
}
