//! Durations (`"250ms"`, `"2s"`, `"1m"`) and rates (`"800/s"`) with units.

pub use retrysim_policy::units::{DURATION_UNITS, MAX_DURATION_SECS, parse_duration};

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
    fn rates() {
        assert_eq!(parse_rate("800/s"), Ok(800.0));
        assert_eq!(parse_rate("120/m"), Ok(2.0));
        assert_eq!(parse_rate("2/ms"), Ok(2000.0));
        assert!(parse_rate("800").is_err());
        assert!(parse_rate("-5/s").unwrap_err().contains("negative"));
        assert!(parse_rate("5/fortnight").is_err());
    }
}
