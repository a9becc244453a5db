//! Time as the policy sees it: integer nanoseconds since any fixed origin
//! (the start of a simulated run, or an `Instant` in production). The
//! simulator's clock is this one.

/// A point in time or a duration, in nanoseconds.
pub type Nanos = u64;

/// A time that never comes ("no deadline", "no timeout").
pub const NEVER: Nanos = u64::MAX;

/// Nanoseconds per second.
pub const NANOS_PER_SEC: f64 = 1e9;

/// Converts seconds to nanoseconds, rounding to the nearest nanosecond
/// (ties away from zero) and saturating at [`NEVER`]; 0 for NaN or ≤ 0.
#[inline]
pub fn from_secs_f64(secs: f64) -> Nanos {
    if secs.is_nan() || secs <= 0.0 {
        return 0;
    }
    let ns = secs * NANOS_PER_SEC;
    if ns >= NEVER as f64 {
        return NEVER;
    }
    // `f64::round` (half away from zero) without a libm call: the
    // subtraction is exact for a non-negative value and its integer part.
    // Below 2^63 the signed conversions (one instruction each on x86-64)
    // give the same integers as the unsigned ones.
    if ns < I64_LIMIT {
        let whole = ns as i64;
        let rounded = if ns - whole as f64 >= 0.5 { whole + 1 } else { whole };
        return rounded as Nanos;
    }
    let whole = ns as Nanos;
    if ns - whole as f64 >= 0.5 { whole + 1 } else { whole }
}

/// 2^63 as a float: the first value a signed 64-bit integer cannot hold.
const I64_LIMIT: f64 = 9_223_372_036_854_775_808.0;

/// A number of nanoseconds as a float: the same value as `ns as f64`,
/// through the signed conversion (one instruction on x86-64, where the
/// unsigned one is several) below 2^63.
#[inline(always)]
pub fn nanos_f64(ns: Nanos) -> f64 {
    if ns <= i64::MAX as Nanos { ns as i64 as f64 } else { ns as f64 }
}

/// A [`Duration`](std::time::Duration) as nanoseconds, saturating below [`NEVER`].
#[inline]
pub(crate) fn nanos(d: std::time::Duration) -> Nanos {
    d.as_nanos().min(u128::from(NEVER - 1)) as Nanos
}

/// Nanoseconds as a [`Duration`](std::time::Duration); `None` for [`NEVER`].
#[inline]
pub(crate) fn duration(ns: Nanos) -> Option<std::time::Duration> {
    (ns != NEVER).then(|| std::time::Duration::from_nanos(ns))
}

/// Converts nanoseconds to seconds.
#[inline]
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
        assert_eq!(from_secs_f64(f64::NAN), 0);
        assert_eq!(from_secs_f64(1e30), NEVER);
        assert_eq!(to_secs_f64(1_500_000_000), 1.5);
        for ns in [0, 1, 1 << 53, (1 << 53) + 1, i64::MAX as Nanos, i64::MAX as Nanos + 1, NEVER - 1, NEVER] {
            assert_eq!(nanos_f64(ns).to_bits(), (ns as f64).to_bits(), "{ns}");
        }
        // Ties round away from zero, as f64::round does, on both sides of 2^63 ns.
        for x in [0.5e-9, 1.5e-9, 2.5e-9, 0.4999999999e-9, 1234.56789e-9, 3.7, 9.3e9, 1.8e10, 9.3e9 * 1.5] {
            assert_eq!(from_secs_f64(x), (x * NANOS_PER_SEC).round() as Nanos, "{x}");
        }
    }
}
