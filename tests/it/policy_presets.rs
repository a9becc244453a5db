//! The policy presets under `policies/`: every file loads, is named after
//! itself, runs in an experiment that names it by path, and keeps the values
//! its header comment attributes to its source system.

use retrysim::analysis::run_all;
use retrysim::config::{load_experiment, load_policy_file};
use retrysim::engine::{NEVER, Nanos};
use retrysim::policy::budget::{BudgetKind, BudgetScope, BudgetSpec};
use retrysim::policy::{BackoffKind, Jitter, Policy, RetryOn};
use std::path::{Path, PathBuf};

const MS: Nanos = 1_000_000;
const S: Nanos = 1_000 * MS;

/// Every preset this test knows the source of. A new file under `policies/`
/// fails `every_preset_is_listed` until it is added here (with its pins).
const PRESETS: &[&str] = &[
    "aws-adaptive",
    "aws-standard",
    "aws-standard-2026",
    "decorrelated-jitter",
    "envoy-default",
    "envoy-hedge",
    "equal-jitter",
    "exponential-full-jitter",
    "exponential-no-jitter",
    "finagle-backup-requests",
    "finagle-budget",
    "grpc-default",
    "grpc-hedging",
    "immediate-retries",
    "istio-default",
    "no-retries",
    "sre-book",
    "sre-throttle",
    "tuned-example",
];

fn policies_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("policies")
}

/// The `.toml` files under `policies/`, sorted.
fn preset_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(policies_dir())
        .expect("read policies/")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

fn stem(path: &Path) -> String {
    path.file_stem().expect("file stem").to_string_lossy().into_owned()
}

fn preset(name: &str) -> Policy {
    let path = policies_dir().join(format!("{name}.toml"));
    load_policy_file(&path).unwrap_or_else(|e| panic!("{} does not load: {e}", path.display()))
}

fn budget(p: &Policy) -> BudgetSpec {
    p.budget.unwrap_or_else(|| panic!("{} has no [budget]", p.name))
}

fn retry_on(entries: &[&str]) -> RetryOn {
    let parsed: Vec<_> = entries.iter().map(|e| RetryOn::parse_entry(e).expect("a valid retry_on entry")).collect();
    RetryOn::from_entries(&parsed)
}

#[test]
fn every_preset_is_listed() {
    let mut found: Vec<String> = preset_files().iter().map(|p| stem(p)).collect();
    found.sort();
    let mut listed: Vec<String> = PRESETS.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(found, listed, "files under policies/ vs the presets this test pins");
}

#[test]
fn every_preset_loads_and_is_named_after_its_file() {
    for path in preset_files() {
        let policy = load_policy_file(&path).unwrap_or_else(|e| panic!("{} does not load: {e}", path.display()));
        assert_eq!(policy.name, stem(&path), "name in {}", path.display());
        assert!(
            policy.per_try_timeout != NEVER || policy.deadline != NEVER,
            "{} needs a per-try timeout or a deadline",
            path.display()
        );
    }
}

/// A small experiment whose client uses the preset at `path` (absolute) and
/// whose service fails 30% of calls with 503, so that retries happen.
fn experiment_with(path: &Path) -> String {
    let shown = path.display().to_string();
    assert!(!shown.contains('\''), "the path {shown} cannot go into a TOML literal string");
    format!(
        r#"
[experiment]
name = "preset smoke test"
duration = "5s"
warmup = "1s"
seed = 3
replications = 1

[[clients]]
name = "web"
count = 20
rate = "200/s"
target = "api"
operation = "read"
policy = '{shown}'

[[operations]]
name = "read"
idempotent = true

[[services]]
name = "api"
workers = 16
service_time = {{ dist = "exp", mean = "5ms" }}

[[faults]]
kind = "error"
target = "api"
status = 503
probability = 0.3
"#
    )
}

/// Runs the small experiment with the preset at `path` (one replication)
/// and returns (success rate, attempts per intent).
fn run_preset(dir: &Path, path: &Path) -> (f64, f64) {
    let name = stem(path);
    let exp_path = dir.join(format!("{name}.toml"));
    std::fs::write(&exp_path, experiment_with(path)).expect("write the experiment");
    let exp =
        load_experiment(&exp_path, &[]).unwrap_or_else(|e| panic!("the experiment using {name} does not load: {e}"));
    assert_eq!(
        exp.variants[0].clients[0].policy,
        load_policy_file(path).expect("loads"),
        "{name}: the experiment holds the preset as its file says"
    );
    let set =
        run_all(&exp.variants, Some(1), 1).unwrap_or_else(|e| panic!("the experiment using {name} does not run: {e}"));
    let run = &set.variants[0].runs[0];
    let metric =
        |key: &str| run.metrics.get(key).copied().flatten().unwrap_or_else(|| panic!("{name}: no value for {key}"));
    assert!(metric("intents") > 500.0, "{name}: intents");
    let (success, attempts) = (metric("success_rate"), metric("attempts_per_intent"));
    println!("{name}: success {success:.3}, attempts/intent {attempts:.3}");
    (success, attempts)
}

