//! One run of one scenario: open-loop clients sending attempts to services
//! with workers and a queue, per-try timeouts, retries and faults.

use super::{Id, Slab};
use crate::config::{FaultKind, Scenario};
use crate::engine::{EventQueue, KeyedRandom, NEVER, Nanos, Stream, from_secs_f64};
use crate::metrics::{RunCollector, RunResult, TraceDecision, TraceRecord};
use crate::policy::breaker::Breaker;
use crate::policy::budget::{Budget, BudgetScope};
use crate::policy::decision::attempt_timeout;
use crate::policy::{Decision, DenyReason, Outcome, RetryContext, decide};
use std::collections::VecDeque;

mod arrivals;
mod caller;
mod server;
mod settle;

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
}

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
    /// A service finishes executing a request.
    Done { req: Id },
    /// An answer reaches the caller.
    Reply { req: Id },
    /// The caller's timeout for an attempt fires.
    Expire { req: Id },
    /// A backoff wait is over: send the next attempt.
    Retry { intent: Id },
}

struct Intent {
    client: u32,
    seq: u64,
    arrived: Nanos,
    deadline_at: Nanos,
    attempts: u32,
    /// The attempt the caller is waiting for.
    current: Option<Id>,
    /// Requests of this intent still in the system.
    outstanding: u32,
    done: bool,
    ok: bool,
    in_window: bool,
    commits: u32,
    /// The wait before the current attempt.
    prev_wait: Nanos,
    /// When the current attempt was sent.
    sent_at: Nanos,
    /// The previous attempt's outcome.
    last_outcome: Option<Outcome>,
    /// Whether this intent's attempts go into the trace.
    traced: bool,
    /// The client instance that sent it (its budget).
    instance: u32,
    /// What the budget charged for the current attempt (refunded on success).
    retry_cost: f64,
}

struct Request {
    intent: Id,
    attempt: u32,
    edge: u32,
    service: u32,
    abandoned: bool,
    demand: Nanos,
    answer: Outcome,
    retry_after: Option<Nanos>,
}

struct ServiceState {
    busy: u32,
    queue: VecDeque<Id>,
    last_change: Nanos,
}

struct ClientState {
    /// Open loop: the arrival stream and the next intent number.
    arrivals: Stream,
    next_seq: u64,
    /// Retry budgets: one per instance, one shared, or none.
    budgets: Vec<Budget>,
    /// Circuit breakers: one per instance, or none.
    breakers: Vec<Breaker>,
    /// Closed loop: intents started per instance.
    rounds: Vec<u32>,
}

impl ClientState {
    /// The budget of `instance` (or the shared one).
    fn budget(&mut self, instance: u32) -> Option<&mut Budget> {
        let i = if self.budgets.len() == 1 {
            0
        } else {
            instance as usize
        };
        self.budgets.get_mut(i)
    }

    /// The breaker of `instance`.
    fn breaker(&mut self, instance: u32) -> Option<&mut Breaker> {
        self.breakers.get_mut(instance as usize)
    }
}

/// Options of one run that are not part of the scenario.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions {
    /// Fraction of intents whose attempts are traced (0 = no trace).
    pub trace_fraction: f64,
}

/// The state of one run.
pub struct World<'s> {
    s: &'s Scenario,
    rng: KeyedRandom,
    q: EventQueue<Event>,
    intents: Slab<Intent>,
    requests: Slab<Request>,
    services: Vec<ServiceState>,
    clients: Vec<ClientState>,
    m: RunCollector,
    options: RunOptions,
}

/// Runs replication `replication` of `scenario` to its end.
pub fn simulate(scenario: &Scenario, replication: u32) -> RunResult {
    World::new(scenario, replication, RunOptions::default()).run()
}

/// Runs replication `replication` of `scenario` with `options`.
pub fn simulate_with(scenario: &Scenario, replication: u32, options: RunOptions) -> RunResult {
    World::new(scenario, replication, options).run()
}

impl<'s> World<'s> {
    /// A world at time 0 with the first arrivals scheduled.
    pub fn new(s: &'s Scenario, replication: u32, options: RunOptions) -> Self {
        let rng = KeyedRandom::for_replication(s.seed, replication as u64);
        let clients = (0..s.clients.len())
            .map(|c| {
                let spec = &s.clients[c];
                let budgets = match spec.policy.budget {
                    None => Vec::new(),
                    Some(b) if b.scope == BudgetScope::Shared => vec![Budget::new(b.kind)],
                    Some(b) => vec![Budget::new(b.kind); spec.count as usize],
                };
                let breakers = match spec.policy.breaker {
                    None => Vec::new(),
                    Some(b) => vec![Breaker::new(b); spec.count as usize],
                };
                let closed = matches!(spec.mode, crate::config::ClientMode::Closed { .. });
                ClientState {
                    arrivals: rng.stream(&[purpose::ARRIVAL, c as u64]),
                    next_seq: 0,
                    budgets,
                    breakers,
                    rounds: if closed {
                        vec![0; spec.count as usize]
                    } else {
                        Vec::new()
                    },
                }
            })
            .collect();
        let services = s
            .services
            .iter()
            .map(|_| ServiceState {
                busy: 0,
                queue: VecDeque::new(),
                last_change: 0,
            })
            .collect();
        let mut w = World {
            s,
            rng,
            q: EventQueue::new(),
            intents: Slab::default(),
            requests: Slab::default(),
            services,
            clients,
            m: RunCollector::new(s),
            options,
        };
        for c in 0..s.clients.len() {
            w.schedule_first_arrivals(c);
        }
        w
    }

    /// Processes events until everything has finished or the drain limit.
    pub fn run(mut self) -> RunResult {
        let stop = self.s.duration.saturating_add(self.s.drain_limit);
        while let Some(t) = self.q.peek_time() {
            // Past the arrival window with every intent settled, what is left
            // are stale timeouts: the run is over.
            if t > stop || (t >= self.s.duration && self.intents.is_empty()) {
                break;
            }
            let (_, ev) = self.q.pop().expect("peeked");
            match ev {
                Event::Arrival { client, instance } => self.on_arrival(client as usize, instance),
                Event::Reach { req } => self.on_reach(req),
                Event::Done { req } => self.on_done(req),
                Event::Reply { req } => self.on_reply(req),
                Event::Expire { req } => self.on_expire(req),
                Event::Retry { intent } => self.send(intent),
            }
        }
        let end = self.q.now().max(self.s.duration);
        self.close(end);
        let events = self.q.events_processed();
        self.m.finish(self.s, end, events)
    }

    /// Ends the run at `end`: flushes service state and counts intents that
    /// never finished as failures.
    fn close(&mut self, end: Nanos) {
        for i in 0..self.services.len() {
            self.touch_service(i, end);
        }
        self.m.series.extend_to(end);
        for id in self.intents.ids() {
            let done = self.intents.get(id).is_some_and(|it| it.done);
            if !done {
                self.finish(id, false, "unfinished (drain limit)".into());
            }
            if let Some(it) = self.intents.remove(id) {
                self.settle_effects(&it);
            }
        }
    }
}
