//! Shared helpers for the integration tests that check the simulator against
//! analytic results: loading an experiment written inline, running its
//! replications, confidence-interval assertions, and the textbook formulas
//! of queueing theory (Erlang B/C, M/M/c, M/M/c/K).
//!
//! Each test binary includes this module with `mod common;` and uses only
//! part of it, hence the `dead_code` allowance.
#![allow(dead_code)]

use retrysim::analysis::run_all;
use retrysim::analysis::stats::{Summary, summarize_at};
use retrysim::config::{Experiment, load_experiment};
use retrysim::metrics::{MetricMap, RunResult};
use std::path::Path;

/// Confidence level of every statistical check. Seeds are fixed, so each
/// test is deterministic; the level bounds the probability that a correct
/// model fails a check for an unlucky choice of seed: 0.1% per check, under
/// 2% over all checks of these files together.
pub const LEVEL: f64 = 0.999;

/// Writes `toml` as an experiment file into a fresh temporary directory and
/// loads it (with no `--set` overrides). The directory is removed on return:
/// the loaded experiment holds everything it needs.
pub fn load(toml: &str) -> Experiment {
    load_with(toml, &[])
}

/// The error of loading `toml`, which must not load.
pub fn refused(toml: &str) -> String {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("experiment.toml");
    std::fs::write(&path, toml).expect("write the experiment file");
    match load_experiment(&path, &[]) {
        Ok(_) => panic!("loaded:\n{toml}"),
        Err(e) => e.to_string(),
    }
}

/// [`load`] with `--set KEY=VALUE` overrides.
pub fn load_with(toml: &str, sets: &[String]) -> Experiment {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("experiment.toml");
    std::fs::write(&path, toml).expect("write the experiment file");
    load_path(&path, sets)
}

fn load_path(path: &Path, sets: &[String]) -> Experiment {
    match load_experiment(path, sets) {
        Ok(exp) => exp,
        Err(e) => panic!("the test experiment does not load: {e}"),
    }
}

/// Runs `replications` replications of the experiment's first variant on
/// every core and returns their results, replication 0 first.
pub fn run(exp: &Experiment, replications: u32) -> Vec<RunResult> {
    let set = run_all(&exp.variants[..1], Some(replications), 0).expect("runs");
    set.variants.into_iter().next().expect("one variant").runs
}

/// The values of headline metric `key`, one per replication.
pub fn metric(runs: &[RunResult], key: &str) -> Vec<Option<f64>> {
    runs.iter().map(|r| value(&r.metrics, key)).collect()
}

/// The values of per-service metric `key` of service `service`, one per replication.
pub fn service_metric(runs: &[RunResult], service: &str, key: &str) -> Vec<Option<f64>> {
    runs.iter()
        .map(|r| {
            let (_, m) = r
                .services
                .iter()
                .find(|(name, _)| name == service)
                .unwrap_or_else(|| panic!("no service {service} in the results"));
            value(m, key)
        })
        .collect()
}

fn value(m: &MetricMap, key: &str) -> Option<f64> {
    *m.get(key).unwrap_or_else(|| panic!("no metric {key} in the results"))
}

/// The outcome of one check, for the report printed by each test
/// (`cargo test -- --nocapture` shows it).
#[derive(Debug, Clone)]
pub struct Check {
    pub name: String,
    pub analytic: f64,
    pub mean: f64,
    pub ci: (f64, f64),
}

impl Check {
    pub fn half_width(&self) -> f64 {
        (self.ci.1 - self.ci.0) / 2.0
    }
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:<34} analytic {:<12.6} measured {:<12.6} {:.1}% CI [{:.6}, {:.6}] (±{:.2}%)",
            self.name,
            self.analytic,
            self.mean,
            LEVEL * 100.0,
            self.ci.0,
            self.ci.1,
            100.0 * self.half_width() / self.analytic.abs(),
        )
    }
}

/// The Student-t CI at [`LEVEL`] across replications of `values`, every
/// replication having a value.
pub fn estimate(name: &str, analytic: f64, values: Vec<Option<f64>>) -> Check {
    let n = values.len();
    let s: Summary = summarize_at(values, LEVEL);
    assert!(s.values.iter().all(Option::is_some), "{name}: a replication has no value: {:?}", s.values);
    let (mean, ci) = match (s.mean, s.ci95) {
        (Some(m), Some(ci)) => (m, ci),
        _ => panic!("{name}: no CI over {n} replication(s)"),
    };
    Check { name: name.to_string(), analytic, mean, ci }
}

