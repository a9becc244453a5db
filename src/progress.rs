//! How far the runs of one command have come in simulated time, for the
//! progress bar's estimate of the time left.
//!
//! Runs finish in bursts (a sweep's first runs start together and end
//! together; a tune's later candidates are cheaper or dearer), so an
//! estimate from runs finished is far off early on. Each run instead
//! reports how much of its work is behind it, every 65,536 events: the
//! simulated time covered, weighed by the intents its clients offer in it
//! (a run at twice the load costs about twice as much per simulated
//! second). The estimate is wall time per unit of work across every run so
//! far, times the work still to go. Nothing here touches the simulation's
//! results.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

static DONE_NS: AtomicU64 = AtomicU64::new(0);
static STARTED_NS: AtomicU64 = AtomicU64::new(0);
static STARTED_RUNS: AtomicU64 = AtomicU64::new(0);
static EXPECTED: AtomicU64 = AtomicU64::new(0);

/// Forgets earlier commands' runs (one command per process in the CLI; tests
/// may run several).
pub fn reset() {
    DONE_NS.store(0, Ordering::Relaxed);
    STARTED_NS.store(0, Ordering::Relaxed);
    STARTED_RUNS.store(0, Ordering::Relaxed);
    EXPECTED.store(0, Ordering::Relaxed);
}

/// The work of every run the command will make, when the caller knows it
/// (a sweep's later points may be heavier than its first); without it the
/// runs started so far stand for all of them.
pub fn expect(work: u64) {
    EXPECTED.store(work, Ordering::Relaxed);
}

/// A run of `work` units (its arrival window, weighed by its load) started.
pub fn run_started(work: u64) {
    STARTED_NS.fetch_add(work, Ordering::Relaxed);
    STARTED_RUNS.fetch_add(1, Ordering::Relaxed);
}

/// A run covered `work` more units of its window.
pub fn advanced(work: u64) {
    DONE_NS.fetch_add(work, Ordering::Relaxed);
}

/// The time left for `total_runs` runs after `elapsed`, from the simulated
/// time covered so far; `None` before there is anything to go on.
pub fn time_left(total_runs: u64, elapsed: Duration) -> Option<Duration> {
    estimate(
        total_runs,
        elapsed,
        DONE_NS.load(Ordering::Relaxed),
        STARTED_NS.load(Ordering::Relaxed),
        STARTED_RUNS.load(Ordering::Relaxed),
        EXPECTED.load(Ordering::Relaxed),
    )
}

/// [`time_left`] from explicit counters: the work in all is `expected`
/// when known, else the mean work of the runs started times the runs in all.
fn estimate(
    total_runs: u64,
    elapsed: Duration,
    done_ns: u64,
    started_ns: u64,
    started_runs: u64,
    expected: u64,
) -> Option<Duration> {
    if done_ns == 0 || started_runs == 0 {
        return None;
    }
    let mean = started_ns as f64 / started_runs as f64;
    let total = if expected > 0 { expected as f64 } else { mean * total_runs.max(started_runs) as f64 };
    let left = (total - done_ns as f64).max(0.0);
    Some(elapsed.mul_f64(left / done_ns as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_left_is_wall_time_per_simulated_second_times_what_is_left() {
        // 10 runs of 60 s; 2 started, 30 s covered in 3 s of wall time:
        // 600 s in all, 570 s left at 0.1 s per simulated second.
        let left = estimate(10, Duration::from_secs(3), 30_000_000_000, 120_000_000_000, 2, 0).unwrap();
        assert!((left.as_secs_f64() - 57.0).abs() < 1e-9, "{left:?}");
        // A run half done counts as half, not as nothing (the runs-finished
        // estimate would have said "no idea" or "forever" here).
        let half = estimate(2, Duration::from_secs(1), 30_000_000_000, 120_000_000_000, 2, 0).unwrap();
        assert!((half.as_secs_f64() - 3.0).abs() < 1e-9, "{half:?}");
        assert_eq!(estimate(10, Duration::from_secs(3), 0, 0, 0, 0), None);
        // Known work in all wins over the mean of the runs started: 30 of
        // 300 units in 3 s leaves 27 s.
        let known = estimate(10, Duration::from_secs(3), 30, 20, 2, 300).unwrap();
        assert!((known.as_secs_f64() - 27.0).abs() < 1e-9, "{known:?}");
        assert_eq!(estimate(1, Duration::from_secs(3), 60_000_000_000, 60_000_000_000, 1, 0), Some(Duration::ZERO));
    }
}
