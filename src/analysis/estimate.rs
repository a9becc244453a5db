//! A rough estimate of the work and memory of a run, made before running,
//! so that a run that would not fit in memory is refused with the numbers
//! and what to change (unless `--force`).

use crate::InputError;
use crate::config::{ClientMode, Scenario};
use crate::engine::{NEVER, to_secs_f64};
use crate::model::RunOptions;

/// Estimated size of one replication.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub intents: f64,
    pub events: f64,
    /// Peak bytes of one run while it runs.
    pub bytes: f64,
    /// Bytes its result keeps until the outputs are written (time series,
    /// latency histogram, trace, metrics).
    pub kept: f64,
    /// The same for a lean run (metrics only; see [`RunOptions::lean`]).
    pub kept_lean: f64,
}

/// Bytes of one time-series bin: counters, per-service areas and the bin's
/// latency buckets (4.6 KB).
const BIN_BYTES: f64 = 4_800.0;
/// Bytes of a run's latency histogram (1 µs to 1 day, 3 digits).
const HISTOGRAM_BYTES: f64 = 230e3;

/// Estimates one replication of `s`, tracing a fraction `trace` of intents.
pub fn estimate(s: &Scenario, trace: f64) -> Estimate {
    let window = to_secs_f64(s.duration);
    let mut intents = 0.0;
    let mut peak_in_flight = 0.0;
    let mut instance_bytes = 0.0;
    let mut longest_lifetime: f64 = 0.0;
    for c in &s.clients {
        let p = &c.policy;
        let lifetime = if p.deadline != NEVER {
            to_secs_f64(p.deadline)
        } else if p.per_try_timeout != NEVER {
            to_secs_f64(p.per_try_timeout) * p.max_attempts as f64
        } else {
            60.0
        };
        longest_lifetime = longest_lifetime.max(lifetime);
        let n = match &c.mode {
            ClientMode::Open(schedule) => {
                let mut total = 0.0;
                for (i, &(at, rate)) in schedule.0.iter().enumerate() {
                    let end = schedule.0.get(i + 1).map_or(s.duration, |n| n.0).min(s.duration);
                    total += rate * s.load_scale * to_secs_f64(end.saturating_sub(at));
                    peak_in_flight += rate * s.load_scale * lifetime.min(window);
                }
                total
            }
            ClientMode::Closed { think_time } => {
                peak_in_flight += c.count as f64;
                c.count as f64 * window / think_time.mean_secs().max(1e-3)
            }
            ClientMode::Burst { .. } => {
                peak_in_flight += c.count as f64;
                c.count as f64
            }
        };
        intents += n;
        instance_bytes += c.stateful_instances() as f64 * 160.0;
    }
    let copies = |p: &crate::policy::Policy| p.max_attempts.max(p.hedging.as_ref().map_or(1, |h| h.max_attempts));
    let attempts: f64 = s.clients.iter().map(|c| copies(&c.policy) as f64).fold(1.0, f64::max);
    let hops = 1.0 + s.services.iter().map(|sv| sv.calls.len() as f64).sum::<f64>();
    let events = intents * hops * 5.0 * attempts.min(3.0);
    // The series ends when the last intent does: at most the drain limit,
    // usually within a lifetime (twice, for backoffs) after the window.
    let tail = to_secs_f64(s.drain_limit).min(2.0 * longest_lifetime);
    let bins = (window + tail) / to_secs_f64(s.bin);
    let series = bins.min(1e7) * (BIN_BYTES + 40.0 * s.services.len() as f64);
    let in_flight = peak_in_flight * hops * 400.0;
    let ledgers: f64 = s
        .services
        .iter()
        .filter_map(|sv| sv.ledger)
        .map(|l| (intents / window.max(1e-9)) * to_secs_f64(l.ttl).min(window + to_secs_f64(s.drain_limit)) * 64.0)
        .sum();
    let traced = intents * trace * attempts.min(3.0) * hops * 80.0;
    // Metric maps: the headline metrics, and per edge, service and effect.
    let parts = (s.edges.len() + s.services.len() + s.effect_kinds.len()) as f64;
    let kept_lean = 4e3 + 2e3 * parts;
    Estimate {
        intents,
        events,
        bytes: 8e6 + series + HISTOGRAM_BYTES + in_flight + ledgers + traced + instance_bytes,
        kept: kept_lean + series + HISTOGRAM_BYTES + traced,
        kept_lean,
    }
}

