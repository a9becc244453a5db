//! A rough estimate of the work and memory of a run, made before running,
//! so that a run that would not fit in memory is refused with the numbers
//! and what to change (unless `--force`).

use crate::InputError;
use crate::config::{ClientMode, Scenario};
use crate::engine::{NEVER, to_secs_f64};
use crate::model::RunOptions;

/// Events per attempt and hop, fitted to the shipped experiments: about
/// five (arrival or send, reaching the service, end of work, answer,
/// timeout), a little less because not every attempt has all five.
const EVENTS_PER_HOP: f64 = 4.8;

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
        instance_bytes += c.stateful_instances() as f64 * crate::model::bytes_per_instance(c) as f64;
    }
    let copies = |p: &crate::policy::Policy| p.max_attempts.max(p.hedging.as_ref().map_or(1, |h| h.max_attempts));
    let attempts: f64 = s.clients.iter().map(|c| copies(&c.policy) as f64).fold(1.0, f64::max);
    let hops = 1.0 + s.services.iter().map(|sv| sv.calls.len() as f64).sum::<f64>();
    // About five events per attempt and hop (arrival or send, reaching the
    // service, end of work, answer, timeout: EVENTS_PER_HOP); retries add up
    // to half again per allowed attempt (the shipped experiments: 0.2 to 4.6
    // times the events measured, storms included, median about 1.55).
    // The series ends when the last intent does: at most the drain limit,
    // usually within a lifetime (twice, for backoffs) after the window.
    let tail = to_secs_f64(s.drain_limit).min(2.0 * longest_lifetime);
    // Outlier detection sweeps every `interval` for as long as the run lasts.
    let sweeps: f64 = s
        .services
        .iter()
        .filter_map(|sv| sv.hosts.outlier.as_ref())
        .map(|o| (window + tail) / to_secs_f64(o.interval))
        .sum();
    let events = intents * hops * EVENTS_PER_HOP * (1.0 + (attempts.min(3.0) - 1.0) / 2.0) + sweeps;
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

/// Events one core simulates per second, for the time estimate: the
/// middle of what the shipped experiments measure on one thread (7 to 17
/// million; docs/performance.md).
pub const EVENTS_PER_CPU_SECOND: f64 = 10e6;

/// The most CPU time a command may be estimated to take without `--force`.
pub const CPU_SECONDS_LIMIT: f64 = 3600.0;

/// Beyond these, an estimate is absurd: no `--force` makes such a command
/// finish (an exabyte of memory, a century of CPU time).
const ABSURD_BYTES: f64 = 1e18;
const ABSURD_CPU_SECONDS: f64 = 100.0 * 365.0 * 86400.0;

/// What a simulating command is about to run, for the estimate that every
/// such command (`run`, `sweep`, `tune`, `audit`) makes before it starts.
#[derive(Debug, Clone)]
pub struct Workload<'a> {
    /// The command, named in the message.
    pub command: &'a str,
    /// Each scenario with the number of runs of it (or of scenarios of its
    /// size, such as a sweep's points).
    pub runs: Vec<(&'a Scenario, u64)>,
    /// The options of every run.
    pub options: RunOptions,
    /// Parallel runs (0 = one per core).
    pub jobs: usize,
    /// Whether finished runs keep their results until the outputs are
    /// written (false when each result is judged and dropped, as in audit).
    pub keeps_results: bool,
    /// Memory the command holds besides its runs (for example a list of
    /// candidates), in bytes.
    pub extra_bytes: f64,
    /// What to turn down for less memory, named in the message before
    /// experiment.bin.
    pub memory_knobs: &'a str,
    /// What to turn down for less CPU time, named before experiment.duration
    /// and experiment.load_scale.
    pub time_knobs: &'a str,
}

/// The estimate of a [`Workload`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Forecast {
    /// Runs in all.
    pub runs: u64,
    /// Peak bytes of the largest run while it runs.
    pub peak: f64,
    /// Bytes the largest finished run keeps.
    pub kept: f64,
    /// Bytes held at the worst moment: runs in progress, finished results, extras.
    pub bytes: f64,
    /// CPU seconds of all runs.
    pub cpu_seconds: f64,
    /// Parallel runs.
    pub parallel: f64,
}

/// The larger of two estimates; NaN wins, so a NaN is never dropped.
fn worst(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) }
}