/// Asserts that the CI of `values` covers `analytic` and that its half-width
/// is below `max_rel_half_width` × `scale` (so that the check cannot pass
/// merely because the CI is wide). `scale` is the size of the quantity the
/// check must resolve: usually `analytic` itself.
pub fn assert_covers_scaled(
    name: &str,
    analytic: f64,
    values: Vec<Option<f64>>,
    scale: f64,
    max_rel_half_width: f64,
) -> Check {
    let c = estimate(name, analytic, values);
    println!("{c}");
    assert!(
        c.ci.0 <= analytic && analytic <= c.ci.1,
        "{name}: the analytic value {analytic} is outside the {:.1}% CI [{}, {}] (mean {})",
        LEVEL * 100.0,
        c.ci.0,
        c.ci.1,
        c.mean
    );
    assert!(
        c.half_width() < max_rel_half_width * scale.abs(),
        "{name}: the CI [{}, {}] is too wide (half-width {} ≥ {} × {}) to validate anything",
        c.ci.0,
        c.ci.1,
        c.half_width(),
        max_rel_half_width,
        scale
    );
    c
}

/// [`assert_covers_scaled`] relative to the analytic value itself.
pub fn assert_covers(name: &str, analytic: f64, values: Vec<Option<f64>>, max_rel_half_width: f64) -> Check {
    assert_covers_scaled(name, analytic, values, analytic, max_rel_half_width)
}

// ---------------------------------------------------------------------------
// Analytic formulas. `a` = λ/μ is the offered load in Erlangs, `c` the number
// of servers, ρ = a/c the utilisation.
// ---------------------------------------------------------------------------

/// Erlang B: the blocking probability of M/M/c/c (c servers, no waiting
/// room), by the numerically stable recursion B(0) = 1,
/// B(k) = a·B(k−1) / (k + a·B(k−1)).
pub fn erlang_b(c: u32, a: f64) -> f64 {
    (1..=c).fold(1.0, |b, k| a * b / (k as f64 + a * b))
}

/// Erlang C: the probability that an arrival to M/M/c has to wait,
/// C(c, a) = c·B / (c − a·(1 − B)) with B = Erlang B (needs a < c).
pub fn erlang_c(c: u32, a: f64) -> f64 {
    assert!(a < c as f64, "Erlang C needs a stable queue: a = {a} ≥ c = {c}");
    let b = erlang_b(c, a);
    c as f64 * b / (c as f64 - a * (1.0 - b))
}

/// M/M/c mean time in queue Wq = C(c, a) / (cμ − λ).
pub fn mmc_mean_wait(c: u32, lambda: f64, mu: f64) -> f64 {
    erlang_c(c, lambda / mu) / (c as f64 * mu - lambda)
}

/// M/M/c mean sojourn time W = C(c, a) / (cμ − λ) + 1/μ.
pub fn mmc_mean_sojourn(c: u32, lambda: f64, mu: f64) -> f64 {
    mmc_mean_wait(c, lambda, mu) + 1.0 / mu
}

/// M/M/c mean number waiting Lq = C(c, a)·ρ / (1 − ρ) (= λ·Wq, Little).
pub fn mmc_mean_queue(c: u32, lambda: f64, mu: f64) -> f64 {
    let a = lambda / mu;
    let rho = a / c as f64;
    erlang_c(c, a) * rho / (1.0 - rho)
}

/// The stationary distribution p_0..=p_K of the number in an M/M/c/K system
/// (K = total capacity, servers included): p_n ∝ a^n/n! for n ≤ c and
/// ∝ a^c/c!·ρ^(n−c) above.
pub fn mmck_distribution(c: u32, a: f64, k: u32) -> Vec<f64> {
    assert!(k >= c, "M/M/c/K needs K ≥ c (K = {k}, c = {c})");
    let mut p = Vec::with_capacity(k as usize + 1);
    let mut term = 1.0;
    p.push(term);
    for n in 1..=k {
        term *= a / n.min(c) as f64;
        p.push(term);
    }
    let total: f64 = p.iter().sum();
    p.iter().map(|x| x / total).collect()
}

/// M/M/c/K blocking probability P_K (by PASTA, the share of arrivals
/// turned away).
pub fn mmck_blocking(c: u32, a: f64, k: u32) -> f64 {
    *mmck_distribution(c, a, k).last().expect("K ≥ 0")
}

/// M/M/c/K mean number waiting Lq = Σ (n − c)·p_n.
pub fn mmck_mean_queue(c: u32, a: f64, k: u32) -> f64 {
    mmck_distribution(c, a, k).iter().enumerate().map(|(n, p)| n.saturating_sub(c as usize) as f64 * p).sum()
}

