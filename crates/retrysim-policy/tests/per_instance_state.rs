//! A breaker keeps its window in 16-bit counts and a budget or breaker can
//! serve many instances in turn (`replace_state`, `replace_memory`), and
//! neither changes a decision: checked against a plain model of the breaker
//! (ten buckets, each with its index and 64-bit counts) and against
//! budgets and breakers of their own, over long random sequences.

use retrysim_policy::Outcome;
use retrysim_policy::breaker::{Breaker, BreakerKind, BreakerMemory, BreakerSpec, BreakerState, is_failure};
use retrysim_policy::budget::{Budget, BudgetKind, BudgetState};
use retrysim_policy::time::Nanos;

const MS: Nanos = 1_000_000;

/// The breaker as it is specified: ten buckets of `window / 10`, each
/// holding the index of the bucket it counts; the window is the buckets of
/// the last ten indices.
struct Model {
    spec: BreakerSpec,
    state: BreakerState,
    buckets: [(u64, u64, u64, u64); 10],
    streak: u32,
    opened: u64,
}

impl Model {
    fn new(spec: BreakerSpec) -> Self {
        Self { spec, state: BreakerState::Closed, buckets: [(u64::MAX, 0, 0, 0); 10], streak: 0, opened: 0 }
    }

    fn state(&mut self, now: Nanos) -> BreakerState {
        if let BreakerState::Open { until } = self.state
            && now >= until
        {
            self.state = BreakerState::HalfOpen { sent: 0, succeeded: 0, bad: 0 };
        }
        self.state
    }

    fn allows(&mut self, now: Nanos) -> bool {
        match self.state(now) {
            BreakerState::Closed => true,
            BreakerState::Open { .. } => false,
            BreakerState::HalfOpen { sent, .. } => !self.spec.retries_only && sent < self.spec.half_open_probes,
        }
    }

    fn on_send(&mut self, now: Nanos) {
        if let BreakerState::HalfOpen { sent, succeeded, bad } = self.state(now) {
            self.state = BreakerState::HalfOpen { sent: sent + 1, succeeded, bad };
        }
    }

    fn trip(&mut self, now: Nanos) {
        self.state = BreakerState::Open { until: now + self.spec.open_for };
        self.opened += 1;
    }

    fn close(&mut self) {
        self.state = BreakerState::Closed;
        self.buckets = [(u64::MAX, 0, 0, 0); 10];
        self.streak = 0;
    }

    fn on_outcome(&mut self, now: Nanos, outcome: Outcome, latency: Nanos) {
        let failed = is_failure(outcome);
        let slow = matches!(self.spec.kind, BreakerKind::SlowCall { duration, .. } if latency > duration);
        match self.state(now) {
            BreakerState::Open { .. } => {}
            BreakerState::HalfOpen { sent, succeeded, bad } => {
                if let BreakerKind::SlowCall { ratio, .. } = self.spec.kind {
                    let bad = bad + u32::from(slow || (failed && self.spec.failure_ratio.is_some()));
                    let ended = succeeded + 1;
                    if ended < self.spec.half_open_probes {
                        self.state = BreakerState::HalfOpen { sent, succeeded: ended, bad };
                    } else if bad as f64 >= ratio * ended as f64
                        || self.spec.failure_ratio.is_some_and(|r| bad as f64 >= r * ended as f64)
                    {
                        self.trip(now);
                    } else {
                        self.close();
                    }
                } else if failed {
                    self.trip(now);
                } else if succeeded + 1 >= self.spec.half_open_probes {
                    self.close();
                } else {
                    self.state = BreakerState::HalfOpen { sent, succeeded: succeeded + 1, bad };
                }
            }
            BreakerState::Closed => {
                if let BreakerKind::Consecutive { failures } = self.spec.kind {
                    self.streak = if failed { self.streak + 1 } else { 0 };
                    if self.streak >= failures {
                        self.trip(now);
                    }
                    return;
                }
                let b = now / (self.spec.window / 10).max(1);
                let slot = &mut self.buckets[(b % 10) as usize];
                if slot.0 != b {
                    *slot = (b, 0, 0, 0);
                }
                if failed {
                    slot.2 += 1;
                } else {
                    slot.1 += 1;
                }
                slot.3 += u64::from(slow);
                let (mut ok, mut bad, mut slow) = (0, 0, 0);
                for x in self.buckets.iter().filter(|x| x.0 != u64::MAX && x.0 + 10 > b) {
                    (ok, bad, slow) = (ok + x.1, bad + x.2, slow + x.3);
                }
                let total = ok + bad;
                if total == 0 || total < self.spec.min_requests as u64 {
                    return;
                }
                let failing = self.spec.failure_ratio.is_some_and(|r| bad as f64 >= r * total as f64);
                let slowing = matches!(self.spec.kind,
                    BreakerKind::SlowCall { ratio, .. } if slow as f64 >= ratio * total as f64);
                if failing || slowing {
                    self.trip(now);
                }
            }
        }
    }
}