impl Workload<'_> {
    /// Estimates memory and CPU time.
    pub fn forecast(&self) -> Forecast {
        let parallel =
            if self.jobs == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { self.jobs } as f64;
        let runs: u64 = self.runs.iter().map(|&(_, n)| n).fold(0u64, u64::saturating_add);
        let (mut peak, mut kept, mut cpu_seconds) = (0.0, 0.0, 0.0);
        for &(s, n) in &self.runs {
            let e = estimate(s, self.options.trace_fraction);
            peak = worst(peak, e.bytes);
            let k = if !self.keeps_results {
                0.0
            } else if self.options.lean {
                e.kept_lean
            } else {
                e.kept
            };
            kept = worst(kept, k);
            cpu_seconds += n as f64 * e.events / EVENTS_PER_CPU_SECOND;
        }
        let bytes = peak * parallel.min(runs as f64) + kept * runs as f64 + self.extra_bytes;
        Forecast { runs, peak, kept, bytes, cpu_seconds, parallel }
    }

    /// Refuses the workload when its estimate is not a finite, sane number
    /// (always), or when it needs more than 80% of the available memory
    /// (estimates above [`UNCHECKED_BYTES`]) or
    /// more than an hour of CPU time (unless `force`). Returns the estimate.
    pub fn check(&self, force: bool) -> Result<Forecast, InputError> {
        let f = self.forecast();
        let absurd = !(f.bytes.is_finite() && f.cpu_seconds.is_finite())
            || f.bytes > ABSURD_BYTES
            || f.cpu_seconds > ABSURD_CPU_SECONDS;
        if absurd {
            return Err(InputError::file(
                self.command,
                format!(
                    "its estimate is beyond any machine (memory: {}, CPU time: {}, for {} runs): look for a rate, experiment.load_scale, experiment.duration or count far too large; --force does not run it",
                    human_bytes(f.bytes),
                    human_duration(f.cpu_seconds),
                    f.runs
                ),
            ));
        }
        if force {
            return Ok(f);
        }
        let mut problems = Vec::new();
        // A small estimate is not weighed against the free memory: reading
        // /proc/meminfo is about 1% of a small run's CPU time.
        if f.bytes > UNCHECKED_BYTES
            && let Some(avail) = available_bytes()
            && f.bytes > 0.8 * avail
        {
            let extra = if self.extra_bytes > 0.0 {
                format!(", {} besides the runs", human_bytes(self.extra_bytes))
            } else {
                String::new()
            };
            let kept = if self.keeps_results {
                format!(", {} per run kept until the outputs are written", human_bytes(f.kept))
            } else {
                String::new()
            };
            problems.push(format!(
                "estimated {} of memory ({} runs: {} per run while it runs{kept}{extra}) but {} is available: use {}, a coarser experiment.bin",
                human_bytes(f.bytes),
                f.runs,
                human_bytes(f.peak),
                human_bytes(avail),
                self.memory_knobs,
            ));
        }
        if f.cpu_seconds > CPU_SECONDS_LIMIT {
            problems.push(format!(
                "estimated {} of CPU time ({} runs at about {:.0} M events/s per core; about {} with {} runs at a time), more than the {} allowed without --force: use {}, a shorter experiment.duration or a smaller experiment.load_scale",
                human_duration(f.cpu_seconds),
                f.runs,
                EVENTS_PER_CPU_SECOND / 1e6,
                human_duration(f.cpu_seconds / f.parallel.min(f.runs.max(1) as f64)),
                f.parallel,
                human_duration(CPU_SECONDS_LIMIT),
                self.time_knobs,
            ));
        }
        if problems.is_empty() {
            Ok(f)
        } else {
            Err(InputError::file(self.command, format!("{}; or --force", problems.join("; and "))))
        }
    }
}

/// Refuses `runs` runs of `variants` (spread evenly over them) on `jobs`
/// threads when their estimate is absurd, or exceeds 80% of the available
/// memory or an hour of CPU time without `force` (see [`Workload::check`]).
/// `what` names the command in the message; the knobs named are tune's.
pub fn check_fits(
    what: &str,
    variants: &[Scenario],
    options: RunOptions,
    jobs: usize,
    runs: u64,
    force: bool,
) -> Result<(), InputError> {
    let n = variants.len().max(1) as u64;
    let each: Vec<(&Scenario, u64)> =
        variants.iter().enumerate().map(|(i, v)| (v, runs / n + u64::from((i as u64) < runs % n))).collect();
    let workload = Workload {
        command: what,
        runs: each,
        options,
        jobs,
        keeps_results: true,
        extra_bytes: 0.0,
        memory_knobs: "fewer --jobs, replications or tune candidates (--candidates)",
        time_knobs: "fewer replications or tune candidates (--candidates)",
    };
    workload.check(force).map(|_| ())
}

/// `seconds` in s, min, h or days.
pub fn human_duration(seconds: f64) -> String {
    match seconds {
        s if s.is_nan() => "an unknown amount".into(),
        s if s < 120.0 => format!("{s:.0} s"),
        s if s < 7200.0 => format!("{:.0} min", s / 60.0),
        s if s < 172_800.0 => format!("{:.1} h", s / 3600.0),
        s if s < 1e12 => format!("{:.0} days", s / 86400.0),
        s if s.is_finite() => format!("{s:.1e} s"),
        _ => "infinite".into(),
    }
}

