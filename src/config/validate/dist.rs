//! Distribution tables: `const`, `exp`, `uniform`, `lognormal`, `gamma`,
//! `pareto`, `mixture` (weighted parts) and `empirical` (a data file beside
//! the experiment).

use super::{V, first_extra};
use crate::config::raw::DistRaw;
use crate::config::units::parse_duration;
use crate::error::InputResult;
use crate::model::Dist;
use crate::model::dist::{Empirical, Mixture};
use std::path::Path;
use std::sync::Arc;

/// The distribution check, added to the shared validation scaffold [`V`].
pub(super) trait Dists {
    /// A distribution table: `{ dist = "exp", mean = "15ms" }` and its siblings.
    fn dist(&self, field: &str, d: &DistRaw) -> InputResult<Dist>;
}

impl Dists for V<'_> {
    fn dist(&self, field: &str, d: &DistRaw) -> InputResult<Dist> {
        if d.per_inflight.is_some() {
            return Err(self.err(&format!("{field}.per_inflight"), "only used in a service's `service_time`"));
        }
        let secs = |sub: &str, v: &Option<String>| -> InputResult<Option<f64>> {
            v.as_ref()
                .map(|s| {
                    parse_duration(s)
                        .map(crate::engine::to_secs_f64)
                        .map_err(|m| self.err(&format!("{field}.{sub}"), m))
                })
                .transpose()
        };
        let (value, mean, min, max, p99) = (
            secs("value", &d.value)?,
            secs("mean", &d.mean)?,
            secs("min", &d.min)?,
            secs("max", &d.max)?,
            secs("p99", &d.p99)?,
        );
        let present = [
            ("value", value.is_some()),
            ("mean", mean.is_some()),
            ("min", min.is_some()),
            ("max", max.is_some()),
            ("p99", p99.is_some()),
            ("mu", d.mu.is_some()),
            ("sigma", d.sigma.is_some()),
            ("shape", d.shape.is_some()),
            ("scale", d.scale.is_some()),
            ("parts", d.parts.is_some()),
            ("file", d.file.is_some()),
        ];
        if d.weight.is_some() {
            return Err(self.err(&format!("{field}.weight"), "only a part of a mixture has a weight"));
        }
        let only = |allowed: &[&str]| -> InputResult<()> {
            match first_extra(&present, allowed) {
                Some(extra) => Err(self.err(
                    &format!("{field}.{extra}"),
                    format!("not a parameter of dist = \"{}\" (it takes {})", d.dist, allowed.join(", ")),
                )),
                None => Ok(()),
            }
        };
        let need = |name: &str, v: Option<f64>| {
            v.ok_or_else(|| self.err(field, format!("dist = \"{}\" needs `{name}`", d.dist)))
        };
        match d.dist.as_str() {
            "const" => {
                only(&["value"])?;
                Ok(Dist::Const(crate::engine::from_secs_f64(need("value", value)?)))
            }
            "exp" => {
                only(&["mean"])?;
                let m = need("mean", mean)?;
                if m <= 0.0 {
                    return Err(self.err(&format!("{field}.mean"), "must be longer than 0"));
                }
                Ok(Dist::Exp { mean: m })
            }
            "uniform" => {
                only(&["min", "max"])?;
                let (lo, hi) = (need("min", min)?, need("max", max)?);
                if hi < lo {
                    return Err(self.err(&format!("{field}.max"), "must be at least `min`"));
                }
                Ok(Dist::Uniform { min: lo, max: hi })
            }
            "lognormal" => {
                if d.mu.is_some() || d.sigma.is_some() {
                    only(&["mu", "sigma"])?;
                    let (mu, sigma) = (d.mu.unwrap_or(f64::NAN), d.sigma.unwrap_or(f64::NAN));
                    if !(mu.is_finite() && sigma.is_finite() && sigma > 0.0) {
                        return Err(self
                            .err(field, "lognormal by mu + sigma needs both, finite, with sigma > 0 (of ln seconds)"));
                    }
                    Ok(Dist::LogNormal { mu, sigma })
                } else {
                    only(&["mean", "p99"])?;
                    let (m, p) = (need("mean", mean)?, need("p99", p99)?);
                    Dist::lognormal_from_mean_p99(m, p).map_err(|msg| self.err(field, msg))
                }
            }
            "gamma" => {
                only(&["mean", "shape"])?;
                let m = need("mean", mean)?;
                let k = d.shape.ok_or_else(|| self.err(field, "dist = \"gamma\" needs `shape`"))?;
                if m <= 0.0 || !(k.is_finite() && k > 0.0) {
                    return Err(self.err(field, "gamma needs mean > 0 and shape > 0"));
                }
                Ok(Dist::Gamma { shape: k, scale: m / k })
            }
            "pareto" => {
                only(&["scale", "shape"])?;
                let scale = match &d.scale {
                    Some(s) => parse_duration(s)
                        .map(crate::engine::to_secs_f64)
                        .map_err(|m| self.err(&format!("{field}.scale"), m))?,
                    None => return Err(self.err(field, "dist = \"pareto\" needs `scale` (its smallest value)")),
                };
                let k = d.shape.ok_or_else(|| self.err(field, "dist = \"pareto\" needs `shape`"))?;
                if scale <= 0.0 {
                    return Err(self.err(&format!("{field}.scale"), "must be longer than 0"));
                }
                if !(k.is_finite() && k > 1.0) {
                    return Err(self.err(
                        &format!("{field}.shape"),
                        format!("must be above 1 (at or below 1 the mean is infinite), got {k}"),
                    ));
                }
                Ok(Dist::Pareto { scale, shape: k })
            }
            "mixture" => {
                only(&["parts"])?;
                let parts = d.parts.as_deref().unwrap_or_default();
                if parts.is_empty() {
                    return Err(self.err(
                        &format!("{field}.parts"),
                        "required: parts = [{ weight = 0.99, dist = \"exp\", mean = \"10ms\" }, { weight = 0.01, dist = \"const\", value = \"1s\" }]",
                    ));
                }
                let mut out = Vec::with_capacity(parts.len());
                for (i, part) in parts.iter().enumerate() {
                    let pf = format!("{field}.parts[{i}]");
                    let w = part.weight.ok_or_else(|| self.err(&format!("{pf}.weight"), "required: a share such as 0.99"))?;
                    if !(w.is_finite() && w > 0.0) {
                        return Err(self.err(&format!("{pf}.weight"), format!("must be a number above 0, got {w}")));
                    }
                    let inner = DistRaw { weight: None, ..part.clone() };
                    out.push((w, self.dist(&pf, &inner)?));
                }
                Ok(Dist::Mixture(Arc::new(Mixture::new(out).map_err(|m| self.err(&format!("{field}.parts"), m))?)))
            }
            "empirical" => {
                only(&["file"])?;
                let name = d.file.as_ref().ok_or_else(|| {
                    self.err(field, "dist = \"empirical\" needs `file` (one sample in seconds a line, or quantile,value rows)")
                })?;
                let path = Path::new(self.file).parent().unwrap_or(Path::new("")).join(name);
                let text = crate::config::read::read_input(&path).map_err(|e| {
                    self.err(&format!("{field}.file"), format!("cannot read {}: {e}", path.display()))
                })?;
                let data = empirical(&text).map_err(|m| self.err(&format!("{field}.file"), format!("{}: {m}", path.display())))?;
                Ok(Dist::Empirical(Arc::new(data)))
            }
            other => Err(self.err(
                &format!("{field}.dist"),
                format!(
                    "unknown distribution \"{other}\": allowed are const, exp, uniform, lognormal, gamma, pareto, mixture, empirical"
                ),
            )),
        }
    }
}

