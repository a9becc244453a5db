//! Sweeps: a grid of override values (`--param KEY=SPEC`), every point ×
//! variant × replication, shards of the grid, and knees.

use crate::config::units::{parse_duration, parse_rate};
use crate::error::{InputError, InputResult};

/// One swept parameter: the override key and its values, as written on
/// the command line (each is parsed as an override value later).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Param {
    pub key: String,
    pub values: Vec<String>,
}

/// Parses `KEY=SPEC`: a list `a,b,c` (split on top-level commas) or a range
/// `LO..HI:N` of N evenly spaced points (numbers, rates like `100/s` or
/// durations like `10ms`).
pub fn parse_param(text: &str) -> InputResult<Param> {
    let err = |m: String| InputError::file(format!("--param {text}"), m);
    let (key, spec) = text
        .split_once('=')
        .ok_or_else(|| err("expected KEY=SPEC, such as experiment.load_scale=0.5..1.5:11".into()))?;
    let (key, spec) = (key.trim(), spec.trim());
    if key.is_empty() || spec.is_empty() {
        return Err(err("expected KEY=SPEC with a non-empty key and spec".into()));
    }
    let values = if let Some((range, n)) = spec.rsplit_once(':')
        && let Some((lo, hi)) = range.split_once("..")
    {
        let n: usize = n
            .trim()
            .parse()
            .map_err(|_| err(format!("the number of points after ':' must be an integer, got \"{n}\"")))?;
        if !(2..=10_000).contains(&n) {
            return Err(err(format!("a range needs 2 to 10000 points, got {n}")));
        }
        range_values(lo.trim(), hi.trim(), n).map_err(err)?
    } else if let Some((lo, hi)) = spec.split_once("..")
        && !spec.contains(',')
        && range_values(lo.trim(), hi.trim(), 2).is_ok()
    {
        // `1..6` reads as a range that forgot its number of points, not as one value.
        return Err(err(format!(
            "a range needs its number of points: LO..HI:N, such as {}..{}:6",
            lo.trim(),
            hi.trim()
        )));
    } else {
        split_top_level(spec)
    };
    if values.iter().any(|v| v.is_empty()) {
        return Err(err("empty value in the list".into()));
    }
    Ok(Param { key: key.to_string(), values })
}

/// Parses every `--param`, refusing a key given twice (a grid has one axis per key).
pub fn parse_params(texts: &[String]) -> InputResult<Vec<Param>> {
    let params: Vec<Param> = texts.iter().map(|p| parse_param(p)).collect::<Result<_, _>>()?;
    for (i, p) in params.iter().enumerate() {
        if params[..i].iter().any(|q| q.key == p.key) {
            return Err(InputError::file(
                format!("--param {}", texts[i]),
                format!("{} is swept twice: give each key once, with all its values (KEY=a,b,c)", p.key),
            ));
        }
    }
    Ok(params)
}

/// Splits on commas that are not inside brackets, braces or quotes.
fn split_top_level(spec: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth, mut quote) = (Vec::new(), String::new(), 0i32, false);
    for ch in spec.chars() {
        match ch {
            '"' => quote = !quote,
            '[' | '{' if !quote => depth += 1,
            ']' | '}' if !quote => depth -= 1,
            ',' if !quote && depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    out.push(cur.trim().to_string());
    out
}

/// Formats a number without trailing noise.
fn number(x: f64) -> String {
    let r = (x * 1e9).round() / 1e9;
    if r.fract() == 0.0 && r.abs() < 1e15 { format!("{}", r as i64) } else { format!("{r}") }
}

fn range_values(lo: &str, hi: &str, n: usize) -> Result<Vec<String>, String> {
    let steps = |a: f64, b: f64| (0..n).map(move |i| a + (b - a) * i as f64 / (n - 1) as f64);
    if let (Ok(a), Ok(b)) = (lo.parse::<f64>(), hi.parse::<f64>()) {
        return Ok(steps(a, b).map(number).collect());
    }
    if lo.contains('/') {
        let (a, b) = (parse_rate(lo)?, parse_rate(hi)?);
        return Ok(steps(a, b).map(|x| format!("{}/s", number(x))).collect());
    }
    let (a, b) = (parse_duration(lo)?, parse_duration(hi)?);
    Ok(steps(a as f64, b as f64).map(|ns| format!("{}ms", number(ns / 1e6))).collect())
}

/// The most points a sweep's grid may have.
pub const MAX_GRID_POINTS: u64 = 1_000_000;

/// The number of points of the grid of `params`, without building it.
pub fn grid_size(params: &[Param]) -> u64 {
    params.iter().fold(1u64, |n, p| n.saturating_mul(p.values.len() as u64))
}

/// The number of the first `points` grid indices that fall in `shard`.
pub fn shard_size(points: u64, shard: Option<(usize, usize)>) -> u64 {
    match shard {
        None => points,
        Some((k, n)) => {
            let (k, n) = (k as u64, n as u64);
            points / n + u64::from(points % n >= k)
        }
    }
}

/// The grid: every combination of the params' values, the first param
/// varying slowest. Each point is a list of `KEY=VALUE` overrides.
pub fn grid(params: &[Param]) -> Vec<Vec<(String, String)>> {
    let mut points: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for p in params {
        points = points
            .into_iter()
            .flat_map(|point| {
                p.values.iter().map(move |v| {
                    let mut next = point.clone();
                    next.push((p.key.clone(), v.clone()));
                    next
                })
            })
            .collect();
    }
    points
}

/// `K/N`: shard K (1-based) of N.
pub fn parse_shard(text: &str) -> InputResult<(usize, usize)> {
    let err = || InputError::file(format!("--shard {text}"), "expected K/N with 1 <= K <= N, such as 2/8");
    let (k, n) = text.split_once('/').ok_or_else(err)?;
    let (k, n): (usize, usize) = (k.trim().parse().map_err(|_| err())?, n.trim().parse().map_err(|_| err())?);
    if n == 0 || k == 0 || k > n {
        return Err(err());
    }
    Ok((k, n))
}

/// Whether grid point `index` belongs to shard `k` of `n`.
pub fn in_shard(index: usize, shard: Option<(usize, usize)>) -> bool {
    shard.is_none_or(|(k, n)| index % n == k - 1)
}

/// A knee condition such as `success_rate>=0.99`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Knee {
    pub metric: String,
    pub op: String,
    pub threshold: f64,
}

