//! Spontaneous collapses at steady load (DESIGN §8.4 `collapse-rate`): a
//! collapse is goodput below half of the offered intents in every bin for
//! 30 s in a row, from a healthy start. The rate is collapses per hour of
//! healthy simulated time, by direct simulation ([`direct`]: many runs, each
//! stopped at its first collapse) or by multilevel splitting
//! ([`splitting`]) when collapses are too rare to count.

pub mod splitting;

use crate::config::Scenario;
use crate::engine::{Nanos, to_secs_f64};
use crate::metrics::timeseries::TimeSeries;
use crate::model::{RunOptions, World};
use rayon::prelude::*;
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// How long goodput must stay below half of the offered intents.
pub const COLLAPSE_SPAN: Nanos = 30_000_000_000;

/// Goodput below this share of the offered intents in a bin is a low bin.
pub const COLLAPSE_RATIO: f64 = 0.5;

/// Runs simulated together before looking at the estimate (fixed, so the
/// result does not depend on `--jobs`).
pub const BATCH: u32 = 32;

/// Whether bin `b` of `series` is low: goodput below half of the offered intents.
pub fn low_bin(series: &TimeSeries, b: usize) -> bool {
    let row = series.rows().get(b);
    let (g, o) = row.map_or((0, 0), |r| (r.goodput, r.offered));
    o > 0 && (g as f64) < COLLAPSE_RATIO * o as f64
}

/// Low bins in a row ending just before bin `bins`, not counting bins before `from`.
pub fn low_run(series: &TimeSeries, from: usize, bins: usize) -> usize {
    (from..bins).rev().take_while(|&b| low_bin(series, b)).count()
}

/// The bins a collapse must last.
pub fn span_bins(s: &Scenario) -> usize {
    COLLAPSE_SPAN.div_ceil(s.bin) as usize
}

/// One run watched for a collapse.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Watched {
    /// When the collapse began (the first of its low bins), if it came.
    pub onset: Option<Nanos>,
    /// Healthy time at risk: from the warm-up to the onset, or, without a
    /// collapse, to 30 s before the end (a later onset could not be seen).
    pub exposure: Nanos,
    pub events: u64,
}

/// Runs replication `rep` of `s` bin by bin over [warmup, duration) and
/// stops at its first collapse.
pub fn watch(s: &Scenario, rep: u32) -> Watched {
    let mut world = World::new(s, rep, RunOptions::metrics_only());
    let (bin, span) = (s.bin, span_bins(s));
    let first = s.warmup.div_ceil(bin) as usize;
    let last = (s.duration / bin) as usize;
    for b in first..last {
        world.advance_to((b as u64 + 1) * bin - 1);
        if low_run(world.series(), first, b + 1) >= span {
            let onset = (b + 1 - span) as u64 * bin;
            return Watched { onset: Some(onset), exposure: onset - first as u64 * bin, events: world.events() };
        }
    }
    // An onset later than `span` before the end could not have been seen.
    Watched { onset: None, exposure: (last.saturating_sub(first + span)) as u64 * bin, events: world.events() }
}

/// A rate of collapses per hour with its 95% interval and what it cost.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Rate {
    pub collapses_per_hour: f64,
    pub ci95: [f64; 2],
    /// Simulated hours it cost (all runs and branches).
    pub simulated_hours: f64,
    /// Events it cost.
    pub events: u64,
}

impl Rate {
    /// Half the interval's width over the rate (infinite at rate 0).
    pub fn relative_half_width(&self) -> f64 {
        (self.ci95[1] - self.ci95[0]) / 2.0 / self.collapses_per_hour
    }
}

/// Exact (Garwood) 95% interval of a Poisson rate: `k` events in `hours`.
pub fn poisson_interval(k: u64, hours: f64) -> [f64; 2] {
    let q = |df: f64, p: f64| ChiSquared::new(df).map(|c| c.inverse_cdf(p)).unwrap_or(f64::NAN);
    let lo = if k == 0 { 0.0 } else { q(2.0 * k as f64, 0.025) / 2.0 / hours };
    let hi = q(2.0 * k as f64 + 2.0, 0.975) / 2.0 / hours;
    [lo, hi]
}