#[test]
fn every_preset_runs_in_a_small_experiment() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let (baseline, one) = run_preset(dir.path(), &policies_dir().join("no-retries.toml"));
    assert_eq!(one, 1.0, "no-retries: one attempt per intent");
    assert!((baseline - 0.7).abs() < 0.06, "no-retries: success {baseline}");
    for path in preset_files() {
        let name = stem(&path);
        if name == "no-retries" {
            continue;
        }
        let (success, attempts) = run_preset(dir.path(), &path);
        let policy = load_policy_file(&path).expect("loads");
        if policy.hedging.as_ref().is_some_and(|h| !h.non_fatal.contains(retrysim::policy::Outcome::Status(503))) {
            // It hedges slow answers and takes a 503 as the answer.
            assert!(attempts >= 1.0, "{name}: attempts/intent {attempts}");
            assert!((success - baseline).abs() < 0.03, "{name}: success {success} vs {baseline} without retries");
            continue;
        }
        if matches!(policy.throttle.map(|t| t.kind), Some(retrysim::policy::throttle::ThrottleKind::Sre { .. })) {
            // Each of the 20 clients judges its own 5 s of history (about 50
            // requests): after its first failures the SRE formula refuses
            // some attempts, whatever retries win back (docs/model.md).
            assert!(attempts > 0.9, "{name}: attempts/intent {attempts}");
            continue;
        }
        // Every other preset retries 503: more attempts, and (the same
        // arrivals and fault draws, a service with spare capacity) more
        // successes than without retries.
        assert!(attempts > 1.0, "{name}: attempts/intent {attempts}");
        assert!(success > baseline + 0.02, "{name}: success {success} vs {baseline} without retries");
    }
}

#[test]
fn the_aws_blog_presets_differ_only_in_jitter() {
    let full = preset("exponential-full-jitter");
    for (name, kind, jitter) in [
        ("exponential-no-jitter", BackoffKind::Exponential, Jitter::None),
        ("equal-jitter", BackoffKind::Exponential, Jitter::Equal),
        ("decorrelated-jitter", BackoffKind::Decorrelated, Jitter::None),
    ] {
        let p = preset(name);
        assert_eq!(p.max_attempts, 6, "{name}");
        assert_eq!(p.per_try_timeout, S, "{name}");
        assert_eq!(p.deadline, 10 * S, "{name}");
        assert_eq!(p.retry_on, full.retry_on, "{name}");
        assert_eq!(p.backoff.kind, kind, "{name}");
        assert_eq!(p.backoff.base, 100 * MS, "{name}");
        assert_eq!(p.backoff.cap, 5 * S, "{name}");
        assert_eq!(p.backoff.jitter, jitter, "{name}");
        assert_eq!(p.budget, None, "{name}");
    }
    assert_eq!(full.backoff.jitter, Jitter::Full);
}

#[test]
fn grpc_default_is_the_a6_example_with_proportional_jitter_and_retry_throttling() {
    let p = preset("grpc-default");
    assert_eq!(p.max_attempts, 4, "maxAttempts");
    assert_eq!(p.backoff.kind, BackoffKind::Exponential);
    assert_eq!(p.backoff.base, 100 * MS, "initialBackoff");
    assert_eq!(p.backoff.cap, S, "maxBackoff");
    assert_eq!(p.backoff.multiplier, 2.0, "backoffMultiplier");
    assert_eq!(p.backoff.jitter, Jitter::Proportional(0.2), "A6 since 2024");
    assert_eq!(p.retry_on, retry_on(&["connect_error", "503"]), "UNAVAILABLE");
    assert_eq!(p.per_try_timeout, NEVER, "gRPC has no per-attempt timeout");
    assert_ne!(p.deadline, NEVER);
    assert!(p.respect_retry_after, "grpc-retry-pushback-ms");
    assert_eq!(
        budget(&p),
        BudgetSpec { kind: BudgetKind::TokenBucket { max_tokens: 10.0, token_ratio: 0.1 }, scope: BudgetScope::Client },
        "retryThrottling"
    );
}