/// SplitMix64, for the random sequences.
struct Draws(u64);

impl Draws {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn specs() -> Vec<BreakerSpec> {
    let base = BreakerSpec {
        kind: BreakerKind::FailureRatio,
        failure_ratio: Some(0.5),
        window: 1000 * MS,
        min_requests: 8,
        open_for: 300 * MS,
        half_open_probes: 3,
        retries_only: false,
    };
    vec![
        base,
        BreakerSpec { retries_only: true, ..base },
        BreakerSpec { window: 30 * MS + 7, min_requests: 2, ..base },
        BreakerSpec { kind: BreakerKind::SlowCall { duration: 50 * MS, ratio: 0.4 }, failure_ratio: None, ..base },
        BreakerSpec { kind: BreakerKind::SlowCall { duration: 50 * MS, ratio: 0.6 }, ..base },
        BreakerSpec {
            kind: BreakerKind::Consecutive { failures: 3 },
            failure_ratio: None,
            window: 0,
            min_requests: 0,
            ..base
        },
    ]
}

fn outcome(d: &mut Draws, failure_share: u64) -> Outcome {
    match d.below(100) {
        x if x < failure_share / 2 => Outcome::Status(503),
        x if x < failure_share => Outcome::Timeout,
        x if x < failure_share + 5 => Outcome::Status(404),
        _ => Outcome::Ok,
    }
}

#[test]
fn the_breaker_decides_as_its_plain_model_over_random_sequences() {
    for (i, spec) in specs().into_iter().enumerate() {
        let (mut b, mut m) = (Breaker::new(spec), Model::new(spec));
        let mut d = Draws(i as u64);
        let mut now = 0;
        for step in 0..200_000 {
            // Bursts of failures now and then, gaps of up to two windows.
            now += match d.below(1000) {
                0 => 2000 * MS,
                x if x < 50 => d.below(200) * MS,
                _ => d.below(3 * MS),
            };
            let share = if (now / (5000 * MS)).is_multiple_of(3) { 60 } else { 10 };
            if d.below(2) == 0 {
                assert_eq!(b.allows(now), m.allows(now), "spec {i}, step {step}");
                b.on_send(now);
                m.on_send(now);
            } else {
                let latency = d.below(100) * MS;
                let o = outcome(&mut d, share);
                b.on_outcome(now, o, latency);
                m.on_outcome(now, o, latency);
            }
            assert_eq!(b.state(now), m.state(now), "spec {i}, step {step}");
        }
        assert_eq!(b.opened(), m.opened, "spec {i}");
        assert!(m.opened > 20, "spec {i}: the sequence opens the breaker often ({})", m.opened);
    }
}

#[test]
fn a_bucket_past_65_535_calls_counts_on_exactly() {
    let spec = BreakerSpec {
        kind: BreakerKind::FailureRatio,
        failure_ratio: Some(0.5),
        window: 10_000 * MS,
        min_requests: 10,
        open_for: 300 * MS,
        half_open_probes: 3,
        retries_only: false,
    };
    let mut b = Breaker::new(spec);
    // 70 000 successes in one bucket, then failures: it opens at the 70 000th.
    for _ in 0..70_000 {
        b.on_outcome(5 * MS, Outcome::Ok, 0);
    }
    for _ in 0..69_999 {
        b.on_outcome(6 * MS, Outcome::Status(500), 0);
    }
    assert_eq!(b.state(6 * MS), BreakerState::Closed);
    b.on_outcome(6 * MS, Outcome::Status(500), 0);
    assert_eq!(b.state(6 * MS), BreakerState::Open { until: 306 * MS });
}

#[test]
fn one_breaker_serves_many_memories_as_many_breakers_would() {
    for (i, spec) in specs().into_iter().enumerate() {
        let n = 7;
        let mut own: Vec<Breaker> = (0..n).map(|_| Breaker::new(spec)).collect();
        let mut parked: Vec<Option<BreakerMemory>> = (0..n).map(|_| Some(BreakerMemory::new(&spec))).collect();
        let mut served = Breaker::new(spec);
        let mut bound: Option<usize> = None;
        let mut d = Draws(100 + i as u64);
        let mut now = 0;
        for step in 0..50_000 {
            now += d.below(2 * MS);
            let k = d.below(n as u64) as usize;
            if bound != Some(k) {
                let memory = served.replace_memory(parked[k].take().expect("parked"));
                if let Some(j) = bound {
                    parked[j] = Some(memory);
                }
                bound = Some(k);
            }
            let o = outcome(&mut d, if (now / (3000 * MS)).is_multiple_of(2) { 70 } else { 5 });
            let latency = d.below(100) * MS;
            assert_eq!(served.allows(now), own[k].allows(now), "spec {i}, step {step}");
            served.on_send(now);
            own[k].on_send(now);
            served.on_outcome(now, o, latency);
            own[k].on_outcome(now, o, latency);
            assert_eq!(served.state(now), own[k].state(now), "spec {i}, step {step}");
            assert_eq!(served.opened(), own[k].opened(), "spec {i}, step {step}");
        }
        assert!(own.iter().all(|b| b.opened() > 5), "spec {i}: every breaker opened often");
    }
}

#[test]
fn one_budget_serves_many_states_as_many_budgets_would() {
    let kinds = [
        BudgetKind::TokenBucket { max_tokens: 10.0, token_ratio: 0.1 },
        BudgetKind::Quota {
            initial: 50.0,
            retry_cost: 5.0,
            timeout_cost: 10.0,
            throttling_cost: 5.0,
            success_refund: 1.0,
        },
        BudgetKind::Ratio { ratio: 0.2, min_per_sec: 1.0, ttl: 1000 * MS },
        BudgetKind::Concurrency { budget_percent: 20.0, min_retry_concurrency: 2 },
    ];
    for (i, kind) in kinds.into_iter().enumerate() {
        let n = 5;
        let mut own: Vec<Budget> = (0..n).map(|_| Budget::new(kind)).collect();
        let mut parked: Vec<Option<BudgetState>> = (0..n).map(|_| Some(BudgetState::new(kind))).collect();
        let mut served = Budget::new(kind);
        let mut bound: Option<usize> = None;
        let mut d = Draws(200 + i as u64);
        let (mut now, mut denied) = (0, 0);
        for step in 0..50_000 {
            now += d.below(5 * MS);
            let k = d.below(n as u64) as usize;
            if bound != Some(k) {
                let state = served.replace_state(parked[k].take().expect("parked"));
                if let Some(j) = bound {
                    parked[j] = Some(state);
                }
                bound = Some(k);
            }
            let o = outcome(&mut d, if (now / (3000 * MS)).is_multiple_of(2) { 70 } else { 5 });
            let retry = d.below(3) == 0;
            match d.below(20) {
                0..10 => {
                    served.on_send(now, retry);
                    own[k].on_send(now, retry);
                    if retry {
                        assert_eq!(served.spend_retry(o), own[k].spend_retry(o));
                    }
                }
                10..19 => {
                    let refund = if retry { 5.0 } else { 0.0 };
                    served.on_outcome(o, retry, o != Outcome::Ok, refund);
                    own[k].on_outcome(o, retry, o != Outcome::Ok, refund);
                }
                _ => {
                    served.on_cancel(retry);
                    own[k].on_cancel(retry);
                }
            }
            let grants = served.grants(now, o);
            assert_eq!(grants, own[k].grants(now, o), "kind {i}, step {step}");
            assert_eq!(served.level(), own[k].level(), "kind {i}, step {step}");
            assert_eq!(served.counts(now), own[k].counts(now), "kind {i}, step {step}");
            denied += u32::from(!grants);
        }
        assert!(denied > 100, "kind {i}: the budgets deny now and then ({denied})");
    }
}

#[test]
fn a_state_of_another_kind_is_taken_as_a_fresh_one() {
    let mut bucket = Budget::new(BudgetKind::TokenBucket { max_tokens: 10.0, token_ratio: 0.1 });
    bucket.on_outcome(Outcome::Timeout, false, true, 0.0);
    let ratio = BudgetState::new(BudgetKind::Ratio { ratio: 0.1, min_per_sec: 0.0, ttl: 1000 * MS });
    bucket.replace_state(ratio);
    assert_eq!(bucket.level(), Some(10.0));
    let spec = specs()[5];
    let mut consecutive = Breaker::new(spec);
    consecutive.on_outcome(0, Outcome::Timeout, 0);
    consecutive.on_outcome(0, Outcome::Timeout, 0);
    consecutive.replace_memory(BreakerMemory::new(&specs()[0]));
    consecutive.on_outcome(0, Outcome::Timeout, 0);
    consecutive.on_outcome(0, Outcome::Timeout, 0);
    assert_eq!(consecutive.state(0), BreakerState::Closed, "a fresh streak: two failures of three");
    consecutive.on_outcome(0, Outcome::Timeout, 0);
    assert!(matches!(consecutive.state(0), BreakerState::Open { .. }));
}
