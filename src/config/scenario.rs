//! The validated, typed form of one variant of an experiment: what the
//! model is built from. Names are resolved to indices.

use crate::engine::Nanos;
use crate::model::Dist;
use crate::policy::Policy;

/// One fully resolved variant of an experiment.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The variant's name.
    pub variant: String,
    /// `[experiment] name`.
    pub name: String,
    /// Intents arrive during [0, duration).
    pub duration: Nanos,
    /// Excluded from summary metrics.
    pub warmup: Nanos,
    pub seed: u64,
    pub replications: u32,
    /// Time-series resolution.
    pub bin: Nanos,
    /// Multiplies every client's rate.
    pub load_scale: f64,
    /// Simulated time allowed after `duration` for everything to finish.
    pub drain_limit: Nanos,
    /// `[experiment] show`: extra metrics for the table and the report.
    pub show: Vec<String>,
    /// `[experiment] question`: what the experiment asks.
    pub question: Option<String>,
    /// `[experiment] answer`: metric paths that answer it (see
    /// [`crate::output::answer`]), checked against the experiment.
    pub answer: Vec<String>,
    /// `[experiment] equivalence`: per metric, the margin within which a
    /// variant's difference to the baseline counts as no difference.
    pub equivalence: Vec<(String, Margin)>,
    pub clients: Vec<ClientSpec>,
    pub operations: Vec<OperationSpec>,
    pub services: Vec<ServiceSpec>,
    pub faults: Vec<FaultSpec>,
    /// Message queues (`[[queues]]`).
    pub queues: Vec<MessageQueueSpec>,
    /// Call edges; edge `i < clients.len()` is client `i`'s edge to its
    /// target, then every service's calls in order.
    pub edges: Vec<EdgeSpec>,
    /// Side-effect kinds named by services' `commits`, in order of appearance.
    pub effect_kinds: Vec<String>,
}

/// An equivalence margin: how large a difference to the baseline still
/// counts as none.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Margin {
    /// In the metric's own unit (seconds, a share as a fraction, a count).
    Absolute(f64),
    /// A share of the baseline's mean (`"5%"`).
    Relative(f64),
}

impl Margin {
    /// The margin in the metric's unit, given the baseline's mean.
    pub fn of(self, baseline_mean: f64) -> f64 {
        match self {
            Margin::Absolute(m) => m,
            Margin::Relative(r) => r * baseline_mean.abs(),
        }
    }
}

/// A client class.
#[derive(Debug, Clone)]
pub struct ClientSpec {
    pub name: String,
    /// Client instances: each has its own budget (scope = client) and breaker.
    pub count: u32,
    /// How intents arrive.
    pub mode: ClientMode,
    pub target: usize,
    pub operation: usize,
    pub policy: Policy,
    pub idempotency_key: bool,
    /// Share of intents that reuse an earlier intent's key with another body.
    pub key_reuse_rate: f64,
    /// The edge this client's attempts travel on.
    pub edge: usize,
    /// The criticality its requests carry down the call graph.
    pub priority: Priority,
    /// For an open-loop client: arrivals are made by thinning a Poisson
    /// process of this schedule (a rate at least the client's own at every
    /// time): a candidate at `t` becomes an intent with probability
    /// rate(t) ÷ ceiling(t), drawn from its own number, and the intent
    /// keeps the candidate's number. Runs whose schedules differ only
    /// below one ceiling (a frontier's spike sizes) then share their
    /// arrivals outside the difference and every intent's random numbers.
    pub thinned_from: Option<RateSchedule>,
}

/// A request's criticality class (gRPC / Netflix criticality), carried
/// from the client down the whole call graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Priority {
    #[default]
    Critical,
    Degraded,
    Sheddable,
}

impl Priority {
    /// The name written in `priority`.
    pub fn label(self) -> &'static str {
        match self {
            Priority::Critical => "critical",
            Priority::Degraded => "degraded",
            Priority::Sheddable => "sheddable",
        }
    }
}

