//! Whether the warm-up covers the start-up transient: MSER-5 (White 1997;
//! White, Cobb and Spratt 2000) on the requests waiting per bin before the
//! first disturbance, averaged over the replications. Every run starts
//! empty, so queues and busy workers climb to their steady level; measuring
//! a baseline or a steady-state metric over that climb biases it.

use super::RunSet;
use crate::engine::to_secs_f64;
use crate::metrics::recovery::disturbances;

/// The MSER-5 truncation point of `series`: the number of leading values
/// (a multiple of 5) whose removal minimises the squared standard error of
/// the mean of the rest, searched over the first half (a minimum in the
/// second half means the series is too short to tell). A cut whose
/// batches do not differ clearly from the rest (by three standard errors,
/// and by 10% of its mean and half a request at least) is noise or too
/// small to matter, and 0 is returned.
pub fn mser5(series: &[f64]) -> usize {
    let batches: Vec<f64> = series.chunks_exact(5).map(|c| c.iter().sum::<f64>() / 5.0).collect();
    let k = batches.len();
    if k < 4 {
        return 0;
    }
    let mut best = (f64::INFINITY, 0usize);
    for d in 0..=k / 2 {
        let rest = &batches[d..];
        let n = rest.len() as f64;
        let mean = rest.iter().sum::<f64>() / n;
        let mser = rest.iter().map(|z| (z - mean).powi(2)).sum::<f64>() / (n * n);
        // Strictly smaller (beyond rounding): a tie keeps the shorter cut.
        if best.0.is_infinite() || mser < best.0 * (1.0 - 1e-12) {
            best = (mser, d);
        }
    }
    // A cut that noise alone explains is no transient: the cut batches'
    // mean must differ from the rest's by more than 3 of the rest's
    // standard errors.
    let d = best.1;
    if d == 0 {
        return 0;
    }
    let rest = &batches[d..];
    let n = rest.len() as f64;
    let mean = rest.iter().sum::<f64>() / n;
    let sd = (rest.iter().map(|z| (z - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let cut_mean = batches[..d].iter().sum::<f64>() / d as f64;
    let shift = (cut_mean - mean).abs();
    if shift > 3.0 * sd / (d as f64).sqrt() && shift > (0.1 * mean.abs()).max(0.5) { 5 * d } else { 0 }
}

/// Per variant whose start-up transient outlasts the warm-up: the variant
/// and the transient's length in seconds.
pub fn transients(set: &RunSet) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for v in &set.variants {
        let s = &v.scenario;
        let end = disturbances(s).iter().map(|d| d.0).min().unwrap_or(s.duration).min(s.duration);
        let bins = (end / s.bin) as usize;
        if bins < 20 || v.runs.is_empty() {
            continue;
        }
        let mut mean = vec![0.0; bins];
        for r in &v.runs {
            for (b, row) in r.series.rows().iter().take(bins).enumerate() {
                mean[b] += row.queue_area.iter().sum::<f64>() / s.bin as f64 / v.runs.len() as f64;
            }
        }
        let cut = mser5(&mean) as u64 * s.bin;
        if cut > s.warmup {
            out.push((s.variant.clone(), to_secs_f64(cut)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_up_climb_is_cut_and_a_stationary_series_is_not() {
        // A queue that climbs from 0 to 10 over 30 bins, then stays at 10 ± 1.
        let noise = |i: usize| {
            if i.is_multiple_of(3) {
                1.0
            } else if i % 3 == 1 {
                -1.0
            } else {
                0.0
            }
        };
        let climbing: Vec<f64> = (0..200).map(|i| if i < 30 { i as f64 / 3.0 } else { 10.0 + noise(i) }).collect();
        let cut = mser5(&climbing);
        assert!((25..=35).contains(&cut), "{cut}");
        let flat: Vec<f64> = (0..200).map(|i| 10.0 + noise(i)).collect();
        assert_eq!(mser5(&flat), 0);
        assert_eq!(mser5(&[1.0; 12]), 0);
    }
}