/// `bytes` in kB, MB, GB or TB, or in scientific notation beyond.
pub fn human_bytes(bytes: f64) -> String {
    match bytes {
        b if b.is_nan() => "an unknown amount".into(),
        b if b.is_infinite() => "infinite".into(),
        b if b < 1e6 => format!("{:.1} kB", b / 1e3),
        b if b < 1e9 => format!("{:.1} MB", b / 1e6),
        b if b < 1e12 => format!("{:.1} GB", b / 1e9),
        b if b < 1e15 => format!("{:.1} TB", b / 1e12),
        b => format!("{b:.1e} bytes"),
    }
}

/// Estimates up to this many bytes run without a look at the available
/// memory (any machine that runs retrysim has this much to spare).
const UNCHECKED_BYTES: f64 = 64.0 * 1024.0 * 1024.0;

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

    fn workload(s: &Scenario, runs: u64) -> Workload<'_> {
        Workload {
            command: "run",
            runs: vec![(s, runs)],
            options: RunOptions::default(),
            jobs: 2,
            keeps_results: true,
            extra_bytes: 0.0,
            memory_knobs: "fewer replications",
            time_knobs: "fewer replications",
        }
    }

    #[test]
    fn client_instances_cost_the_bytes_of_their_records() {
        // Own budgets and breakers: 100 000 more instances, 100 000 more records
        // (an instance that sends keeps 84 bytes; `model::world::instances`).
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/clients/scenario.toml");
        let at = |count: u32| {
            let exp = crate::config::load_experiment(&path, &[format!("clients.web.count={count}")]).unwrap();
            let s = exp.variants[0].clone();
            (estimate(&s, 0.0).bytes, crate::model::bytes_per_instance(&s.clients[0]))
        };
        let ((few, record), (many, _)) = (at(1_000), at(101_000));
        assert_eq!(record, 84);
        assert!((many - few - 100_000.0 * 84.0).abs() < 1e-3, "{} bytes per instance", (many - few) / 1e5);
    }

    #[test]
    fn a_nan_estimate_is_kept_by_the_fold_and_refused_even_with_force() {
        assert!(worst(0.0, f64::NAN).is_nan() && worst(f64::NAN, 1.0).is_nan());
        assert_eq!(worst(2.0, 1.0), 2.0);
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/quickstart.toml");
        let exp = crate::config::load_experiment(&path, &["experiment.load_scale=1e306".into()]).unwrap();
        let w = workload(&exp.variants[0], 1);
        let f = w.forecast();
        assert!(!f.bytes.is_finite() || !f.cpu_seconds.is_finite(), "{f:?}");
        let e = w.check(true).unwrap_err();
        assert!(e.message.contains("beyond any machine"), "{e}");
    }

    #[test]
    fn cpu_time_is_the_events_of_every_run_at_the_documented_rate() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/quickstart.toml");
        let exp = crate::config::load_experiment(&path, &[]).unwrap();
        let (a, b) = (&exp.variants[0], &exp.variants[1]);
        let w = Workload { runs: vec![(a, 3), (b, 5)], ..workload(a, 0) };
        let f = w.forecast();
        let want = (3.0 * estimate(a, 0.0).events + 5.0 * estimate(b, 0.0).events) / EVENTS_PER_CPU_SECOND;
        assert!((f.cpu_seconds - want).abs() < 1e-9 * want, "{} vs {want}", f.cpu_seconds);
        assert_eq!(f.runs, 8);
        // Runs in progress hold their peak (two jobs), finished ones what they keep.
        let kept = estimate(a, 0.0).kept.max(estimate(b, 0.0).kept);
        let peak = estimate(a, 0.0).bytes.max(estimate(b, 0.0).bytes);
        assert!((f.bytes - (2.0 * peak + 8.0 * kept)).abs() < 1.0);
        // A million such runs are hours of CPU: refused without --force, allowed with it.
        let many = Workload { runs: vec![(a, 1_000_000)], keeps_results: false, ..workload(a, 0) };
        let e = many.check(false).unwrap_err();
        assert!(e.message.contains("of CPU time") && e.message.contains("--force"), "{e}");
        assert!(many.check(true).is_ok());
    }

    #[test]
    fn durations_read_in_sensible_units() {
        assert_eq!(human_duration(42.0), "42 s");
        assert_eq!(human_duration(600.0), "10 min");
        assert_eq!(human_duration(3.0 * 3600.0), "3.0 h");
        assert_eq!(human_duration(10.0 * 86400.0), "10 days");
        assert_eq!(human_duration(f64::INFINITY), "infinite");
    }
}