/// How a client class generates intents.
#[derive(Debug, Clone)]
pub enum ClientMode {
    /// Poisson arrivals at a scheduled total rate.
    Open(RateSchedule),
    /// One intent in flight per instance, then a think time.
    Closed { think_time: Dist },
    /// Every instance sends one intent, uniformly over [at, at + spread).
    Burst { at: Nanos, spread: Nanos },
}

impl ClientMode {
    /// The mode's name as written in `mode`.
    pub fn label(&self) -> &'static str {
        match self {
            ClientMode::Open(_) => "open",
            ClientMode::Closed { .. } => "closed",
            ClientMode::Burst { .. } => "burst",
        }
    }
}

impl ClientSpec {
    /// Instances that keep state of their own (per-instance budgets,
    /// breakers and throttles, closed and burst clients); 0 when none does.
    pub fn stateful_instances(&self) -> u32 {
        use crate::policy::budget::BudgetScope;
        let per_instance = self.policy.breaker.is_some()
            || !matches!(self.mode, ClientMode::Open(_))
            || self.policy.budget.is_some_and(|b| b.scope == BudgetScope::Client)
            || self.policy.throttle.is_some_and(|t| t.scope == BudgetScope::Client);
        if per_instance { self.count } else { 0 }
    }
}

/// A piecewise-constant total arrival rate: (from time, per second), sorted,
/// the first at 0.
#[derive(Debug, Clone, PartialEq)]
pub struct RateSchedule(pub Vec<(Nanos, f64)>);

impl RateSchedule {
    /// The rate in force at time `t` and the time of the next change.
    pub fn rate_at(&self, t: Nanos) -> (f64, Option<Nanos>) {
        let i = self.0.partition_point(|&(at, _)| at <= t).saturating_sub(1);
        (self.0[i].1, self.0.get(i + 1).map(|&(at, _)| at))
    }
}

/// An operation and its retry safety.
#[derive(Debug, Clone)]
pub struct OperationSpec {
    pub name: String,
    pub idempotent: bool,
    /// The work a status query of it takes at its target (`on_unknown = "query"`).
    pub status_time: Nanos,
}

/// The default `status_time`: 1 ms.
pub const STATUS_TIME: Nanos = 1_000_000;

/// What a service answers when its queue is full.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OverloadAnswer {
    pub status: u16,
    pub retry_after: Option<Nanos>,
}

/// A service.
#[derive(Debug, Clone)]
pub struct ServiceSpec {
    pub name: String,
    pub workers: u32,
    /// Waiting room beyond the workers; `None` = unbounded.
    pub queue_limit: Option<u32>,
    /// Which queued request is served next.
    pub discipline: Discipline,
    /// Service-side rate limiting, if any.
    pub rate_limit: Option<RateLimit>,
    pub service_time: Dist,
    pub drop_expired: bool,
    pub overload: OverloadAnswer,
    /// The side-effect kind recorded per execution (index into
    /// [`Scenario::effect_kinds`]), if any.
    pub commits: Option<usize>,
    /// Optimistic concurrency: the number of rows requests write, if any.
    pub occ_rows: Option<u32>,
    /// Downstream calls, in file order.
    pub calls: Vec<CallSpec>,
    /// The idempotency ledger, if any.
    pub ledger: Option<LedgerSpec>,
    /// Each request's service time grows by this much per other request
    /// in service on its host when it starts (0 = none).
    pub per_inflight: Nanos,
    /// Hosts, balancing and the server-side defences of each host.
    pub hosts: HostsSpec,
    /// A host whose queue grows past a limit runs out of memory, if set.
    pub memory: Option<MemoryLimit>,
    /// Periodic repair jobs at this service (`[[services.reconcilers]]`).
    pub reconcilers: Vec<ReconcilerSpec>,
}

