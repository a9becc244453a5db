//! One run of one scenario: clients sending intents through a graph of
//! services, with per-try timeouts, retries at every edge, budgets,
//! breakers, downstream calls, outbox relays, side effects and faults.
//!
//! Entities live in generational slabs: an *intent* (the business
//! operation), *calls* (one logical call on one edge, with its retry loop:
//! the client's call, a service's downstream call, an outbox relay) and
//! *requests* (one attempt of a call, from send until it leaves the system).

use super::ledger::{Ledger, Lookup};
use super::{Id, Slab};
use crate::config::validate::MAX_EFFECT_KINDS;
use crate::config::{Caller, FaultKind, KeyMode, Scenario, When};
use crate::engine::random::hash_words;
use crate::engine::{EventQueue, KeyedRandom, NEVER, Nanos, Stream, from_secs_f64};
use crate::metrics::{RunCollector, RunResult, Tally, TraceDecision, TraceRecord};
use crate::model::balance::HostPicker;
use crate::model::token_bucket::TokenBucket;
use crate::policy::Policy;
use crate::policy::breaker::Breaker;
use crate::policy::budget::Budget;
use crate::policy::call::CallState;
use crate::policy::hedge::Hedger;
use crate::policy::throttle::Throttle;
use crate::policy::{DenyReason, Outcome};
use retrysim_policy::machine::{Action, Machine, Purpose};
use std::collections::{HashMap, VecDeque};

mod arrivals;
mod balancer;
mod build;
mod cache;
mod caller;
mod cancel;
mod downstream;
mod hedging;
mod idempotency;
mod instances;
mod limiter;
mod messaging;
mod queueing;
mod reconcile;
mod request;
mod server;
mod settle;
mod speed;
mod stepping;

pub(crate) use cache::Cache;
use instances::Instances;
use limiter::Limiter;
use request::{LimitSlot, Phase, Request};

/// What a random draw is for: the first word of every key.
mod purpose {
    pub const ARRIVAL: u64 = 1;
    pub const SERVICE: u64 = 3;
    pub const LATENCY_OUT: u64 = 4;
    pub const LATENCY_BACK: u64 = 5;
    pub const FAULT: u64 = 6;
    pub const JITTER: u64 = 7;
    pub const TRACE: u64 = 8;
    pub const INSTANCE: u64 = 9;
    pub const THINK: u64 = 10;
    pub const RELAY_DELAY: u64 = 11;
    /// The client-side throttle's draw for an attempt.
    pub const THROTTLE: u64 = 13;
    /// Key derivation (not draws): child calls, relays, OCC rows.
    pub const CHILD: u64 = 20;
    pub const RELAY: u64 = 21;
    pub const ROW: u64 = 22;
    pub const KEY: u64 = 23;
    pub const BODY: u64 = 24;
    pub const REUSE: u64 = 12;
    pub const SCOPE: u64 = 25;
    /// A balancer's choice of host.
    pub const BALANCE: u64 = 26;
    /// The key a request asks a cache for, and a warm cache's expiry times.
    pub const CACHE_KEY: u64 = 27;
    pub const CACHE_WARM: u64 = 28;
    /// Vegas' probe jitter.
    pub const LIMIT_PROBE: u64 = 29;
    /// Whether a candidate arrival of a thinned process becomes an intent.
    pub const THIN: u64 = 30;
    /// The key base of a reconciler's repair call.
    pub const RECONCILE: u64 = 31;
    /// The key base of a queue's delivery.
    pub const DELIVERY: u64 = 32;
}

/// A call that fills no cache entry.
const NO_FILL: u32 = u32::MAX;

/// Events between two looks at the interrupt flag.
const INTERRUPT_POLL: u64 = 1 << 16;

/// The `instance` of an open-loop arrival: drawn when the intent arrives.
const OPEN: u32 = u32::MAX;