#[test]
fn aws_standard_has_the_standard_mode_retry_quota() {
    let p = preset("aws-standard");
    assert_eq!(p.max_attempts, 3);
    assert_eq!(p.backoff.kind, BackoffKind::Exponential);
    assert_eq!(p.backoff.base, S);
    assert_eq!(p.backoff.multiplier, 2.0);
    assert_eq!(p.backoff.cap, 20 * S, "MAX_BACKOFF");
    assert_eq!(p.backoff.jitter, Jitter::Full);
    assert!(!p.respect_retry_after);
    assert_eq!(
        budget(&p),
        BudgetSpec {
            kind: BudgetKind::Quota {
                initial: 500.0,
                retry_cost: 5.0,
                timeout_cost: 10.0,
                throttling_cost: 5.0,
                success_refund: 1.0,
            },
            scope: BudgetScope::Client,
        }
    );
}

#[test]
fn aws_standard_2026_has_the_updated_costs_and_base_delay() {
    let p = preset("aws-standard-2026");
    let old = preset("aws-standard");
    assert_eq!(p.max_attempts, 3);
    assert_eq!(p.backoff.base, 50 * MS, "transient base delay");
    assert_eq!(p.backoff.cap, 20 * S);
    assert_eq!(p.backoff.jitter, Jitter::Full);
    assert_eq!(p.retry_on, old.retry_on);
    assert!(p.respect_retry_after, "x-amz-retry-after");
    // botocore 1.44.8 retries/standard.py: throttling_base_scale 1, _RETRY_AFTER_MAX_ADDITIONAL 5.
    assert_eq!(p.backoff.throttling_base, Some(S), "1s base after throttling");
    assert_eq!(p.retry_after_clamp, Some(5 * S), "x-amz-retry-after clamped to backoff + 5s");
    assert_eq!(
        budget(&p),
        BudgetSpec {
            kind: BudgetKind::Quota {
                initial: 500.0,
                retry_cost: 14.0,
                timeout_cost: 14.0,
                throttling_cost: 5.0,
                success_refund: 1.0,
            },
            scope: BudgetScope::Client,
        }
    );
}

#[test]
fn istio_default_is_two_retries_on_envoys_backoff() {
    let p = preset("istio-default");
    assert_eq!(p.max_attempts, 3, "attempts = 2 retries");
    assert_eq!(p.retry_on, retry_on(&["connect_error", "reset", "503"]), "connect-failure, refused-stream, 503");
    assert_eq!((p.backoff.base, p.backoff.cap, p.backoff.jitter), (25 * MS, 250 * MS, Jitter::Full));
    assert_eq!(p.per_try_timeout, NEVER, "no per-try timeout");
    assert!(p.budget.is_none(), "Istio sets max_retries to 2^32 - 1");
    assert!(!p.respect_retry_after);
}

#[test]
fn envoy_default_is_one_retry_with_25ms_jittered_backoff() {
    let p = preset("envoy-default");
    assert_eq!(p.max_attempts, 2, "num_retries = 1");
    assert_eq!(p.backoff.kind, BackoffKind::Exponential);
    assert_eq!(p.backoff.base, 25 * MS, "base_interval");
    assert_eq!(p.backoff.cap, 250 * MS, "max_interval = 10 x base");
    assert_eq!(p.backoff.jitter, Jitter::Full, "fully jittered");
    assert_eq!(p.per_try_timeout, 15 * S, "the route timeout");
    assert_eq!(p.deadline, 15 * S, "the route timeout includes all retries");
    assert_eq!(
        p.retry_on,
        retry_on(&["connect_error", "reset", "500", "502", "503", "504"]),
        "5xx,reset,connect-failure"
    );
    assert!(p.retry_unknown_without_key);
    assert!(!p.respect_retry_after);
    assert_eq!(
        budget(&p),
        BudgetSpec {
            kind: BudgetKind::Concurrency { budget_percent: 0.0, min_retry_concurrency: 3 },
            scope: BudgetScope::Client,
        },
        "circuit breaker max_retries = 3"
    );
}

#[test]
fn finagle_budget_is_the_default_retry_budget_on_the_full_jitter_loop() {
    let p = preset("finagle-budget");
    assert_eq!(
        budget(&p),
        BudgetSpec {
            kind: BudgetKind::Ratio { ratio: 0.2, min_per_sec: 10.0, ttl: 10 * S },
            scope: BudgetScope::Client,
        },
        "percentCanRetry 0.2, minRetriesPerSec 10, ttl 10 s"
    );
    // Everything but the budget is the exponential-full-jitter preset.
    let full = preset("exponential-full-jitter");
    assert_eq!(Policy { name: full.name.clone(), budget: None, ..p }, full);
}

#[test]
fn sre_book_allows_three_attempts_and_ten_percent_retries() {
    let p = preset("sre-book");
    assert_eq!(p.max_attempts, 3, "per-request retry budget of three attempts");
    assert_eq!(p.backoff.kind, BackoffKind::Exponential);
    assert_eq!(p.backoff.jitter, Jitter::Full, "randomized exponential backoff");
    let b = budget(&p);
    assert_eq!(b.scope, BudgetScope::Client, "per-client retry budget");
    match b.kind {
        BudgetKind::Ratio { ratio, min_per_sec, ttl } => {
            assert_eq!(ratio, 0.1, "retries below 10%");
            assert_eq!(min_per_sec, 1.0);
            assert_eq!(ttl, 10 * S);
        }
        other => panic!("sre-book: expected a ratio budget, got {other:?}"),
    }
}