/// Wilson 95% interval of a share: `k` of `n`.
pub fn wilson_interval(k: u64, n: u64) -> [f64; 2] {
    if n == 0 {
        return [0.0, 1.0];
    }
    let (z, n, p) = (1.959_963_984_540_054, n as f64, k as f64 / n as f64);
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    [(centre - half).max(0.0), (centre + half).min(1.0)]
}

/// What direct simulation found.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Direct {
    pub rate: Rate,
    /// Runs, and those that collapsed.
    pub runs: u64,
    pub collapses: u64,
    /// Healthy hours watched (the rate's denominator).
    pub exposure_hours: f64,
    /// Share of runs (each `duration` long) in which a collapse was seen
    /// (its onset at least 30 s before the end), with its Wilson 95% interval.
    pub share_of_runs: f64,
    pub share_ci95: [f64; 2],
}

/// Direct simulation: batches of [`BATCH`] runs until at least `hours` of
/// healthy time are watched and the interval is within ±`precision` of the
/// rate, or `max_hours` are watched.
pub fn direct(
    s: &Scenario,
    hours: f64,
    max_hours: f64,
    precision: f64,
    jobs: usize,
    progress: &indicatif::ProgressBar,
) -> anyhow::Result<Direct> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build()?;
    let (mut runs, mut collapses, mut exposure, mut events, mut simulated) = (0u64, 0u64, 0u64, 0u64, 0u64);
    loop {
        let reps: Vec<u32> = (runs as u32..runs as u32 + BATCH).collect();
        let watched: Vec<Watched> = pool.install(|| reps.par_iter().with_max_len(1).map(|&r| watch(s, r)).collect());
        crate::interrupt::check()?;
        for w in watched {
            runs += 1;
            collapses += u64::from(w.onset.is_some());
            exposure += w.exposure;
            events += w.events;
            simulated += w.onset.map_or(s.duration, |o| o + COLLAPSE_SPAN);
        }
        let h = to_secs_f64(exposure) / 3600.0;
        // Every run collapsed as it started: there is no healthy time to
        // measure a rate of collapses in (and `h` would never grow).
        if exposure == 0 && collapses == runs {
            anyhow::bail!(
                "variant \"{}\": all {runs} runs collapsed at once, with no healthy time before (goodput below half of the offered intents from the warm-up on): the collapse rate is measured from a healthy start; lower the load or the faults",
                s.variant
            );
        }
        let ci = poisson_interval(collapses, h);
        let rate = collapses as f64 / h;
        let precise = collapses > 0 && (ci[1] - ci[0]) / 2.0 <= precision * rate;
        progress.set_message(format!(
            "variant \"{}\": direct simulation, {h:.1} healthy hours watched (at least {hours}, at most {max_hours}), {}",
            s.variant,
            crate::words::plural(collapses as usize, "collapse")
        ));
        // `max_hours` bounds what is simulated, healthy or not.
        let simulated_h = to_secs_f64(simulated) / 3600.0;
        if (h >= hours && precise) || h >= max_hours || simulated_h >= max_hours {
            let share_ci95 = wilson_interval(collapses, runs);
            return Ok(Direct {
                rate: Rate {
                    collapses_per_hour: rate,
                    ci95: ci,
                    simulated_hours: to_secs_f64(simulated) / 3600.0,
                    events,
                },
                runs,
                collapses,
                exposure_hours: h,
                share_of_runs: collapses as f64 / runs as f64,
                share_ci95,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_intervals_match_the_tables() {
        // Garwood: 0 events -> [0, 3.689]; 10 events -> [4.795, 18.39].
        let [lo, hi] = poisson_interval(0, 1.0);
        assert_eq!(lo, 0.0);
        assert!((hi - 3.689).abs() < 1e-3, "{hi}");
        let [lo, hi] = poisson_interval(10, 2.0);
        assert!((lo - 4.795 / 2.0).abs() < 1e-3 && (hi - 18.39 / 2.0).abs() < 1e-2, "{lo} {hi}");
    }

    #[test]
    fn wilson_intervals_match_the_formula() {
        // 5 of 100: [2.15%, 11.2%].
        let [lo, hi] = wilson_interval(5, 100);
        assert!((lo - 0.0215).abs() < 5e-4 && (hi - 0.1118).abs() < 5e-4, "{lo} {hi}");
    }
}