/// Events of the world. Small and copyable.
#[derive(Debug, Clone, Copy)]
enum Event {
    /// The next intent of a client class arrives (from an instance, or
    /// [`OPEN`] for open-loop clients).
    Arrival { client: u32, instance: u32 },
    /// A request reaches its service.
    Reach { req: Id },
    /// A service finishes a request's own work (its service time).
    Done { req: Id },
    /// An answer reaches the caller.
    Reply { req: Id },
    /// The caller's timeout for an attempt fires.
    Expire { req: Id },
    /// A wait is over (backoff, or an outbox relay's pickup): send the next attempt.
    Retry { call: Id },
    /// A `crash` fault hits its service.
    Crash { fault: u32 },
    /// A non-atomic ledger writes its record, `record_delay` after the business write.
    RecordWrite { write: Id },
    /// A brownout of a service ended: its workers are back.
    Capacity { service: u32 },
    /// A slowdown fault starts or ends: work in service changes speed.
    Speed { fault: u32 },
    /// Outlier detection's sweep at a service: unejections and backoff decay.
    Sweep { service: u32 },
    /// A `cache_flush` fault empties its service's caches.
    Flush { fault: u32 },
    /// A hedged call's delay for copy `copy` is over.
    Hedge { call: Id, copy: u32 },
    /// Reconciler `reconciler` of service `service` makes a pass.
    Reconcile { service: u32, reconciler: u32 },
    /// Delivery `receipt` of a message was not acknowledged in its
    /// visibility timeout (if it still is the latest).
    Visible { message: Id, receipt: u32 },
    /// A message's retention is over.
    Retention { message: Id },
}

#[derive(Clone)]
struct Intent {
    client: u32,
    seq: u64,
    arrived: Nanos,
    /// The client instance that sent it.
    instance: u32,
    /// Where its counts go: its client class, inside the measurement window or not.
    tally: Tally,
    /// Whether this intent's attempts go into the trace.
    traced: bool,
    done: bool,
    ok: bool,
    /// Requests in the system plus outbox relays still running.
    outstanding: u32,
    /// Commits of non-idempotent operations, per side-effect kind.
    effects: [u16; MAX_EFFECT_KINDS],
    /// Effects the intent should have caused and did not.
    lost: u16,
    /// Outbox events written.
    events_sent: u16,
    /// Outbox slots whose event a deduplicating consumer has applied.
    applied: u32,
    /// The idempotency key the client uses for it (another intent's when the
    /// client reuses keys).
    key: u64,
    /// When its client had the result.
    ended: Nanos,
    /// Its downstream effects left unknown that a reconciler has yet to resolve.
    unresolved: u16,
    /// The services (index below 64) where a request of it passed its
    /// commit: the business records a status query finds by its key.
    committed_at: u64,
}

/// Who is waiting for a call's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// The client that sent the intent.
    Client,
    /// A request being handled by a service (a downstream call).
    Parent(Id),
    /// An outbox relay (nobody waits; a failure is a lost effect).
    Relay,
    /// The queue delivering message `message`, delivery `receipt`.
    Delivery { message: Id, receipt: u32 },
    /// A reconciler repairing unknown effect `item` of service `service`.
    Reconciler { service: u32, item: u64, asked: bool },
}

/// One logical call on one edge with its retry loop.
#[derive(Clone)]
struct Call {
    intent: Id,
    edge: u32,
    owner: Owner,
    operation: u32,
    /// The idempotency key it sends, if any, and its body's fingerprint.
    idem_key: Option<u64>,
    fingerprint: u64,
    /// Base of the random keys of this call's attempts.
    key: u64,
    /// Its call machine under its policy: its state (attempts, deadline,
    /// previous wait, budget refund, a throttle token held), the previous
    /// outcome and a hedged call's copies out.
    machine: Machine<Id>,
    /// The attempt the caller is waiting for.
    current: Option<Id>,
    /// Hosts (replica index below 32) this call has tried, for `retry_other_host`.
    tried: u32,
    /// The cache key a successful answer fills, or [`NO_FILL`].
    fill: u32,
    /// How long the throttle held the current attempt back.
    throttle_wait: Nanos,
    /// An attempt of it committed at its target: a status query finds it.
    committed: bool,
    /// A reconciler's compensation: each attempt asks the target to undo
    /// what it did under the intent's key.
    undo: bool,
}

/// A service's plan: downstream call indices by phase.
#[derive(Clone)]
struct Plan {
    before: Vec<usize>,
    after: Vec<usize>,
    outbox: Vec<usize>,
}