#[test]
fn the_original_presets_are_unchanged() {
    let none = preset("no-retries");
    assert_eq!(none.max_attempts, 1);
    assert_eq!(none.per_try_timeout, S);
    assert_eq!(none.deadline, NEVER);

    let immediate = preset("immediate-retries");
    assert_eq!(immediate.max_attempts, 6);
    assert_eq!(immediate.backoff.kind, BackoffKind::None);

    let full = preset("exponential-full-jitter");
    assert_eq!(full.max_attempts, 6);
    assert_eq!(full.backoff.kind, BackoffKind::Exponential);
    assert_eq!(full.backoff.base, 100 * MS);
    assert_eq!(full.backoff.cap, 5 * S);
    assert_eq!(full.retry_on, retry_on(&["connect_error", "timeout", "503"]));
}

#[test]
fn grpc_hedging_is_a6_hedging_with_retry_throttling() {
    use retrysim::policy::hedge::HedgeDelay;
    let p = preset("grpc-hedging");
    assert_eq!(p.max_attempts, 1, "a hedgingPolicy instead of a retryPolicy");
    assert_eq!(p.per_try_timeout, NEVER, "gRPC has only the call's deadline");
    let h = p.hedging.as_ref().expect("[hedging]");
    assert_eq!((h.max_attempts, h.delay, h.cancel), (3, HedgeDelay::Fixed(100 * MS), true));
    assert_eq!(h.non_fatal, retry_on(&["500", "503"]));
    assert_eq!(budget(&p).kind, BudgetKind::TokenBucket { max_tokens: 10.0, token_ratio: 0.1 });
}

#[test]
fn envoy_hedge_hedges_on_its_per_try_timeout_within_the_route_timeout() {
    use retrysim::policy::hedge::HedgeDelay;
    let p = preset("envoy-hedge");
    let h = p.hedging.as_ref().expect("[hedging]");
    assert_eq!(h.delay, HedgeDelay::Fixed(p.per_try_timeout), "Envoy hedges when the per-try timeout fires");
    assert_eq!(h.max_attempts, 2, "num_retries 1 (Envoy's default): one hedge");
    assert_eq!(p.deadline, 15 * S, "the default route timeout");
    assert!(h.cancel);
}

#[test]
fn aws_adaptive_is_standard_2026_with_the_cubic_rate_limiter() {
    use retrysim::policy::throttle::ThrottleKind;
    let p = preset("aws-adaptive");
    let t = p.throttle.expect("[throttle]");
    assert_eq!((t.kind, t.scope), (ThrottleKind::AwsAdaptive, BudgetScope::Client));
    assert_eq!(p.backoff.base, 50 * MS);
    assert_eq!(p.backoff.throttling_base, Some(S), "botocore throttling_base_scale 1");
    assert_eq!(p.retry_after_clamp, Some(5 * S), "_RETRY_AFTER_MAX_ADDITIONAL = 5");
    let standard = preset("aws-standard-2026");
    let stripped = Policy { name: standard.name.clone(), throttle: None, ..p };
    assert_eq!(stripped, standard, "everything else is aws-standard-2026 (botocore 1.44.8 standard mode)");
}

#[test]
fn sre_throttle_is_the_books_formula_on_the_books_retries() {
    use retrysim::policy::throttle::ThrottleKind;
    let p = preset("sre-throttle");
    let t = p.throttle.expect("[throttle]");
    assert_eq!(t.kind, ThrottleKind::Sre { k: 2.0, window: 120 * S }, "K = 2 over two minutes");
    assert_eq!(t.scope, BudgetScope::Client);
    let book = preset("sre-book");
    assert_eq!(Policy { name: book.name.clone(), throttle: None, ..p }, book);
}

#[test]
fn finagle_backup_requests_send_one_backup_at_the_p99_for_one_percent_extra_load() {
    use retrysim::policy::hedge::HedgeDelay;
    let p = preset("finagle-backup-requests");
    let h = p.hedging.as_ref().expect("[hedging]");
    assert_eq!(h.max_attempts, 2);
    assert_eq!(h.max_extra_load, Some(0.01));
    match h.delay {
        HedgeDelay::Quantile(q) => assert!((q - (1.0 - 0.01)).abs() < 1e-12, "100 - 100 * maxExtraLoad: {q}"),
        other => panic!("a learnt percentile, got {other:?}"),
    }
    assert!(h.cancel, "the loser is interrupted");
}
