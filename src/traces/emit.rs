//! The experiment file written from the model, with a comment on every
//! inferred value saying what it was read from, and the `empirical` data
//! files beside it.

use super::infer::{ClientModel, Model, sanitize};
use super::policy::{Policy, dur, quantile};
use super::read::Dropped;
use std::fmt::Write as _;
use std::path::Path;

/// A file to write: its path relative to the experiment, and its text.
pub type DataFile = (String, String);

/// Marks files written by `import-traces` (a later import may replace them).
pub const HEADER: &str = "# Written by `retrysim import-traces`";

/// Above this many samples an empirical file holds a quantile table instead.
const MAX_SAMPLES: usize = 4000;

fn q(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn data_file(what: &str, samples: &[f64]) -> String {
    let mut out = format!("{HEADER}\n# {what}\n");
    if samples.len() <= MAX_SAMPLES {
        for s in samples {
            let _ = writeln!(out, "{s:.9}");
        }
    } else {
        out.push_str("quantile,value\n");
        for i in 0..=1000 {
            let p = i as f64 / 1000.0;
            let v = if i == 0 { samples[0] } else { quantile(samples, p) };
            let _ = writeln!(out, "{p},{v:.9}");
        }
    }
    out
}

/// `dist` for `samples` (s): an empirical file when there are enough, a
/// constant otherwise.
fn dist(samples: &[f64], dir: &str, file: &str, what: &str, files: &mut Vec<DataFile>) -> String {
    if samples.len() >= 20 {
        let rel = format!("{dir}/{file}");
        files.push((rel.clone(), data_file(what, samples)));
        format!("{{ dist = \"empirical\", file = {} }}", q(&rel))
    } else if samples.is_empty() {
        "{ dist = \"const\", value = \"0ms\" }".into()
    } else {
        format!("{{ dist = \"const\", value = \"{}\" }}", dur(quantile(samples, 0.5)))
    }
}

fn stats(samples: &[f64]) -> String {
    if samples.is_empty() {
        return "no samples".into();
    }
    format!(
        "{} samples, p50 {}, p99 {}, max {}",
        samples.len(),
        dur(quantile(samples, 0.5)),
        dur(quantile(samples, 0.99)),
        dur(samples[samples.len() - 1])
    )
}

fn policy(out: &mut String, table: &str, p: &Policy) {
    let _ = writeln!(out, "\n[{table}]");
    for e in &p.evidence {
        let _ = writeln!(out, "# {e}");
    }
    let _ = writeln!(out, "max_attempts = {}", p.max_attempts);
    let _ = writeln!(out, "per_try_timeout = \"{}\"   # {}", dur(p.per_try_timeout), p.timeout_evidence);
    if p.max_attempts > 1 && !p.retry_on.is_empty() {
        let list: Vec<String> = p.retry_on.iter().map(|s| q(s)).collect();
        let _ = writeln!(out, "retry_on = [{}]   # the outcomes after which a retry was seen", list.join(", "));
    }
    if p.retry_unknown_without_key {
        let _ = writeln!(
            out,
            "retry_unknown_without_key = true   # outcomes that may have executed were retried on a non-idempotent operation"
        );
    }
    if p.max_attempts > 1 {
        let _ = writeln!(out, "respect_retry_after = false   # Retry-After is not in the traces");
    }
    if let Some(b) = &p.backoff {
        let _ = writeln!(out, "\n[{table}.backoff]\n# {}", b.evidence);
        let _ = writeln!(out, "kind = \"{}\"", b.kind);
        let _ = writeln!(out, "base = \"{}\"", dur(b.base));
        if b.kind == "exponential" {
            let _ = writeln!(out, "multiplier = {:.1}", b.multiplier);
        }
        let _ = writeln!(out, "jitter = \"{}\"", b.jitter);
        if let Some(r) = b.jitter_ratio {
            let _ = writeln!(out, "jitter_ratio = {r}");
        }
    }
}

fn client(out: &mut String, c: &ClientModel) {
    let _ = writeln!(out, "\n[[clients]]\n# {}", c.evidence);
    let _ = writeln!(out, "name = {}", q(&c.name));
    let _ = writeln!(
        out,
        "rate = \"{:.3}/s\"   # {} arrivals; open loop (Poisson) assumed: inter-arrival CV {:.2} (1 for Poisson)",
        c.rate_per_s, c.roots, c.cv
    );
    let _ = writeln!(out, "target = {}", q(&c.target));
    let _ = writeln!(out, "operation = {}", q(&c.operation));
    let _ = writeln!(out, "count = 1");
    policy(out, "clients.policy", &c.policy);
}

/// The experiment text and its data files (relative paths under `dir`).
pub fn experiment(m: &Model, dropped: &Dropped, sources: &str, dir: &str, name: &str) -> (String, Vec<DataFile>) {
    let mut files = Vec::new();
    let mut out = String::new();
    let span = (m.window.1 - m.window.0) as f64 / 1e9;
    let duration = span.round().max(1.0);
    let _ = writeln!(out, "{HEADER} from {sources}.");
    let _ = writeln!(out, "# Every inferred value says what it was read from; edit freely (docs/traces.md).");
    let _ = writeln!(
        out,
        "# Arrivals: root spans from the first to the last, {:.1} s ({} to {}, on the roots' clocks).",
        span,
        utc(m.window.0),
        utc(m.window.1)
    );
    for n in &m.notes {
        let _ = writeln!(out, "# {n}");
    }
    if dropped.reasons.is_empty() {
        let _ = writeln!(out, "# Nothing was dropped.");
    } else {
        let _ = writeln!(out, "# Dropped or set aside:");
        for (why, (n, ex)) in &dropped.reasons {
            let ex = if ex.is_empty() { String::new() } else { format!(" (first: {ex})") };
            let _ = writeln!(out, "#   {n} x {why}{ex}");
        }
    }
    let _ = writeln!(out, "\n[experiment]\nname = {}", q(name));
    let _ = writeln!(out, "duration = \"{}s\"   # the observed window of arrivals", duration);
    let _ = writeln!(out, "replications = 5\nseed = 1");
    // A client edge takes the [network] latency: every call below sets its own.
    let mut client_latency: Vec<f64> = m.clients.iter().flat_map(|c| c.latency.iter().copied()).collect();
    client_latency.sort_by(f64::total_cmp);
    let evidence: Vec<String> =
        m.clients.iter().map(|c| format!("{} -> {}: {}", c.name, c.target, c.latency_evidence)).collect();
    let net = dist(
        &client_latency,
        dir,
        "network.latency.csv",
        "one-way network latency of the client edges (s)",
        &mut files,
    );
    let _ = writeln!(out, "\n[network]\n# the client edges' latency; every call below sets its own");
    for e in evidence {
        let _ = writeln!(out, "# {e}");
    }
    let _ = writeln!(out, "latency = {net}");
    for o in &m.operations {
        let _ =
            writeln!(out, "\n[[operations]]\nname = {}\nidempotent = {}   # {}", q(&o.name), o.idempotent, o.evidence);
    }
    for c in &m.clients {
        client(&mut out, c);
    }
    for s in &m.services {
        let _ = writeln!(out, "\n[[services]]\nname = {}", q(&s.name));
        let _ = writeln!(out, "workers = {}   # {}", s.workers, s.workers_evidence);
        let _ = writeln!(
            out,
            "# service time: self time of its SERVER spans that did work (span time less the time in downstream calls, waits between attempts included): {}",
            stats(&s.service_time)
        );
        let st = dist(
            &s.service_time,
            dir,
            &format!("{}.service_time.csv", sanitize(&s.name)),
            &format!("self time of {} SERVER spans (s)", s.name),
            &mut files,
        );
        let _ = writeln!(out, "service_time = {st}");
        for c in &s.calls {
            let _ = writeln!(out, "\n[[services.calls]]");
            let _ = writeln!(
                out,
                "# {} calls in {} requests of {} in complete traces: {:.3} per request{}",
                c.calls,
                c.requests,
                s.name,
                c.per_request,
                if (c.per_request - 1.0).abs() > 0.05 {
                    " (the model makes one call to a callee on every request)"
                } else {
                    ""
                }
            );
            let _ = writeln!(out, "to = {}\noperation = {}", q(&c.to), q(&c.operation));
            let _ = writeln!(out, "# network latency: {}", c.latency_evidence);
            let lat = dist(
                &c.latency,
                dir,
                &format!("{}-{}.latency.csv", sanitize(&s.name), sanitize(&c.to)),
                &format!("one-way network latency {} -> {} (s)", s.name, c.to),
                &mut files,
            );
            let _ = writeln!(out, "latency = {lat}");
            policy(&mut out, "services.calls.policy", &c.policy);
        }
    }
    for s in &m.services {
        let mut left = 1.0;
        for (status, share, n) in &s.errors {
            let p = (share / left).min(1.0);
            left -= share;
            let _ = writeln!(
                out,
                "\n[[faults]]\n# {n} of {} SERVER spans of {} answered {status} with no failed downstream call",
                s.server_spans, s.name
            );
            let _ =
                writeln!(out, "name = \"{}-{status}\"\nkind = \"error\"\ntarget = {}", sanitize(&s.name), q(&s.name));
            let _ = writeln!(
                out,
                "status = {status}\nprobability = {p:.4}   # observed share {share:.4}{}",
                if (p - share).abs() > 1e-9 { ", of what the faults above let through" } else { "" }
            );
        }
    }
    (out, files)
}

/// An epoch time in nanoseconds as UTC, `2026-12-01T20:12:01.419Z`.
pub fn utc(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let millis = ns.rem_euclid(1_000_000_000) / 1_000_000;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Whether `path` may be written: absent, or written by an earlier import.
pub fn replaceable(path: &Path) -> bool {
    match crate::config::read::read_input(path) {
        Ok(text) => text.starts_with(HEADER),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_times_print_as_utc() {
        assert_eq!(utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc(1_700_000_000_123_000_000), "2023-11-14T22:13:20.123Z");
        assert_eq!(utc(951_782_400_000_000_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn many_samples_become_a_quantile_table() {
        let samples: Vec<f64> = (0..5000).map(|i| i as f64 / 1000.0).collect();
        let text = data_file("x", &samples);
        let rows: Vec<(f64, f64)> = text
            .lines()
            .filter(|l| !l.starts_with('#') && *l != "quantile,value")
            .map(|l| {
                let (q, v) = l.split_once(',').unwrap();
                (q.parse().unwrap(), v.parse().unwrap())
            })
            .collect();
        assert_eq!(rows.len(), 1001);
        assert_eq!(rows[0], (0.0, 0.0));
        assert_eq!(rows[1000], (1.0, 4.999));
        assert!(rows.windows(2).all(|w| w[1].0 > w[0].0 && w[1].1 >= w[0].1));
        assert_eq!(data_file("x", &samples[..10]).lines().count(), 12);
    }
}