/// A reconciler: every `every`, it takes at most `batch` of the service's
/// idempotency placeholders left in progress and downstream effects left
/// unknown (an `after_commit` call or an outbox relay that finally failed)
/// older than `older_than`, oldest first, and resolves each by its
/// `action`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReconcilerSpec {
    pub every: Nanos,
    pub older_than: Nanos,
    pub batch: u32,
    pub action: ReconcileAction,
}

/// What a reconciler does with a downstream effect left unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReconcileAction {
    /// Asks the downstream for the intent's state by its key (a status
    /// query) and sends the effect again with the same key when it is not
    /// there: the intent is completed.
    QueryDownstream,
    /// Asks the downstream to undo whatever it did under the intent's key,
    /// then undoes the service's own write: the intent is rolled back.
    Compensate,
}

/// `memory_limit` and `restart_after`: a host holding more queued requests
/// than `queued` crashes (as a `crash` fault does) and is down for
/// `restart_after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryLimit {
    /// Queued requests a host holds; one more and it crashes.
    pub queued: u32,
    /// How long the crashed host is down.
    pub restart_after: Nanos,
}

/// A service's hosts and how callers are spread over them, with the
/// server-side defences each host applies at its door.
#[derive(Debug, Clone, PartialEq)]
pub struct HostsSpec {
    /// Hosts, each with `workers`, its own queue, rate limiter, memory ledger.
    pub replicas: u32,
    pub balancer: Balancer,
    /// A retry avoids the hosts this call has already tried (Envoy previous_hosts).
    pub retry_other_host: bool,
    pub outlier: Option<OutlierSpec>,
    /// Adaptive concurrency limit of each host, if any.
    pub concurrency_limit: Option<LimitSpec>,
    /// Busy share of workers above which a request of each class is shed
    /// (indexed by [`Priority`]; above 1 = never).
    pub shed_above: [f64; 3],
}

impl Default for HostsSpec {
    fn default() -> Self {
        Self {
            replicas: 1,
            balancer: Balancer::RoundRobin,
            retry_other_host: false,
            outlier: None,
            concurrency_limit: None,
            shed_above: [f64::INFINITY; 3],
        }
    }
}

impl HostsSpec {
    /// Whether any class is shed by priority.
    pub fn sheds(&self) -> bool {
        self.shed_above.iter().any(|t| t.is_finite())
    }
}

/// How a caller picks a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Balancer {
    /// In turn, skipping hosts that are ejected or already tried.
    RoundRobin,
    /// Uniformly at random.
    Random,
    /// Power of two choices on active requests (Envoy LEAST_REQUEST, choice_count 2).
    LeastRequest,
    /// Power of two choices on peak-EWMA latency × (pending + 1) (Finagle, tower).
    PeakEwma,
}

impl Balancer {
    /// The name written in `balancer`.
    pub fn label(self) -> &'static str {
        match self {
            Balancer::RoundRobin => "round_robin",
            Balancer::Random => "random",
            Balancer::LeastRequest => "least_request",
            Balancer::PeakEwma => "peak_ewma",
        }
    }
}

/// Envoy's consecutive-5xx outlier detection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutlierSpec {
    /// Consecutive 5xx answers (connect errors, timeouts and resets count
    /// as 5xx) that eject a host.
    pub consecutive_5xx: u32,
    /// Time between ejection sweeps (unejection, backoff decay).
    pub interval: Nanos,
    /// Ejection time = base_ejection × times ejected, at most max_ejection.
    pub base_ejection: Nanos,
    pub max_ejection: Nanos,
    /// No ejection that would leave more than this share of hosts ejected.
    pub max_ejection_percent: f64,
}

/// An adaptive concurrency limit (Netflix concurrency-limits).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LimitSpec {
    pub kind: LimitKind,
    pub initial: f64,
    pub min: f64,
    pub max: f64,
}

