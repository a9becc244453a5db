//! One replication with a trigger, run only until its verdict is known.
//!
//! The verdict follows the recovery metric (docs/model.md, section 9): the
//! run recovered when, for 5 bins in a row after the trigger's end and
//! before the horizon, the users are served as in the baseline and the
//! system's state (queues, busy workers, wasted work, p99) is back; a run
//! whose users are served but whose state is not counts as not recovered. The run is
//! looked at after every bin, and it stops at the first bin that settles
//! the verdict: recovery (the same first window the full run would find:
//! finished bins do not change), an unhealthy baseline, the horizon, or —
//! early — a goodput ratio below half its baseline for `stop_collapsed` in
//! a row after the trigger's end while the backlog would not drain before
//! the horizon at the pace it fell over that stretch.

use super::Judging;
use crate::config::Scenario;
use crate::engine::Nanos;
use crate::metrics::recovery::{HEALTHY_RATIO, disturbances, recovery, states};
use crate::model::{RunOptions, World};

/// What became of a run after its trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Users served and state back within the horizon.
    Recovered,
    /// Not back by the horizon (or clearly collapsed before it).
    Collapsed,
    /// The baseline window was not healthy: nothing to recover to.
    NeverHealthy,
}

/// Runs replication `rep` of `s` (with a trigger over `window`) until its
/// verdict is known; returns it and the events processed.
pub fn judge(s: &Scenario, rep: u32, window: (Nanos, Nanos), judging: Judging) -> (Verdict, u64) {
    let mut world = World::new(s, rep, RunOptions::metrics_only());
    let bin = s.bin;
    let marks = disturbances(s);
    let (start, end) = window;
    let horizon_end = s.duration;
    let low_bins = judging.stop_collapsed.div_ceil(bin).max(1) as usize;
    // The first look: the end of the bin the trigger ends in.
    let mut t = ((end / bin + 1) * bin).min(horizon_end);
    loop {
        let goes_on = world.advance_to(t.saturating_sub(1));
        let (goodput, offered) = counts(&world, (t / bin) as usize);
        let r = recovery(&states(world.series(), (t / bin) as usize), bin, s.warmup, t, &marks, false);
        if r.never_healthy {
            return (Verdict::NeverHealthy, world.events());
        }
        if r.recovered == Some(1.0) {
            return (Verdict::Recovered, world.events());
        }
        if t >= horizon_end || !goes_on {
            return (Verdict::Collapsed, world.events());
        }
        if judging.stop_collapsed > 0
            && clearly_collapsed(&goodput, &offered, s, start, end, low_bins)
            && !drains_in_time(&world, (t / bin) as usize, low_bins, horizon_end.saturating_sub(t))
        {
            return (Verdict::Collapsed, world.events());
        }
        t = (t + bin).min(horizon_end);
    }
}

/// Whether the backlog could be gone before the horizon: the number of
/// requests waiting (over every service) falls over the last `window`
/// bins before bin `bins`, and at that pace reaches 0 within `left`. A
/// slow drain near capacity takes minutes, and is not judged a collapse
/// as long as it would finish in time; a backlog that holds or grows, or
/// drains too slowly for the horizon, is.
fn drains_in_time(world: &World, bins: usize, window: usize, left: Nanos) -> bool {
    let rows = world.series().rows();
    let queue = |b: usize| rows.get(b).map_or(0.0, |r| r.queue_area.iter().sum::<f64>());
    let (first, last) = (bins.saturating_sub(window), bins.saturating_sub(1));
    let (q0, q1) = (queue(first), queue(last));
    if q1 <= 0.0 {
        return true;
    }
    let per_bin = (q0 - q1) / (last - first).max(1) as f64;
    per_bin > 0.0 && q1 / per_bin * (world.series().bin() as f64) <= left as f64
}

/// Goodput and offered intents of the first `bins` bins.
fn counts(world: &World, bins: usize) -> (Vec<u64>, Vec<u64>) {
    let rows = world.series().rows();
    let get = |b: usize, f: fn(&crate::metrics::timeseries::BinRow) -> u64| rows.get(b).map_or(0, f);
    ((0..bins).map(|b| get(b, |r| r.goodput)).collect(), (0..bins).map(|b| get(b, |r| r.offered)).collect())
}

/// The baseline ratio over the whole bins of [warmup, start), if any.
fn baseline(goodput: &[u64], offered: &[u64], s: &Scenario, start: Nanos) -> Option<f64> {
    let (lo, hi) = (s.warmup.div_ceil(s.bin) as usize, (start / s.bin) as usize);
    let g: u64 = goodput.iter().take(hi).skip(lo).sum();
    let o: u64 = offered.iter().take(hi).skip(lo).sum();
    (hi > lo && o > 0).then(|| g as f64 / o as f64)
}

/// Whether the last `low_bins` bins, all after the trigger's end, each have
/// a goodput ratio below half the baseline.
fn clearly_collapsed(
    goodput: &[u64],
    offered: &[u64],
    s: &Scenario,
    start: Nanos,
    end: Nanos,
    low_bins: usize,
) -> bool {
    let Some(base) = baseline(goodput, offered, s, start) else { return false };
    let n = goodput.len();
    let first_after = end.div_ceil(s.bin) as usize;
    if n < low_bins || n - low_bins < first_after || base < HEALTHY_RATIO * 0.5 {
        return false;
    }
    (n - low_bins..n).all(|b| offered[b] > 0 && (goodput[b] as f64) < 0.5 * base * offered[b] as f64)
}
