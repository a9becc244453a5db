//! Time as the policy sees it: integer nanoseconds since any fixed origin
//! (the start of a simulated run, or an `Instant` in production).

/// A point in time or a duration, in nanoseconds.
pub type Nanos = u64;

/// A time that never comes ("no deadline", "no timeout").
pub const NEVER: Nanos = u64::MAX;

/// Nanoseconds per second.
pub const NANOS_PER_SEC: f64 = 1e9;

/// Converts seconds to nanoseconds, rounding to the nearest nanosecond
/// (ties away from zero) and saturating at [`NEVER`]; 0 for NaN or ≤ 0.
pub fn from_secs_f64(secs: f64) -> Nanos {
    if secs.is_nan() || secs <= 0.0 {
        return 0;
    }
    let ns = secs * NANOS_PER_SEC;
    if ns >= NEVER as f64 {
        return NEVER;
    }
    let whole = ns as Nanos;
    if ns - whole as f64 >= 0.5 { whole + 1 } else { whole }
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
        for x in [0.5e-9, 1.5e-9, 2.5e-9, 0.4999999999e-9, 1234.56789e-9, 3.7, 9.3e9, 1.8e10] {
            assert_eq!(from_secs_f64(x), (x * NANOS_PER_SEC).round() as Nanos, "{x}");
        }
    }
}