/// The update rule of a concurrency limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LimitKind {
    /// AIMDLimit: +1 while inflight >= limit/2, × backoff_ratio on a drop
    /// or an RTT above `timeout`.
    Aimd { backoff_ratio: f64, timeout: Nanos },
    /// VegasLimit: queue estimate limit × (1 − rtt_noload / rtt) against
    /// log10-based alpha, beta and threshold.
    Vegas { smoothing: f64, probe_multiplier: u32 },
    /// Gradient2Limit: gradient of a long-term RTT average over the last RTT.
    Gradient2 { smoothing: f64, long_window: u32, queue_size: f64 },
}

impl LimitKind {
    /// The name written in `kind`.
    pub fn label(&self) -> &'static str {
        match self {
            LimitKind::Aimd { .. } => "aimd",
            LimitKind::Vegas { .. } => "vegas",
            LimitKind::Gradient2 { .. } => "gradient2",
        }
    }
}

/// A look-aside cache in front of a call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CacheSpec {
    /// The key population.
    pub keys: u32,
    /// Zipf exponent of key popularity (0 = uniform).
    pub zipf: f64,
    /// How long a filled entry stays.
    pub ttl: Nanos,
}

/// A service's idempotency ledger (DESIGN §4).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LedgerSpec {
    /// Survives a crash (`durable`) or not (`memory`).
    pub durable: bool,
    /// Records expire this long after they were created.
    pub ttl: Nanos,
    /// A duplicate of a request in progress waits for it (else gets 409).
    pub wait: bool,
    /// A placeholder older than this is recovered by the next request;
    /// `NEVER` = never recovered.
    pub lease: Nanos,
    /// The record is written in the same transaction as the business write.
    pub atomic: bool,
    /// Non-atomic: how long after the business write the record is written.
    pub record_delay: Nanos,
}

/// Queue discipline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Discipline {
    Fifo,
    Lifo,
    /// Adaptive LIFO with CoDel: while the queue has not been empty for
    /// `interval` it serves newest first and sheds requests that waited
    /// longer than `target`; otherwise FIFO, shedding after `interval`.
    Codel {
        target: Nanos,
        interval: Nanos,
    },
}

/// A token bucket at a service's door answering `status` when empty.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// Tokens per second.
    pub rate: f64,
    pub burst: f64,
    pub status: u16,
    pub retry_after: Option<Nanos>,
}

/// A downstream call a service makes while handling a request.
#[derive(Debug, Clone)]
pub struct CallSpec {
    pub to: usize,
    /// `None`: the operation of the request being handled.
    pub operation: Option<usize>,
    pub policy: Policy,
    pub key: KeyMode,
    pub when: When,
    /// The callee's deadline is at most the caller's remaining deadline.
    pub propagate_deadline: bool,
    /// Outbox: how long the relay takes to pick the event up.
    pub relay_delay: Dist,
    /// Outbox: the consumer deduplicates by stable event id.
    pub dedup: bool,
    /// The edge this call's attempts travel on.
    pub edge: usize,
    /// A look-aside cache before the call, if any.
    pub cache: Option<CacheSpec>,
    /// The message queue the call goes through (`via`), if any: the call
    /// publishes a message, which the queue delivers to `to`.
    pub via: Option<usize>,
}

/// A message queue with at-least-once delivery (SQS semantics): a
/// delivery not acknowledged within `visibility_timeout` makes the message
/// visible again; after `max_receives` deliveries it goes to the
/// dead-letter queue; a message older than `retention` is dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageQueueSpec {
    pub name: String,
    pub visibility_timeout: Nanos,
    /// `None`: no dead-letter queue (delivered until acknowledged or dropped).
    pub max_receives: Option<u32>,
    /// [`crate::engine::NEVER`]: kept until delivered.
    pub retention: Nanos,
    /// The service its messages are delivered to (every call through it names it).
    pub consumer: usize,
}

/// What idempotency key a downstream call carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyMode {
    /// The key of the request being handled, if it had one.
    Forward,
    /// A key derived from the intent: always present, stable across retries.
    Derive,
    /// No key.
    None,
}

/// When a downstream call is made relative to the service's commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    BeforeCommit,
    AfterCommit,
    /// By a relay after the commit, retried until it succeeds or its deadline passes.
    Outbox,
}