/// Refuses `runs` runs of `variants` (the largest counts) on `jobs`
/// threads when their estimated memory exceeds 80% of what is available:
/// runs in progress hold their peak, finished runs what their results keep.
/// `what` names the command in the message.
pub fn check_fits(
    what: &str,
    variants: &[Scenario],
    options: RunOptions,
    jobs: usize,
    runs: u64,
    force: bool,
) -> Result<(), InputError> {
    let parallel = if jobs == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { jobs } as f64;
    let estimates: Vec<Estimate> = variants.iter().map(|v| estimate(v, options.trace_fraction)).collect();
    let peak = estimates.iter().map(|e| e.bytes).fold(0.0, f64::max);
    let kept = estimates.iter().map(|e| if options.lean { e.kept_lean } else { e.kept }).fold(0.0, f64::max);
    let held = peak * parallel.min(runs as f64) + kept * runs as f64;
    match available_bytes() {
        // A NaN estimate (from absurd inputs) is refused too.
        Some(avail) if (held.is_nan() || held > 0.8 * avail) && !force => Err(InputError::file(
            what,
            format!(
                "estimated {} of memory ({runs} runs: {} per run while it runs, {} per run kept until the outputs are written) but {} is available: use fewer --jobs, replications{}, a coarser experiment.bin{}, or --force",
                human_bytes(held),
                human_bytes(peak),
                human_bytes(kept),
                human_bytes(avail),
                if options.lean { ", sweep points or tune candidates" } else { "" },
                if options.trace_fraction > 0.0 { ", a smaller --trace-sample" } else { "" },
            ),
        )),
        _ => Ok(()),
    }
}

/// `bytes` in kB, MB, GB or TB, or in scientific notation beyond.
pub fn human_bytes(bytes: f64) -> String {
    match bytes {
        b if b < 1e6 => format!("{:.1} kB", b / 1e3),
        b if b < 1e9 => format!("{:.1} MB", b / 1e6),
        b if b < 1e12 => format!("{:.1} GB", b / 1e9),
        b if b < 1e15 => format!("{:.1} TB", b / 1e12),
        b => format!("{b:.1e} bytes"),
    }
}

/// Memory available to this process, from /proc/meminfo (Linux), if known.
pub fn available_bytes() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_in_sensible_units() {
        assert_eq!(human_bytes(4_000.0), "4.0 kB");
        assert_eq!(human_bytes(65e6), "65.0 MB");
        assert_eq!(human_bytes(24.5e9), "24.5 GB");
        assert_eq!(human_bytes(3.12e12), "3.1 TB");
        assert_eq!(human_bytes(3.7e300), "3.7e300 bytes");
    }

    #[test]
    fn grows_with_the_trace_and_the_ledger_not_with_intents_alone() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/quickstart.toml");
        let exp = crate::config::load_experiment(&path, &[]).unwrap();
        let base = estimate(&exp.variants[0], 0.0);
        // 600/s for 56 s and 1400/s for 4 s.
        assert!((base.intents - (600.0 * 56.0 + 1400.0 * 4.0)).abs() < 1.0, "{}", base.intents);
        let traced = estimate(&exp.variants[0], 1.0);
        assert!(traced.bytes > base.bytes + base.intents * 50.0);
        let long = crate::config::load_experiment(&path, &["experiment.duration=600s".into()]).unwrap();
        let l = estimate(&long.variants[0], 0.0);
        assert!(
            l.intents > 9.0 * base.intents && l.bytes < 2.0 * base.bytes + 3e6,
            "memory must not scale with intents"
        );
    }
}
