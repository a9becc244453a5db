//! Durations (`"250ms"`, `"2s"`, `"1m"`) and rates (`"800/s"`) with units.

use crate::engine::{Nanos, from_secs_f64};

/// Parses a duration written with a unit: `"250ms"`, `"2s"`, `"1m"`,
/// `"1h 30m"`, `"500us"`, `"0s"`. Fractions such as `"1.5s"` are allowed.
pub fn parse_duration(text: &str) -> Result<Nanos, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("expected a duration with a unit such as \"250ms\", \"2s\" or \"1m\", got an empty string".into());
    }
    if let Some(ns) = parse_decimal_duration(t) {
        return Ok(ns);
    }
    match humantime::parse_duration(t) {
        Ok(d) => Ok(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
        Err(_) => Err(format!(
            "expected a duration with a unit such as \"250ms\", \"2s\" or \"1m\" (units: ns, us, ms, s, m, h, d), got \"{t}\""
        )),
    }
}

/// `"1.5s"`, `"0.25ms"`: a single decimal number followed by one unit.
fn parse_decimal_duration(t: &str) -> Option<Nanos> {
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = t.split_at(split);
    if num.is_empty() || !num.contains('.') {
        return None;
    }
    let value: f64 = num.parse().ok()?;
    let secs = value * unit_seconds(unit.trim())?;
    Some(from_secs_f64(secs))
}

fn unit_seconds(unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        _ => return None,
    })
}

/// Parses a rate written as `<number>/<unit>`: `"800/s"`, `"48000/m"`,
/// `"2/ms"`, `"0/s"`. Returns events per second.
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let bad = || format!("expected a rate such as \"800/s\" (a non-negative number per s, m, h or ms), got \"{t}\"");
    let (num, unit) = t.split_once('/').ok_or_else(bad)?;
    let value: f64 = num.trim().parse().map_err(|_| bad())?;
    let per = match unit.trim() {
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "ms" => 1e-3,
        _ => return Err(bad()),
    };
    if !value.is_finite() {
        return Err(bad());
    }
    if value < 0.0 {
        return Err(format!("a rate cannot be negative, got \"{t}\""));
    }
    Ok(value / per)
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
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("800/s"), Ok(800.0));
        assert_eq!(parse_rate("120/m"), Ok(2.0));
        assert_eq!(parse_rate("2/ms"), Ok(2000.0));
        assert!(parse_rate("800").is_err());
        assert!(parse_rate("-5/s").unwrap_err().contains("negative"));
        assert!(parse_rate("5/fortnight").is_err());
    }
}