/// What a service's hosts share: its plan, its rows, its ledgers, its
/// balancer and its callers' caches.
#[derive(Clone)]
struct ServiceState {
    /// OCC row versions.
    versions: Vec<u64>,
    plan: Plan,
    /// Idempotency ledgers: one shared by every host (durable), or one per
    /// host (memory, with replicas).
    ledgers: Vec<LedgerState>,
    /// Its first host in the world's hosts; the others follow.
    first_host: u32,
    /// How its callers pick among its hosts.
    picker: HostPicker,
    /// Whether it sheds some class by priority.
    sheds: bool,
    /// Look-aside caches of its calls, by call index.
    caches: Vec<Option<Cache>>,
    /// Downstream effects left unknown for its reconcilers, oldest first
    /// (by when the call failed, then by number), and those being repaired.
    unresolved: std::collections::BTreeMap<(Nanos, u64), reconcile::Unresolved>,
    repairing: HashMap<u64, (Nanos, reconcile::Unresolved, crate::config::ReconcileAction)>,
}

/// An idempotency ledger and the duplicates waiting on it.
#[derive(Clone)]
struct LedgerState {
    ledger: Ledger,
    /// Duplicates held until the request in progress finishes (`in_progress = "wait"`).
    waiters: HashMap<u64, Vec<Id>>,
}

/// One host of a service: its workers, waiting room and door.
#[derive(Clone)]
struct HostState {
    service: u32,
    /// Its index among the service's hosts.
    replica: u32,
    /// Its metrics slot when the service has replicas.
    slot: Option<u32>,
    busy: u32,
    /// Waiting requests and when they arrived.
    queue: VecDeque<(Id, Nanos)>,
    /// When the queue was last empty (CoDel).
    last_empty: Nanos,
    /// Its rate limiter.
    bucket: TokenBucket,
    last_change: Nanos,
    /// Its ledger among its service's.
    ledger: u32,
    /// Crashed: arrivals get connect errors until then.
    down_until: Nanos,
    /// Crashes so far (a record write from before a crash is lost).
    epoch: u32,
    /// Adaptive concurrency limit and the requests admitted under it.
    limiter: Option<Limiter>,
    admitted: u32,
    /// The slowdown factor the work in service here was last timed with.
    speed: f64,
    /// [`World::fill_workers`] is serving the queue (further up the stack).
    filling: bool,
}

/// A non-atomic ledger's record write in flight.
#[derive(Clone)]
struct PendingWrite {
    host: u32,
    key: u64,
    epoch: u32,
}

#[derive(Clone)]
struct ClientState {
    /// Open loop: the arrival stream and the next intent number.
    arrivals: Stream,
    next_seq: u64,
    /// The budgets, breakers and throttles of the instances.
    guards: Instances,
    /// Closed loop: intents started per instance.
    rounds: Vec<u32>,
}

/// The bytes one client instance of `spec`'s class keeps for itself once it
/// has sent: its budget, breaker and throttle records and, closed loop, its
/// count of intents started (0 for an instance of an open-loop class
/// without per-instance state).
pub fn bytes_per_instance(spec: &crate::config::ClientSpec) -> usize {
    let closed = matches!(spec.mode, crate::config::ClientMode::Closed { .. });
    instances::bytes_per_instance(spec) + if closed { size_of::<u32>() } else { 0 }
}

impl ClientState {
    /// The budget of `instance` (or the shared one).
    #[inline]
    fn budget(&mut self, instance: u32) -> Option<&mut Budget> {
        self.guards.budget(instance)
    }

    /// The breaker of `instance`.
    #[inline]
    fn breaker(&mut self, instance: u32) -> Option<&mut Breaker> {
        self.guards.breaker(instance)
    }

    /// The throttle of `instance` (or the shared one).
    #[inline]
    fn throttle(&mut self, instance: u32) -> Option<&mut Throttle> {
        self.guards.throttle(instance)
    }
}

/// Budget, breaker and throttle of a service's downstream edge (shared by
/// its workers), and the hedging state of any edge.
#[derive(Clone)]
struct EdgeState {
    budget: Option<Budget>,
    breaker: Option<Breaker>,
    throttle: Option<Throttle>,
    hedger: Option<Hedger>,
    /// Outbox edges with consumer dedup: the bit of their events in `Intent::applied`.
    dedup_slot: Option<u8>,
    /// The message queue its calls publish to, if any.
    via: Option<u32>,
}

/// Options of one run that are not part of the scenario.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions {
    /// Fraction of intents whose attempts are traced (0 = no trace).
    pub trace_fraction: f64,
    /// Keep only the metrics of the finished run: drop its time series,
    /// latency histogram and trace (sweeps and tune summarise thousands of
    /// runs and need none of them, so their memory does not grow with runs).
    pub lean: bool,
}

impl RunOptions {
    /// Options of runs of which only the metrics count (sweeps, tune).
    pub fn metrics_only() -> Self {
        Self { lean: true, ..Self::default() }
    }
}