impl Knee {
    /// Parses `METRIC OP NUMBER` with OP one of `>=`, `<=`, `>`, `<`.
    pub fn parse(text: &str) -> InputResult<Knee> {
        let err = |m: &str| InputError::file(format!("--knee {text}"), m.to_string());
        for op in [">=", "<=", ">", "<"] {
            if let Some((m, t)) = text.split_once(op) {
                let threshold: f64 = t
                    .trim()
                    .parse()
                    .ok()
                    .filter(|x: &f64| x.is_finite())
                    .ok_or_else(|| err("the threshold must be a finite number, such as 0.99"))?;
                let metric = m.trim().to_string();
                if !crate::metrics::METRICS.contains(&metric.as_str()) {
                    return Err(err(&format!(
                        "unknown metric \"{metric}\"; allowed: {}",
                        crate::metrics::METRICS.join(", ")
                    )));
                }
                return Ok(Knee { metric, op: op.to_string(), threshold });
            }
        }
        Err(err("expected METRIC>=NUMBER (or <=, >, <), such as success_rate>=0.99"))
    }

    /// Whether a value meets the condition.
    pub fn holds(&self, x: f64) -> bool {
        match self.op.as_str() {
            ">=" => x >= self.threshold,
            "<=" => x <= self.threshold,
            ">" => x > self.threshold,
            _ => x < self.threshold,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        assert_eq!(parse_param("a=1,2,3").unwrap().values, vec!["1", "2", "3"]);
        assert_eq!(parse_param("a=0.5..1.5:3").unwrap().values, vec!["0.5", "1", "1.5"]);
        assert_eq!(parse_param("r=100/s..300/s:3").unwrap().values, vec!["100/s", "200/s", "300/s"]);
        assert_eq!(parse_param("d=10ms..1s:3").unwrap().values, vec!["10ms", "505ms", "1000ms"]);
        assert_eq!(parse_param("p=[1,2],{a=1,b=2}").unwrap().values, vec!["[1,2]", "{a=1,b=2}"]);
        assert!(parse_param("a=1..2:1").is_err());
        assert!(parse_params(&["a=1,2".into(), "a=3".into()]).unwrap_err().message.contains("twice"));
        assert_eq!(parse_params(&["a=1,2".into(), "b=3".into()]).unwrap().len(), 2);
        for nan in ["success_rate>=nan", "success_rate<inf", "success_rate>-inf"] {
            assert!(Knee::parse(nan).unwrap_err().message.contains("finite"), "{nan}");
        }
        assert!(parse_param("novalue").is_err());
    }

    #[test]
    fn grids_shards_and_knees() {
        let g = grid(&[parse_param("a=1,2").unwrap(), parse_param("b=x,y,z").unwrap()]);
        assert_eq!(g.len(), 6);
        assert_eq!(g[1], vec![("a".to_string(), "1".to_string()), ("b".to_string(), "y".to_string())]);
        let shard2: Vec<usize> = (0..6).filter(|&i| in_shard(i, Some((2, 3)))).collect();
        assert_eq!(shard2, vec![1, 4]);
        assert_eq!(grid_size(&[parse_param("a=1,2").unwrap(), parse_param("b=x,y,z").unwrap()]), 6);
        for points in 0..20u64 {
            for n in 1..6usize {
                for k in 1..=n {
                    let counted = (0..points as usize).filter(|&i| in_shard(i, Some((k, n)))).count() as u64;
                    assert_eq!(shard_size(points, Some((k, n))), counted, "{points} points, shard {k}/{n}");
                }
            }
            assert_eq!(shard_size(points, None), points);
        }
        assert!(parse_shard("0/3").is_err() && parse_shard("4/3").is_err());
        let k = Knee::parse("success_rate>=0.99").unwrap();
        assert!(k.holds(0.99) && !k.holds(0.98));
        assert!(Knee::parse("speed>=1").is_err());
    }
}