/// M/M/c/K mean sojourn of admitted customers, by Little's law:
/// W = L / (λ·(1 − P_K)).
pub fn mmck_mean_sojourn(c: u32, lambda: f64, mu: f64, k: u32) -> f64 {
    let p = mmck_distribution(c, lambda / mu, k);
    let l: f64 = p.iter().enumerate().map(|(n, p)| n as f64 * p).sum();
    l / (lambda * (1.0 - p[k as usize]))
}

/// Expected attempts per intent when each attempt fails independently with
/// probability `p` and at most `n` are made: Σ_{i<n} p^i = (1 − p^n)/(1 − p).
pub fn expected_attempts(p: f64, n: u32) -> f64 {
    if p == 1.0 { n as f64 } else { (1.0 - p.powi(n as i32)) / (1.0 - p) }
}

/// Probability that at least one of `n` independent attempts succeeds: 1 − p^n.
pub fn success_probability(p: f64, n: u32) -> f64 {
    1.0 - p.powi(n as i32)
}

#[cfg(test)]
mod formula_checks {
    use super::*;

    fn close(x: f64, y: f64) -> bool {
        (x - y).abs() < 1e-12 * y.abs().max(1.0)
    }

    #[test]
    fn erlang_b_textbook_values() {
        // B(1, a) = a / (1 + a); B(2, 1) = (1/2) / (1 + 1 + 1/2) = 0.2.
        assert!(close(erlang_b(1, 1.0), 0.5));
        assert!(close(erlang_b(2, 1.0), 0.2));
        // Classic table entry: B(5, 4) ≈ 0.1991 (Erlang B tables).
        assert!((erlang_b(5, 4.0) - 0.19907).abs() < 1e-5);
        assert_eq!(erlang_b(0, 3.0), 1.0);
    }

    #[test]
    fn erlang_c_textbook_values() {
        assert!(close(erlang_c(2, 1.0), 1.0 / 3.0));
        // C(3, 2) = (8/6·3) / (1 + 2 + 2 + 8/6·3) = 4/9.
        assert!(close(erlang_c(3, 2.0), 4.0 / 9.0));
        // With one server C = ρ.
        assert!(close(erlang_c(1, 0.7), 0.7));
    }

    #[test]
    fn mmc_reduces_to_mm1() {
        // M/M/1: W = 1/(μ − λ), Lq = ρ²/(1 − ρ).
        let (lambda, mu) = (800.0, 1000.0);
        assert!(close(mmc_mean_sojourn(1, lambda, mu), 1.0 / 200.0));
        assert!(close(mmc_mean_queue(1, lambda, mu), 0.64 / 0.2));
        // M/M/2 with λ = 1, μ = 1: W = C/(2 − 1) + 1 = 4/3.
        assert!(close(mmc_mean_sojourn(2, 1.0, 1.0), 4.0 / 3.0));
    }

    #[test]
    fn mmck_textbook_values() {
        // M/M/1/1 with ρ = 0.5: P_1 = ρ/(1 + ρ) = 1/3.
        assert!(close(mmck_blocking(1, 0.5, 1), 1.0 / 3.0));
        // M/M/1/K: P_K = (1 − ρ)ρ^K / (1 − ρ^(K+1)).
        let (rho, k) = (0.8f64, 4);
        let pk = (1.0 - rho) * rho.powi(k) / (1.0 - rho.powi(k + 1));
        assert!(close(mmck_blocking(1, rho, k as u32), pk));
        // M/M/c/c is Erlang B.
        assert!(close(mmck_blocking(5, 4.0, 5), erlang_b(5, 4.0)));
        assert!(close(mmck_mean_queue(5, 4.0, 5), 0.0));
        // A large K approaches M/M/c.
        let w = mmck_mean_sojourn(2, 1.0, 1.0, 400);
        assert!((w - 4.0 / 3.0).abs() < 1e-9, "{w}");
        let lq = mmck_mean_queue(4, 3.2, 400);
        assert!((lq - mmc_mean_queue(4, 320.0, 100.0)).abs() < 1e-9, "{lq}");
        // The distribution sums to one.
        let total: f64 = mmck_distribution(4, 3.6, 8).iter().sum();
        assert!(close(total, 1.0));
    }

    #[test]
    fn retry_formulas_textbook_values() {
        assert!(close(expected_attempts(0.5, 3), 1.75));
        assert!(close(expected_attempts(0.0, 5), 1.0));
        assert!(close(expected_attempts(1.0, 4), 4.0));
        assert!(close(expected_attempts(0.3, 1), 1.0));
        assert!(close(success_probability(0.1, 3), 0.999));
        assert!(close(success_probability(0.9, 2), 0.19));
    }
}