/// A fault window.
#[derive(Debug, Clone)]
pub struct FaultSpec {
    pub name: String,
    pub target: usize,
    /// One host of the target (`"api[2]"`), or `None` for all of them.
    pub host: Option<u32>,
    pub start: Nanos,
    /// `NEVER` = to the end of the run.
    pub end: Nanos,
    pub kind: FaultKind,
}

/// What a fault does.
#[derive(Debug, Clone, PartialEq)]
pub enum FaultKind {
    /// Answers on arrival, before any work, with this probability.
    Error { status: u16, probability: f64, retry_after: Option<Nanos> },
    /// The work executes (and commits) but its answer never arrives.
    ResponseLoss { probability: f64 },
    /// The request is lost on its way in: it never reaches the service (it
    /// never executes) and its caller sees its per-try timeout.
    RequestLoss { probability: f64 },
    /// The work executes (and commits), then the connection is reset: the
    /// caller sees `reset` instead of the answer.
    Reset { probability: f64 },
    /// At `start` the service crashes: requests in it are reset, a memory
    /// ledger is emptied, and arrivals get connect errors until it is back
    /// `restart_after` later (the fault window's end).
    Crash,
    /// Connect errors: the service cannot be reached.
    Outage,
    /// Only this fraction of the workers is left.
    Brownout { capacity: f64 },
    /// Extra one-way delay on the way to the service.
    Latency { extra: Dist },
    /// Requests on edge `edge` vanish (the callers time out).
    Partition { edge: usize },
    /// Service times are multiplied by `factor` while it lasts; work in
    /// service goes on at the new speed for the rest of its time.
    Slowdown { factor: f64 },
    /// At `start` the caches of the target's calls are emptied.
    CacheFlush,
    /// The host refuses connections (connect errors).
    HostDown,
}

impl FaultKind {
    /// The name written in `kind`.
    pub fn label(&self) -> &'static str {
        match self {
            FaultKind::Error { .. } => "error",
            FaultKind::ResponseLoss { .. } => "response_loss",
            FaultKind::RequestLoss { .. } => "request_loss",
            FaultKind::Reset { .. } => "reset",
            FaultKind::Crash => "crash",
            FaultKind::Outage => "outage",
            FaultKind::Brownout { .. } => "brownout",
            FaultKind::Latency { .. } => "latency",
            FaultKind::Partition { .. } => "partition",
            FaultKind::Slowdown { .. } => "slowdown",
            FaultKind::CacheFlush => "cache_flush",
            FaultKind::HostDown => "host_down",
        }
    }
}

/// A call edge: who calls which service, with what latency.
#[derive(Debug, Clone)]
pub struct EdgeSpec {
    /// `client->service` or `service->service`.
    pub name: String,
    /// Who makes the calls on this edge.
    pub caller: Caller,
    pub to: usize,
    /// One-way latency.
    pub latency: Dist,
}

/// The caller on an edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// A client class.
    Client(usize),
    /// Call `index` of service `service`.
    Service { service: usize, index: usize },
}

impl FaultSpec {
    /// Whether the fault is in force at `now` on host `replica` of service `svc`.
    #[inline]
    pub fn hits(&self, svc: usize, replica: u32, now: Nanos) -> bool {
        self.target == svc && now >= self.start && now < self.end && self.host.is_none_or(|h| h == replica)
    }

    /// How the target is written: `api` or `api[2]`.
    pub fn target_label(&self, services: &[ServiceSpec]) -> String {
        match self.host {
            Some(h) => format!("{}[{h}]", services[self.target].name),
            None => services[self.target].name.clone(),
        }
    }
}

impl Scenario {
    /// The retry policy of an edge.
    #[inline]
    pub fn edge_policy(&self, edge: usize) -> &Policy {
        match self.edges[edge].caller {
            Caller::Client(c) => &self.clients[c].policy,
            Caller::Service { service, index } => &self.services[service].calls[index].policy,
        }
    }
}