/// The work of a run's first `t` of simulated time, for the progress bar:
/// the intents its clients offer by then (open-loop rates as at the start,
/// a closed-loop or burst instance as ten intents a second), in thousandths.
/// Higher loads cost more per simulated second, so a sweep's estimate
/// weighs its runs by this rather than by their length alone.
pub fn progress_units(s: &Scenario, t: Nanos) -> u64 {
    let per_s: f64 = s
        .clients
        .iter()
        .map(|c| match &c.mode {
            crate::config::ClientMode::Open(rates) => rates.rate_at(0).0,
            _ => 10.0 * c.count as f64,
        })
        .sum();
    let per_s = if per_s.is_finite() { per_s.max(1.0) } else { 1.0 };
    (t as f64 / 1e9 * per_s * 1000.0) as u64
}

/// The state of one run.
#[derive(Clone)]
pub struct World<'s> {
    s: &'s Scenario,
    rng: KeyedRandom,
    q: EventQueue<Event>,
    intents: Slab<Intent>,
    calls: Slab<Call>,
    /// The actions of the call machine's last input, being carried out
    /// (kept to reuse its buffer).
    actions: Vec<Action<Id>>,
    requests: Slab<Request>,
    writes: Slab<PendingWrite>,
    /// The number the next unknown effect handed to a reconciler gets.
    next_unresolved: u64,
    /// Messages in the queues (published, not yet acknowledged, dead-lettered or dropped).
    messages: Slab<messaging::Message>,
    /// Each queue's visible messages and deliveries on their way.
    queues: Vec<messaging::QueueState>,
    /// Per service, the queues it consumes.
    consumers: Vec<Vec<usize>>,
    services: Vec<ServiceState>,
    hosts: Vec<HostState>,
    clients: Vec<ClientState>,
    edges: Vec<EdgeState>,
    m: RunCollector,
    options: RunOptions,
    /// Whether any fault is a slowdown (else service times need no look at faults).
    slowdowns: bool,
    /// Whether any fault is a brownout (else every host has all its workers).
    brownouts: bool,
    /// Simulated time of the arrival window already reported to [`crate::progress`].
    progress_reported: Nanos,
    /// Zero-latency hops (a request reaching its service, an answer reaching
    /// its caller) and zero timeouts, waiting for the step that caused them
    /// to finish: [`World::advance_to`] handles them first in, first out,
    /// before it takes the next event from the queue. Not events: they never
    /// enter the queue and do not count in [`EventQueue::events_processed`].
    /// Empty between two steps of the run.
    immediate: VecDeque<Event>,
}

/// Runs replication `replication` of `scenario` to its end.
pub fn simulate(scenario: &Scenario, replication: u32) -> RunResult {
    World::new(scenario, replication, RunOptions::default()).run()
}

/// Runs replication `replication` of `scenario` with `options`.
pub fn simulate_with(scenario: &Scenario, replication: u32, options: RunOptions) -> RunResult {
    let mut result = World::new(scenario, replication, options).run();
    if options.lean {
        result.drop_detail();
    }
    result
}

impl<'s> World<'s> {
    /// Processes events until everything has finished or the drain limit.
    pub fn run(mut self) -> RunResult {
        self.advance_to(NEVER);
        self.into_result()
    }

    /// Processes every event due at or before `limit` (and before the run's
    /// end: the drain limit, or everything settled after `duration`);
    /// returns whether the run goes on after `limit`. The world stays at an
    /// event boundary, so it may be cloned ([`World::branch`]) or advanced
    /// further.
    pub fn advance_to(&mut self, limit: Nanos) -> bool {
        let stop = self.s.duration.saturating_add(self.s.drain_limit);
        let until = stop.min(limit);
        let duration = self.s.duration;
        loop {
            // What the last step caused at zero delay comes before any event.
            let ev = match self.immediate.pop_front() {
                Some(ev) => ev,
                None => {
                    // Ctrl-C: stop early; the caller reports the run as interrupted.
                    if self.q.events_processed().is_multiple_of(INTERRUPT_POLL) {
                        if crate::interrupt::requested() {
                            return false;
                        }
                        self.report_progress(self.q.now());
                    }
                    // Past the arrival window with every intent settled, what is left
                    // are stale timeouts: the run is over.
                    let settled = self.intents.is_empty() && self.writes.is_empty();
                    let Some((_, ev)) = self.q.pop_if(|t| t <= until && !(t >= duration && settled)) else {
                        return self.q.peek_time().is_some_and(|t| t <= stop && !(t >= duration && settled));
                    };
                    ev
                }
            };
            self.handle(ev);
        }
    }