/// Why `text` on line `n` is no sample: the duration parser's reason when
/// it reads as a duration with a unit (`36501d` is too long), else that it
/// is no number of seconds.
fn not_a_duration(n: usize, text: &str) -> String {
    let t = text.trim();
    match parse_duration(t) {
        Err(why) if t.starts_with(|c: char| c.is_ascii_digit() || c == '.') && t.ends_with(char::is_alphabetic) => {
            format!("line {n}: {why}")
        }
        _ => format!("line {n}: \"{t}\" is not a number of seconds"),
    }
}

/// Parses an empirical data file: one sample a line (seconds, or a duration
/// with its unit such as `12ms`), or `quantile,value` rows from quantile 0
/// to 1. Blank lines and lines starting with `#` are skipped, and so is a
/// first row that is a header (every field a word: it starts with a
/// letter). A sample is at most 36500 days, as every duration.
pub(super) fn empirical(text: &str) -> Result<Empirical, String> {
    const MAX_SECONDS: f64 = 36_500.0 * 86_400.0;
    let value = |s: &str| -> Option<f64> {
        let s = s.trim();
        s.parse::<f64>().ok().or_else(|| parse_duration(s).ok().map(crate::engine::to_secs_f64))
    };
    let word = |s: &str| s.trim().chars().next().is_some_and(char::is_alphabetic);
    let in_range = |n: usize, x: f64| -> Result<f64, String> {
        if !(x.is_finite() && x >= 0.0) {
            Err(format!("line {n}: a duration must be finite and at least 0, got {x}"))
        } else if x > MAX_SECONDS {
            Err(format!("line {n}: {x} s is more than 36500 days, the longest duration"))
        } else {
            Ok(x)
        }
    };
    let mut samples = Vec::new();
    let mut points: Vec<(f64, f64)> = Vec::new();
    let mut seen_data = false;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split(',').collect();
        if !seen_data && fields.iter().all(|f| word(f) && value(f).is_none()) {
            // A header row such as `quantile,value`.
            seen_data = true;
            continue;
        }
        seen_data = true;
        match fields.as_slice() {
            [x] => {
                if !points.is_empty() {
                    return Err(format!("line {n}: one value, but earlier lines are quantile,value rows"));
                }
                let x = value(x).ok_or_else(|| not_a_duration(n, x))?;
                samples.push(in_range(n, x)?);
            }
            [q, x] => {
                if !samples.is_empty() {
                    return Err(format!("line {n}: a quantile,value row, but earlier lines are single samples"));
                }
                let q = q.trim().parse::<f64>().map_err(|_| format!("line {n}: \"{}\" is not a quantile", q.trim()))?;
                let x = value(x).ok_or_else(|| not_a_duration(n, x))?;
                if !(0.0..=1.0).contains(&q) {
                    return Err(format!("line {n}: quantile {q} is not from 0 to 1"));
                }
                let x = in_range(n, x)?;
                if let Some(&(pq, px)) = points.last() {
                    if q <= pq {
                        return Err(format!("line {n}: quantiles must increase (after {pq}, got {q})"));
                    }
                    if x < px {
                        return Err(format!(
                            "line {n}: values must not decrease with the quantile (after {px}, got {x})"
                        ));
                    }
                }
                points.push((q, x));
            }
            _ => return Err(format!("line {n}: expected one sample, or a quantile,value row, got \"{line}\"")),
        }
    }
    if !points.is_empty() {
        if points.len() < 2 || points[0].0 != 0.0 || points[points.len() - 1].0 != 1.0 {
            return Err(
                "a quantile table must start at quantile 0 (the smallest value) and end at 1 (the largest)".into()
            );
        }
        return Ok(Empirical::Quantiles(points));
    }
    if samples.is_empty() {
        return Err("no samples: expected one duration in seconds a line, or quantile,value rows".into());
    }
    samples.sort_by(f64::total_cmp);
    Ok(Empirical::Samples(samples))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_headers_comments_and_units() {
        let e = empirical("# observed\nseconds\n0.010\n\n12ms\n0.008\n").unwrap();
        assert_eq!(e, Empirical::Samples(vec![0.008, 0.010, 0.012]));
        let q = empirical("quantile,value\n0,0.001\n0.5,0.01\n1,2s\n").unwrap();
        assert_eq!(q, Empirical::Quantiles(vec![(0.0, 0.001), (0.5, 0.01), (1.0, 2.0)]));
    }

    #[test]
    fn a_first_line_that_is_no_sample_is_an_error_not_a_header() {
        // A number beyond the longest duration is an error, first line or not.
        let e = empirical(
            "36501d
0.01
",
        )
        .unwrap_err();
        assert!(e.contains("line 1") && e.contains("36500"), "{e}");
        let e = empirical(
            "1e300
",
        )
        .unwrap_err();
        assert!(e.contains("line 1") && e.contains("more than 36500 days"), "{e}");
        let e = empirical(
            "0,0
1,1e300
",
        )
        .unwrap_err();
        assert!(e.contains("line 2") && e.contains("more than 36500 days"), "{e}");
        // A field that starts like a number is no header.
        assert!(
            empirical(
                "12x
0.01
"
            )
            .unwrap_err()
            .contains("line 1")
        );
        // Words are.
        assert_eq!(
            empirical(
                "latency
0.5
"
            )
            .unwrap(),
            Empirical::Samples(vec![0.5])
        );
    }

    #[test]
    fn bad_files_say_which_line_and_why() {
        for (text, says) in [
            ("", "no samples"),
            ("0.1\nabc\n", "line 2"),
            ("0.1\n0.5,0.2\n", "earlier lines are single samples"),
            ("0,0.1\n0.3\n", "earlier lines are quantile,value rows"),
            ("0,0.1\n0.5,0.05\n1,1\n", "must not decrease"),
            ("0,0.1\n0.5,0.2\n", "end at 1"),
            ("0.1,0.1\n1,0.2\n", "start at quantile 0"),
            ("0,0.1\n0,0.2\n1,1\n", "must increase"),
            ("-1\n", "at least 0"),
            ("1,2,3\n", "expected one sample"),
            ("0,0.1\n1.5,0.2\n", "not from 0 to 1"),
        ] {
            let err = empirical(text).unwrap_err();
            assert!(err.contains(says), "{text:?}: {err}");
        }
    }
}
