//! Backoff waits drawn with the simulator's random streams: bounds, means
//! and the golden sequence of a fixed seed follow DESIGN §2's formulas.

use retrysim::engine::{Nanos, Stream};
use retrysim::policy::Outcome;
use retrysim::policy::{Backoff, BackoffKind, Jitter};

const MS: Nanos = 1_000_000;

fn expo(jitter: Jitter) -> Backoff {
    Backoff {
        kind: BackoffKind::Exponential,
        base: 100 * MS,
        cap: 1000 * MS,
        multiplier: 2.0,
        jitter,
        throttling_base: None,
    }
}

#[test]
fn jitter_bounds_and_means() {
    let n = 20_000;
    let mut stream = Stream::from_state(42);
    for (jitter, lo, hi, mean) in [
        (Jitter::Full, 0.0, 400.0, 200.0),
        (Jitter::Equal, 200.0, 400.0, 300.0),
        (Jitter::Proportional(0.2), 320.0, 480.0, 400.0),
    ] {
        let b = expo(jitter);
        let draws: Vec<f64> = (0..n).map(|_| b.delay(3, 0, stream.unit()) as f64 / MS as f64).collect();
        let m = draws.iter().sum::<f64>() / n as f64;
        assert!(draws.iter().all(|&d| d >= lo && d <= hi), "{jitter:?} out of [{lo}, {hi}]");
        // Uniform on [lo, hi]: sd = (hi-lo)/sqrt(12); 5 standard errors.
        let se = (hi - lo) / 12f64.sqrt() / (n as f64).sqrt();
        assert!((m - mean).abs() < 5.0 * se, "{jitter:?} mean {m} vs {mean}");
    }
}

#[test]
fn decorrelated_stays_between_base_and_three_times_prev() {
    let b = Backoff { kind: BackoffKind::Decorrelated, base: 100 * MS, cap: 2000 * MS, ..Backoff::default() };
    let mut stream = Stream::from_state(7);
    let mut prev = 0;
    for n in 1..50 {
        let d = b.delay(n, prev, stream.unit());
        let hi = 3 * if prev == 0 { b.base } else { prev };
        assert!(d >= b.base && d <= hi.min(b.cap), "retry {n}: {d} not in [{}, {}]", b.base, hi);
        prev = d;
    }
    // u = 0.5 from prev = base: base + (3 base - base) / 2 = 2 base.
    assert_eq!(b.delay(1, 0, 0.5), 200 * MS);
}

/// The waits of retries 1..=6 for a fixed stream, in ms.
fn sequence(b: &Backoff) -> Vec<f64> {
    let mut s = Stream::from_state(2024);
    let mut prev = 0;
    (1..=6)
        .map(|n| {
            let d = b.delay(n, prev, s.unit());
            prev = d;
            (d as f64 / MS as f64 * 1000.0).round() / 1000.0
        })
        .collect()
}

#[test]
fn sequences_for_a_fixed_seed_follow_the_formulas() {
    let mut s = Stream::from_state(2024);
    let u: Vec<f64> = (0..6).map(|_| s.unit()).collect();
    let expo = |jitter| Backoff {
        kind: BackoffKind::Exponential,
        base: 100 * MS,
        cap: 1000 * MS,
        multiplier: 2.0,
        jitter,
        throttling_base: None,
    };
    let limits = [100.0, 200.0, 400.0, 800.0, 1000.0, 1000.0];
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    let full: Vec<f64> = (0..6).map(|i| round(u[i] * limits[i])).collect();
    let equal: Vec<f64> = (0..6).map(|i| round(limits[i] / 2.0 + u[i] * limits[i] / 2.0)).collect();
    let prop: Vec<f64> = (0..6).map(|i| round(limits[i] * (0.8 + 0.4 * u[i]))).collect();
    assert_eq!(sequence(&expo(Jitter::None)), limits.to_vec());
    assert_eq!(sequence(&expo(Jitter::Full)), full);
    assert_eq!(sequence(&expo(Jitter::Equal)), equal);
    assert_eq!(sequence(&expo(Jitter::Proportional(0.2))), prop);
    let dec = Backoff { kind: BackoffKind::Decorrelated, base: 100 * MS, cap: 1000 * MS, ..Backoff::default() };
    let mut prev = 100.0;
    let expected: Vec<f64> = u
        .iter()
        .map(|u| {
            let d = (100.0 + u * (prev * 3.0 - 100.0)).min(1000.0);
            prev = (d * 1e6).round() / 1e6;
            round(d)
        })
        .collect();
    assert_eq!(sequence(&dec), expected);
    // Golden: the generator is fixed, so this sequence never changes.
    assert_eq!(sequence(&expo(Jitter::Full)), vec![62.277, 19.446, 119.43, 92.949, 830.578, 552.421]);
}

#[test]
fn throttling_answers_use_their_own_base_as_the_aws_sdks_do() {
    // AWS 2026: t_i = rand * min(base_scale * 2^(i-1), 20 s), base 1 s after
    // throttling, 50 ms otherwise.
    let b = Backoff {
        kind: BackoffKind::Exponential,
        base: 50 * MS,
        cap: 20_000 * MS,
        multiplier: 2.0,
        jitter: Jitter::Full,
        throttling_base: Some(1000 * MS),
    };
    assert_eq!(b.delay_after(Outcome::Status(503), 3, 0, 0.5), 100 * MS);
    assert_eq!(b.delay_after(Outcome::Status(429), 3, 0, 0.5), 2000 * MS);
    assert_eq!(b.delay_after(Outcome::Status(429), 6, 0, 0.5), 10_000 * MS, "capped at 20 s");
    assert_eq!(b.max_delay(2), 2000 * MS, "the larger base bounds every wait");
}