    /// Handles one event (or one zero-delay hop or timeout) at the current time.
    #[inline(always)]
    fn handle(&mut self, ev: Event) {
        match ev {
            Event::Arrival { client, instance } => self.on_arrival(client as usize, instance),
            Event::Reach { req } => self.on_reach(req),
            Event::Done { req } => self.on_done(req),
            Event::Reply { req } => self.on_reply(req),
            Event::Expire { req } => self.on_expire(req),
            Event::Retry { call } => self.send(call),
            Event::Crash { fault } => self.on_crash(fault as usize),
            Event::RecordWrite { write } => self.on_record_write(write),
            Event::Capacity { service } => {
                let st = &self.services[service as usize];
                let first = st.first_host as usize;
                for h in first..first + self.s.services[service as usize].hosts.replicas as usize {
                    self.fill_workers(h);
                }
            }
            Event::Speed { fault } => self.on_speed(fault as usize),
            Event::Sweep { service } => self.on_sweep(service as usize),
            Event::Flush { fault } => self.on_flush(fault as usize),
            Event::Hedge { call, copy } => self.on_hedge(call, copy),
            Event::Reconcile { service, reconciler } => self.on_reconcile(service as usize, reconciler as usize),
            Event::Visible { message, receipt } => self.on_visible(message, receipt),
            Event::Retention { message } => self.on_retention(message),
        }
    }

    /// Tells [`crate::progress`] how much of the arrival window is behind
    /// the run at `now`.
    fn report_progress(&mut self, now: Nanos) {
        let now = now.min(self.s.duration);
        if now > self.progress_reported {
            let done = progress_units(self.s, now) - progress_units(self.s, self.progress_reported);
            crate::progress::advanced(done);
            self.progress_reported = now;
        }
    }

    /// Ends the run where it is and computes its result.
    pub fn into_result(mut self) -> RunResult {
        self.report_progress(self.s.duration);
        let end = self.q.now().max(self.s.duration);
        if self.requests.is_empty() {
            // Every request has left: no host may still count one.
            debug_assert!(self.hosts.iter().all(|h| h.admitted == 0 && h.busy == 0));
            debug_assert!(self.services.iter().all(|s| s.picker.idle()));
        }
        self.close(end);
        for (si, st) in self.services.iter().enumerate() {
            // Placeholders a reconciler should have resolved by now: still in
            // progress longer than a pass interval plus its age threshold.
            let spec = &self.s.services[si];
            if let Some(due) = spec.reconcilers.iter().map(|r| r.every.saturating_add(r.older_than)).min()
                && let Some(before) = end.checked_sub(due)
            {
                let late: usize = st.ledgers.iter().map(|l| l.ledger.stale(before, usize::MAX).len()).sum();
                self.m.inside().unresolved_at_end += late as u64;
            }
            for l in &st.ledgers {
                self.m.stuck_placeholders += l.ledger.stuck();
                if let Some(owner) = l.ledger.stuck_example() {
                    self.m.inside().witness("stuck_placeholder", owner);
                }
            }
        }
        let events = self.q.events_processed();
        self.m.finish(self.s, end, events)
    }

    /// Ends the run at `end`: flushes service state and counts intents that
    /// never finished as failures.
    fn close(&mut self, end: Nanos) {
        for h in 0..self.hosts.len() {
            self.touch_host(h, end);
        }
        for q in 0..self.queues.len() {
            self.queue_depth_to(q, end);
        }
        self.m.series.extend_to(end);
        for id in self.intents.ids() {
            let done = self.intents.get(id).is_some_and(|it| it.done);
            if !done {
                self.finish(id, false, "unfinished (drain limit)".into());
            }
            if let Some(it) = self.intents.remove(id) {
                self.m.counts(it.tally).unresolved_at_end += it.unresolved as u64;
                self.settle_effects(&it);
            }
        }
    }

    /// Whether any fault is a slowdown.
    #[inline]
    fn has_slowdowns(&self) -> bool {
        self.slowdowns
    }

    /// The random-key base of a client's call for intent `seq`.
    fn root_key(client: usize, seq: u64, edge: usize) -> u64 {
        hash_words(0, &[client as u64, seq, edge as u64])
    }
}
