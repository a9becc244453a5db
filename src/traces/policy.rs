//! The retry behaviour of one edge, read from its calls: attempts per call,
//! which outcomes were retried, the per-try timeout and the backoff.

use super::graph::Call;
use super::span::Answer;
use std::collections::BTreeMap;

/// The backoff seen between attempts.
#[derive(Debug, Clone, PartialEq)]
pub struct Backoff {
    /// `constant` or `exponential`.
    pub kind: &'static str,
    /// Seconds.
    pub base: f64,
    pub multiplier: f64,
    /// `none`, `full`, `equal` or `proportional`.
    pub jitter: &'static str,
    pub jitter_ratio: Option<f64>,
    /// What it was read from.
    pub evidence: String,
}

/// The policy an edge behaved as.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub max_attempts: u32,
    /// Seconds.
    pub per_try_timeout: f64,
    /// Where the timeout came from.
    pub timeout_evidence: String,
    pub retry_on: Vec<String>,
    pub backoff: Option<Backoff>,
    /// The caller retried outcomes that may have executed (timeouts, 500,
    /// 502, 504) of a non-idempotent operation.
    pub retry_unknown_without_key: bool,
    /// One line per fact used.
    pub evidence: Vec<String>,
}

fn secs(ns: i64) -> f64 {
    ns as f64 / 1e9
}

/// The `q` quantile of sorted `v` (nearest rank).
pub fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

/// The least-squares line `(intercept, slope)` of the quantile function of
/// sorted `v` against q, over the quantiles from `lo` to `hi` in steps of 2.5%.
fn quantile_line(v: &[f64], lo: f64, hi: f64) -> (f64, f64) {
    let steps = ((hi - lo) / 0.025).round() as usize;
    let points: Vec<(f64, f64)> = (0..=steps)
        .map(|k| {
            let q = lo + 0.025 * k as f64;
            (q, quantile(v, q))
        })
        .collect();
    let m = points.len() as f64;
    let (mq, mv) = (points.iter().map(|p| p.0).sum::<f64>() / m, points.iter().map(|p| p.1).sum::<f64>() / m);
    let sxy: f64 = points.iter().map(|(q, x)| (q - mq) * (x - mv)).sum();
    let sxx: f64 = points.iter().map(|(q, _)| (q - mq).powi(2)).sum();
    let slope = sxy / sxx;
    (mv - slope * mq, slope)
}

/// Rounds seconds to a duration string with a unit (`"120ms"`, `"2.5s"`).
pub fn dur(s: f64) -> String {
    if s >= 1.0 {
        let v = (s * 100.0).round() / 100.0;
        format!("{v}s")
    } else if s >= 0.01 {
        format!("{}ms", (s * 1e3).round())
    } else if s >= 1e-4 {
        format!("{}ms", (s * 1e4).round() / 10.0)
    } else {
        format!("{}us", (s * 1e6).round())
    }
}

