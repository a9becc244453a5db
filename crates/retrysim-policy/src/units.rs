//! Durations with units: `"250ms"`, `"2s"`, `"1m"`.

use crate::time::{Nanos, from_secs_f64};

/// The units a duration may have, and their length in seconds.
pub const DURATION_UNITS: [(&str, f64); 8] =
    [("ns", 1e-9), ("us", 1e-6), ("µs", 1e-6), ("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0), ("d", 86400.0)];

/// The longest duration accepted: 100 years (36500d), so that no value
/// comes near the "never" sentinel of the engine.
pub const MAX_DURATION_SECS: f64 = 36_500.0 * 86_400.0;

/// Parses a duration: one non-negative decimal number and one unit of
/// [`DURATION_UNITS`], such as `"250ms"`, `"2s"`, `"1.5s"`, `"1m"`,
/// `"500us"`; `"0"` alone needs no unit. Nothing else is a duration: no
/// sums (`"1h 30m"`), no other units (`"2w"`, `"5M"`, `"1hr"`), no
/// exponents or signs.
pub fn parse_duration(text: &str) -> Result<Nanos, String> {
    let t = text.trim();
    let expected = || {
        format!(
            "expected one number and a unit, such as \"250ms\", \"2s\" or \"1.5m\" (units: ns, us, ms, s, m, h, d), got \"{t}\""
        )
    };
    if t.is_empty() {
        return Err("expected a duration with a unit such as \"250ms\", \"2s\" or \"1m\", got an empty string".into());
    }
    if t == "0" {
        return Ok(0);
    }
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(expected)?;
    let (num, unit) = t.split_at(split);
    let well_formed = !num.is_empty()
        && !num.starts_with('.')
        && !num.ends_with('.')
        && num.chars().filter(|&c| c == '.').count() <= 1;
    let per = DURATION_UNITS.iter().find(|(u, _)| *u == unit).map(|&(_, secs)| secs);
    let (true, Some(per), Ok(value)) = (well_formed, per, num.parse::<f64>()) else {
        return Err(expected());
    };
    let secs = value * per;
    if secs > MAX_DURATION_SECS {
        return Err(format!("\"{t}\" is longer than the longest duration allowed, 36500d (100 years)"));
    }
    // Whole numbers exactly, in integer nanoseconds; fractions through seconds.
    match num.parse::<u64>() {
        Ok(n) if per >= 1e-9 => Ok(n * (per * 1e9).round() as u64),
        _ => Ok(from_secs_f64(secs)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(250_000_000));
        assert_eq!(parse_duration("2s"), Ok(2_000_000_000));
        assert_eq!(parse_duration("1m"), Ok(60_000_000_000));
        assert_eq!(parse_duration("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration("0s"), Ok(0));
        assert_eq!(parse_duration("24h"), Ok(86_400_000_000_000));
        assert!(parse_duration("250").is_err());
        assert!(parse_duration("fast").is_err());
        assert_eq!(parse_duration("0"), Ok(0));
        assert_eq!(parse_duration("500us"), Ok(500_000));
        assert_eq!(parse_duration("2d"), Ok(2 * 86_400_000_000_000));
    }

    #[test]
    fn only_one_number_and_a_documented_unit_is_a_duration() {
        // Months, weeks, years, hours spelt out, sums, exponents, signs.
        for bad in
            ["5M", "2w", "1y", "1hr", "2s 2s", "1h 30m", "1e3ms", "-1s", "+1s", "1.s", ".5s", "1..5s", "5 m", "never"]
        {
            let e = parse_duration(bad).expect_err(bad);
            assert!(e.contains("ns, us, ms, s, m, h, d"), "{bad}: {e}");
        }
        assert!(parse_duration("36501d").unwrap_err().contains("100 years"));
        assert_eq!(parse_duration("36500d"), Ok(36_500 * 86_400_000_000_000));
    }
}
