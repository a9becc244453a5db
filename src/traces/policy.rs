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

fn fit_backoff(waits: &BTreeMap<u32, Vec<f64>>) -> Option<Backoff> {
    let first = waits.get(&1)?;
    let mut w = first.clone();
    w.sort_by(f64::total_cmp);
    let n = w.len() as f64;
    let (lo, hi) = (w[0], w[w.len() - 1]);
    let mean = w.iter().sum::<f64>() / n;
    // The upper bound of a uniform from its sample maximum (unbiased).
    let upper = |hi: f64, n: f64| if n > 1.0 { hi * (n + 1.0) / n } else { hi };
    let (jitter, base, ratio) = if w.len() < 3 || hi - lo < 0.1 * hi.max(1e-9) {
        ("none", quantile(&w, 0.5), None)
    } else if lo < 0.15 * hi && (0.3..=0.7).contains(&(mean / hi)) {
        ("full", upper(hi, n), None)
    } else if (0.4..=0.6).contains(&(lo / hi)) {
        ("equal", upper(hi, n), None)
    } else {
        let r = ((hi - lo) / (hi + lo)).clamp(0.01, 0.99);
        ("proportional", (hi + lo) / 2.0, Some((r * 100.0).round() / 100.0))
    };
    // The backoff limit a sample of waits shows, by the jitter seen.
    let limit = |v: &[f64]| -> f64 {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len() as f64;
        match jitter {
            "full" | "equal" => upper(v[v.len() - 1], n),
            "none" => quantile(&v, 0.5),
            _ => v.iter().sum::<f64>() / n,
        }
    };
    let (kind, multiplier, how) = match waits.get(&2).filter(|v| v.len() >= 5) {
        Some(second) => {
            let (l1, l2) = (limit(first), limit(second));
            let m = (l2 / l1.max(1e-9) * 2.0).round() / 2.0;
            if m <= 1.0 {
                ("constant", 1.0, format!("{} second retries show a limit of {}, as the first", second.len(), dur(l2)))
            } else {
                (
                    "exponential",
                    m,
                    format!("{} second retries show a limit of {}: {m}x the first", second.len(), dur(l2)),
                )
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
            "{} first retries waited {}..{} (mean {}) after the failed attempt: {jitter} jitter; {how}",
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
    let retry_on: Vec<String> = retried.keys().cloned().collect();
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
        let t = (slowest * 2.0).max(1.0);
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