/// Mean and standard error of `v`.
fn mean_se(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 { v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (m, (var / n).sqrt())
}

/// From this many first waits on, the jitter is read from their quantile line.
const LINE_MIN_WAITS: usize = 20;

/// The jitter, base and ratio of at least [`LINE_MIN_WAITS`] sorted first
/// waits, from their quantile line `(a, s)` ([`quantile_line`] over the
/// 5%..80% quantiles).
///
/// Jittered waits are uniform, so their quantile function is a line
/// `Q(q) = a + s·q`: full jitter U(0, L)
/// has a = 0 and s = L, equal jitter U(L/2, L) a = s = L/2, proportional
/// jitter U(c(1 − r), c(1 + r)) a = c(1 − r) and s = 2cr. A busy host only
/// adds time: an overhead on every wait raises `a`, not `s`, and a share ε
/// of waits stretched past the top raises `s` by about 1/(1 − ε) (8% at
/// ε = 7%), where a bound read from the 95% quantile would pass the real
/// one once more than 5% are late.
fn jitter_from_line(w: &[f64], (a, s): (f64, f64)) -> (&'static str, f64, Option<f64>) {
    let median = quantile(w, 0.5);
    if s <= 0.1 * median.max(1e-9) {
        // The waits hardly spread (less than ±5% of the median over the middle).
        return ("none", median, None);
    }
    let k = a.max(0.0) / s;
    if k < 0.2 {
        ("full", s, None)
    } else if (0.75..=1.33).contains(&k) {
        ("equal", 2.0 * s, None)
    } else {
        let c = a + s / 2.0;
        let r = (s / (2.0 * c)).clamp(0.01, 0.99);
        ("proportional", c, Some((r * 100.0).round() / 100.0))
    }
}

/// [`jitter_from_line`] for fewer than [`LINE_MIN_WAITS`] sorted waits: from the lowest and
/// the highest, the top scaled by n/(n + 1) (the expected top of n uniform
/// draws).
fn jitter_from_bounds(w: &[f64]) -> (&'static str, f64, Option<f64>) {
    let n = w.len() as f64;
    let (lo, hi) = (w[0], w[w.len() - 1]);
    let q = n / (n + 1.0);
    let mean = w.iter().sum::<f64>() / n;
    if w.len() < 3 || hi - lo < 0.1 * hi.max(1e-9) {
        ("none", quantile(w, 0.5), None)
    } else if lo < 0.15 * hi && (0.3..=0.7).contains(&(mean / hi)) {
        ("full", hi / q, None)
    } else if (0.4..=0.6).contains(&(lo / hi)) {
        ("equal", hi * 2.0 / (1.0 + q), None)
    } else {
        let r = ((hi - lo) / (hi + lo)).clamp(0.01, 0.99);
        ("proportional", (hi + lo) / 2.0, Some((r * 100.0).round() / 100.0))
    }
}

fn fit_backoff(waits: &BTreeMap<u32, Vec<f64>>) -> Option<Backoff> {
    let first = waits.get(&1)?;
    let mut w = first.clone();
    w.sort_by(f64::total_cmp);
    let (lo, hi) = (w[0], w[w.len() - 1]);
    let mean = w.iter().sum::<f64>() / w.len() as f64;
    let line = (w.len() >= LINE_MIN_WAITS).then(|| quantile_line(&w, 0.05, 0.80));
    let (jitter, base, ratio) = match line {
        Some(line) => jitter_from_line(&w, line),
        None => jitter_from_bounds(&w),
    };
    let read = line.map_or(String::new(), |(a, s)| {
        format!(", their 5%..80% quantiles on a line from {} rising {} over the range", dur(a), dur(s))
    });
    // The growth: the ratio of the mean second-retry wait to the mean first
    // one (the jitter scales both alike), with its 95% interval. A usual
    // value inside the interval (2, else 1) is taken; otherwise the ratio
    // to the nearest 0.5.
    let (kind, multiplier, how) = match waits.get(&2).filter(|v| v.len() >= 5) {
        Some(second) => {
            let ((m1, se1), (m2, se2)) = (mean_se(first), mean_se(second));
            let r = m2 / m1.max(1e-12);
            let rse = ((se1 / m1.max(1e-12)).powi(2) + (se2 / m2.max(1e-12)).powi(2)).sqrt();
            let (rlo, rhi) = (r * (1.0 - 1.96 * rse), r * (1.0 + 1.96 * rse));
            let m = if (rlo..=rhi).contains(&2.0) {
                2.0
            } else if (rlo..=rhi).contains(&1.0) {
                1.0
            } else {
                ((r * 2.0).round() / 2.0).max(1.0)
            };
            let seen = format!(
                "{} second retries wait {:.2}x as long as first ones on average [{:.2}, {:.2}]",
                second.len(),
                r,
                rlo.max(0.0),
                rhi
            );
            if m <= 1.0 {
                ("constant", 1.0, format!("{seen}: constant"))
            } else {
                ("exponential", m, format!("{seen}: multiplier {m}"))
            }
        }
        _ => ("exponential", 2.0, "too few second retries to see the growth: multiplier 2 assumed".to_string()),
    };
    Some(Backoff {
        kind,
        base,
        multiplier,
        jitter,
        jitter_ratio: ratio,
        evidence: format!(
            "{} first retries waited {}..{} (mean {}) after the failed attempt{read}: {jitter} jitter; {how}",
            w.len(),
            dur(lo),
            dur(hi),
            dur(mean)
        ),
    })
}

/// Whether an outcome may have executed (DESIGN §4: timeout, reset, 500, 502, 504).
fn unknown(a: &Answer) -> bool {
    matches!(a, Answer::Timeout | Answer::Error | Answer::Status(500 | 502 | 504))
}

/// The policy `calls` behaved as. `idempotent`: the operation is.
pub fn infer(calls: &[&Call], idempotent: bool) -> Policy {
    let mut evidence = Vec::new();
    let max_attempts = calls.iter().map(|c| c.attempts.len() as u32).max().unwrap_or(1);
    let mut retried: BTreeMap<String, u64> = BTreeMap::new();
    let mut final_fail: BTreeMap<(String, bool), u64> = BTreeMap::new();
    let mut waits: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    let mut timeouts: Vec<f64> = Vec::new();
    let mut slowest = 0.0f64;
    let mut unknown_retried = false;
    let redirects: u32 = calls.iter().map(|c| c.redirects).sum();
    for c in calls {
        for (k, a) in c.attempts.iter().enumerate() {
            slowest = slowest.max(secs(a.end - a.start));
            if a.answer == Answer::Timeout {
                timeouts.push(secs(a.end - a.start));
            }
            if k + 1 < c.attempts.len() {
                *retried.entry(a.answer.retry_label()).or_insert(0) += 1;
                unknown_retried |= unknown(&a.answer);
                let next = &c.attempts[k + 1];
                waits.entry(k as u32 + 1).or_default().push(secs((next.start - a.end).max(0)));
            }
        }
        let last = c.outcome();
        if !last.is_ok() {
            *final_fail.entry((last.retry_label(), c.attempts.len() as u32 == max_attempts)).or_insert(0) += 1;
        }
    }
    let n_calls = calls.len();
    let total: usize = calls.iter().map(|c| c.attempts.len()).sum();
    evidence.push(format!(
        "{n_calls} calls, {total} attempts ({:.3} per call), at most {max_attempts} in one call",
        total as f64 / n_calls.max(1) as f64
    ));
    if redirects > 0 {
        evidence.push(format!(
            "{redirects} requests after a 3xx answer left out: http.request.resend_count counts redirects as well as retries"
        ));
    }
    // An attempt answered ok and sent again is no retry a policy can ask
    // for (a client resending after a success it did not read, or a
    // duplicate span): said, not written into `retry_on`.
    let retry_on: Vec<String> = retried.keys().filter(|k| k.as_str() != "ok").cloned().collect();
    if let Some(n) = retried.get("ok") {
        evidence.push(format!(
            "{n} attempts answered ok were followed by another attempt of the same call: no retry_on entry can express that, so none is written"
        ));
    }
    if !retried.is_empty() {
        let list: Vec<String> = retried.iter().map(|(k, n)| format!("{k} ({n})")).collect();
        evidence.push(format!("retried after: {}", list.join(", ")));
    }
    for ((label, exhausted), n) in &final_fail {
        let why = if *exhausted {
            "after the last attempt"
        } else if retried.contains_key(label) {
            "with attempts left though the outcome is retried elsewhere (a deadline or budget the traces do not show)"
        } else {
            "with attempts left: not retried"
        };
        evidence.push(format!("{n} calls ended {label} {why}"));
    }
    timeouts.sort_by(f64::total_cmp);
    let (per_try_timeout, timeout_evidence) = if timeouts.is_empty() {
        // At most the longest duration a policy holds (36500 days).
        let t = (slowest * 2.0).clamp(1.0, 36_500.0 * 86_400.0);
        let t = (t * 10.0).ceil() / 10.0;
        (
            t,
            format!(
                "no attempt timed out: set above the slowest attempt ({}); the real timeout is not in the traces",
                dur(slowest)
            ),
        )
    } else {
        let med = quantile(&timeouts, 0.5);
        let t = (med * 1e3).round() / 1e3;
        (
            t,
            format!(
                "{} attempts timed out after {} (median; {}..{})",
                timeouts.len(),
                dur(med),
                dur(timeouts[0]),
                dur(timeouts[timeouts.len() - 1])
            ),
        )
    };
    let backoff = fit_backoff(&waits);
    Policy {
        max_attempts,
        per_try_timeout,
        timeout_evidence,
        retry_on,
        backoff,
        retry_unknown_without_key: unknown_retried && !idempotent,
        evidence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_jitter_is_read_through_a_few_late_timers() {
        // 200 first waits spread evenly over U(0, 20 ms), 6 of them 30 ms late;
        // 10 second retries over U(0, 40 ms).
        let mut first: Vec<f64> = (0..200).map(|i| (i as f64 + 0.5) / 200.0 * 0.020).collect();
        for w in first.iter_mut().step_by(33) {
            *w += 0.030;
        }
        let second: Vec<f64> = (0..10).map(|i| (i as f64 + 0.5) / 10.0 * 0.040).collect();
        let b = fit_backoff(&BTreeMap::from([(1, first), (2, second)])).unwrap();
        assert_eq!((b.kind, b.jitter), ("exponential", "full"));
        assert!((b.base - 0.020).abs() < 0.0015, "{}", b.base);
        assert_eq!(b.multiplier, 2.0, "{}", b.evidence);
        // Constant waits: no jitter, the median; equal jitter: U(L/2, L).
        let b = fit_backoff(&BTreeMap::from([(1, vec![0.03; 50])])).unwrap();
        assert_eq!((b.jitter, b.base), ("none", 0.03));
        let equal: Vec<f64> = (0..100).map(|i| 0.010 + (i as f64 + 0.5) / 100.0 * 0.010).collect();
        let b = fit_backoff(&BTreeMap::from([(1, equal)])).unwrap();
        assert_eq!(b.jitter, "equal");
        assert!((b.base - 0.020).abs() < 0.0005, "{}", b.base);
    }

    #[test]
    fn full_jitter_is_read_through_many_late_timers_and_an_overhead() {
        // A busy host: every wait 2 ms late and one in seven (14.5%) 25 ms
        // later still. The 95% quantile is then 39.6 ms, past the bound; the
        // slope of the quantile line is 20 ms / (1 − 0.145) = 23.4 ms.
        let mut first: Vec<f64> = (0..200).map(|i| 0.002 + (i as f64 + 0.5) / 200.0 * 0.020).collect();
        for w in first.iter_mut().step_by(7) {
            *w += 0.025;
        }
        let b = fit_backoff(&BTreeMap::from([(1, first)])).unwrap();
        assert_eq!(b.jitter, "full", "{}", b.evidence);
        assert!((0.020..0.0245).contains(&b.base), "{}", b.base);
        // An overhead alone (every wait 3 ms late, the shortest 3 ms): still
        // full jitter, and the base is not moved.
        let late: Vec<f64> = (0..150).map(|i| 0.003 + (i as f64 + 0.5) / 150.0 * 0.020).collect();
        let b = fit_backoff(&BTreeMap::from([(1, late)])).unwrap();
        assert_eq!(b.jitter, "full", "{}", b.evidence);
        assert!((b.base - 0.020).abs() < 0.0005, "{}", b.base);
        // Proportional jitter, 20 ms ± 20%: U(16 ms, 24 ms).
        let prop: Vec<f64> = (0..100).map(|i| 0.016 + (i as f64 + 0.5) / 100.0 * 0.008).collect();
        let b = fit_backoff(&BTreeMap::from([(1, prop)])).unwrap();
        assert_eq!((b.jitter, b.jitter_ratio), ("proportional", Some(0.2)), "{}", b.evidence);
        assert!((b.base - 0.020).abs() < 0.0003, "{}", b.base);
    }
}
