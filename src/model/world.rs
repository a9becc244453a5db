//! One run of one scenario: open-loop clients sending attempts to services
//! with workers and a queue, per-try timeouts, retries and faults.

use super::{Id, Slab};
use crate::config::{FaultKind, Scenario};
use crate::engine::{EventQueue, KeyedRandom, NEVER, Nanos, Stream, from_secs_f64};
use crate::metrics::{RunCollector, RunResult, TraceDecision, TraceRecord};
use crate::policy::budget::{Budget, BudgetScope};
use crate::policy::decision::attempt_timeout;
use crate::policy::{Decision, DenyReason, Outcome, RetryContext, decide};
use std::collections::VecDeque;

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
}

/// Events of the world. Small and copyable.
#[derive(Debug, Clone, Copy)]
enum Event {
    /// The next intent of a client class arrives.
    Arrival { client: u32 },
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
    arrivals: Stream,
    next_seq: u64,
    /// Retry budgets: one per instance, one shared, or none.
    budgets: Vec<Budget>,
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
                ClientState {
                    arrivals: rng.stream(&[purpose::ARRIVAL, c as u64]),
                    next_seq: 0,
                    budgets,
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
            w.schedule_next_arrival(c, 0);
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
                Event::Arrival { client } => self.on_arrival(client as usize),
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

    fn schedule_next_arrival(&mut self, c: usize, from: Nanos) {
        let spec = &self.s.clients[c];
        let mut t = from;
        loop {
            let (rate, next_change) = spec.rate_at(t);
            let r = rate * self.s.load_scale;
            if r > 0.0 {
                let gap = -self.clients[c].arrivals.unit().ln() / r;
                let at = t.saturating_add(from_secs_f64(gap));
                if next_change.is_none_or(|nc| at < nc) {
                    if at < self.s.duration {
                        self.q.schedule_at(at, Event::Arrival { client: c as u32 });
                    }
                    return;
                }
            }
            match next_change {
                Some(nc) if nc < self.s.duration => t = nc,
                _ => return,
            }
        }
    }

    fn on_arrival(&mut self, c: usize) {
        let now = self.q.now();
        let spec = &self.s.clients[c];
        let seq = self.clients[c].next_seq;
        self.clients[c].next_seq += 1;
        let in_window = self.m.in_window(now);
        let deadline_at = if spec.policy.deadline == NEVER {
            NEVER
        } else {
            now.saturating_add(spec.policy.deadline)
        };
        let id = self.intents.insert(Intent {
            client: c as u32,
            seq,
            arrived: now,
            deadline_at,
            attempts: 0,
            current: None,
            outstanding: 0,
            done: false,
            ok: false,
            in_window,
            commits: 0,
            prev_wait: 0,
            sent_at: now,
            last_outcome: None,
            instance: if self.clients[c].budgets.len() > 1 {
                (self.rng.unit(&[purpose::INSTANCE, c as u64, seq])
                    * self.clients[c].budgets.len() as f64) as u32
            } else {
                0
            },
            retry_cost: 0.0,
            traced: self.options.trace_fraction > 0.0
                && self.rng.unit(&[purpose::TRACE, c as u64, seq]) < self.options.trace_fraction,
        });
        if in_window {
            self.m.intents += 1;
            self.m.client_intents[c] += 1;
        }
        self.m.series.at(now).offered += 1;
        self.send(id);
        self.schedule_next_arrival(c, now);
    }

    /// Sends the next attempt of an intent on its client's edge.
    fn send(&mut self, intent: Id) {
        let now = self.q.now();
        let Some(it) = self.intents.get_mut(intent) else {
            return;
        };
        let spec = &self.s.clients[it.client as usize];
        it.attempts += 1;
        it.outstanding += 1;
        it.sent_at = now;
        if let Some(b) = self.clients[it.client as usize]
            .budgets
            .get_mut(it.instance as usize)
        {
            b.on_send(now, it.attempts > 1);
        }
        let (attempt, seq, client, in_window, deadline_at) = (
            it.attempts,
            it.seq,
            it.client as u64,
            it.in_window,
            it.deadline_at,
        );
        let edge = spec.edge;
        let service = spec.target;
        let req = self.requests.insert(Request {
            intent,
            attempt,
            edge: edge as u32,
            service: service as u32,
            abandoned: false,
            demand: 0,
            answer: Outcome::Ok,
            retry_after: None,
        });
        self.intents.get_mut(intent).expect("live").current = Some(req);
        if in_window {
            self.m.edge_attempts[edge] += 1;
        }
        self.m.series.at(now).attempts += 1;
        let timeout = attempt_timeout(&spec.policy, now, deadline_at);
        if timeout != NEVER {
            self.q.schedule_in(timeout, Event::Expire { req });
        }
        let lat = self.s.edges[edge].latency.sample(
            &self.rng,
            &[
                purpose::LATENCY_OUT,
                client,
                seq,
                edge as u64,
                attempt as u64,
            ],
        );
        self.q.schedule_in(lat, Event::Reach { req });
    }

    /// Key words identifying a request for random draws: (client, seq, edge, attempt).
    fn key_of(&self, req: &Request) -> [u64; 4] {
        let it = self
            .intents
            .get(req.intent)
            .expect("a request's intent lives until the request has left");
        [
            it.client as u64,
            it.seq,
            req.edge as u64,
            req.attempt as u64,
        ]
    }

    fn on_reach(&mut self, id: Id) {
        let now = self.q.now();
        let Some(req) = self.requests.get(id) else {
            return;
        };
        let svc = req.service as usize;
        let key = self.key_of(req);
        if self.intents.get(req.intent).is_some_and(|it| it.in_window) {
            self.m.service_arrivals[svc] += 1;
        }
        for (fi, f) in self.s.faults.iter().enumerate() {
            if f.target != svc || now < f.start || now >= f.end {
                continue;
            }
            match f.kind {
                FaultKind::Error {
                    status,
                    probability,
                    retry_after,
                } => {
                    let u =
                        self.rng
                            .unit(&[purpose::FAULT, key[0], key[1], key[2], key[3], fi as u64]);
                    if u < probability {
                        self.reply(id, Outcome::Status(status), retry_after);
                        return;
                    }
                }
            }
        }
        let spec = &self.s.services[svc];
        if self.services[svc].busy < spec.workers {
            self.start(id);
        } else if spec
            .queue_limit
            .is_none_or(|l| self.services[svc].queue.len() < l as usize)
        {
            self.touch_service(svc, now);
            self.services[svc].queue.push_back(id);
        } else {
            self.reply(
                id,
                Outcome::Status(spec.overload.status),
                spec.overload.retry_after,
            );
        }
    }

    /// Accounts service `svc`'s queue and busy workers up to `now`.
    fn touch_service(&mut self, svc: usize, now: Nanos) {
        let st = &mut self.services[svc];
        let (from, qlen, busy) = (st.last_change, st.queue.len(), st.busy);
        st.last_change = now;
        self.m.service_state(svc, from, now, qlen, busy);
    }

    fn start(&mut self, id: Id) {
        let now = self.q.now();
        let req = self.requests.get(id).expect("live request");
        let svc = req.service as usize;
        let key = self.key_of(req);
        let demand = self.s.services[svc].service_time.sample(
            &self.rng,
            &[purpose::SERVICE, key[0], key[1], key[2], key[3]],
        );
        self.requests.get_mut(id).expect("live").demand = demand;
        self.touch_service(svc, now);
        self.services[svc].busy += 1;
        self.q.schedule_in(demand, Event::Done { req: id });
    }

    fn on_done(&mut self, id: Id) {
        let now = self.q.now();
        let req = self.requests.get(id).expect("a request in service is live");
        let (svc, demand, abandoned, intent) =
            (req.service as usize, req.demand, req.abandoned, req.intent);
        self.touch_service(svc, now);
        self.services[svc].busy -= 1;
        let it = self.intents.get_mut(intent).expect("live intent");
        if self.s.services[svc].commits.is_some() {
            it.commits += 1;
        }
        if it.in_window {
            self.m.service_work_ns[svc] += demand as f64;
            if abandoned {
                self.m.service_wasted_ns[svc] += demand as f64;
            }
        }
        if abandoned {
            self.m.series.at(now).wasted[svc] += 1;
        }
        self.reply(id, Outcome::Ok, None);
        self.next_from_queue(svc);
    }

    fn next_from_queue(&mut self, svc: usize) {
        let now = self.q.now();
        while let Some(next) = self.services[svc].queue.front().copied() {
            self.touch_service(svc, now);
            self.services[svc].queue.pop_front();
            let expired = self.requests.get(next).is_some_and(|r| r.abandoned);
            if self.s.services[svc].drop_expired && expired {
                self.leave(next);
                continue;
            }
            self.start(next);
            return;
        }
    }

    /// Sends an answer back to the caller.
    fn reply(&mut self, id: Id, outcome: Outcome, retry_after: Option<Nanos>) {
        let req = self.requests.get(id).expect("live request");
        let key = self.key_of(req);
        let edge = req.edge as usize;
        let lat = self.s.edges[edge].latency.sample(
            &self.rng,
            &[purpose::LATENCY_BACK, key[0], key[1], key[2], key[3]],
        );
        let r = self.requests.get_mut(id).expect("live");
        r.answer = outcome;
        r.retry_after = retry_after;
        self.q.schedule_in(lat, Event::Reply { req: id });
    }

    fn on_reply(&mut self, id: Id) {
        let Some(req) = self.requests.get(id) else {
            return;
        };
        let (intent, outcome, retry_after) = (req.intent, req.answer, req.retry_after);
        let waiting = self
            .intents
            .get(intent)
            .is_some_and(|it| it.current == Some(id));
        if waiting {
            self.intents.get_mut(intent).expect("live").current = None;
            self.on_outcome(intent, outcome, retry_after);
        }
        self.leave(id);
    }

    fn on_expire(&mut self, id: Id) {
        let Some(req) = self.requests.get_mut(id) else {
            return;
        };
        let intent = req.intent;
        let waiting = self
            .intents
            .get(intent)
            .is_some_and(|it| it.current == Some(id));
        if waiting {
            self.requests.get_mut(id).expect("live").abandoned = true;
            self.intents.get_mut(intent).expect("live").current = None;
            self.on_outcome(intent, Outcome::Timeout, None);
        }
    }

    /// A request leaves the system: the intent may now be settled.
    fn leave(&mut self, id: Id) {
        let Some(req) = self.requests.remove(id) else {
            return;
        };
        let Some(it) = self.intents.get_mut(req.intent) else {
            return;
        };
        it.outstanding -= 1;
        if it.done && it.outstanding == 0 {
            let it = self.intents.remove(req.intent).expect("live");
            self.settle_effects(&it);
        }
    }

    /// The caller learnt the outcome of its current attempt.
    fn on_outcome(&mut self, id: Id, outcome: Outcome, retry_after: Option<Nanos>) {
        let now = self.q.now();
        let it = self.intents.get(id).expect("live intent");
        let retryable = self.s.clients[it.client as usize]
            .policy
            .retry_on
            .contains(outcome);
        let (retry, refund) = (it.attempts > 1, it.retry_cost);
        let budget_grants = match self.clients[it.client as usize]
            .budgets
            .get_mut(it.instance as usize)
        {
            Some(b) => {
                b.on_outcome(outcome, retry, retryable, refund);
                outcome == Outcome::Ok || b.grants(now, outcome)
            }
            None => true,
        };
        if outcome == Outcome::Ok {
            self.trace(id, outcome, TraceDecision::Done);
            self.finish(id, true, String::new());
            return;
        }
        let it = self.intents.get(id).expect("live intent");
        let spec = &self.s.clients[it.client as usize];
        let policy = &spec.policy;
        let u = self.rng.unit(&[
            purpose::JITTER,
            it.client as u64,
            it.seq,
            spec.edge as u64,
            it.attempts as u64,
        ]);
        let backoff_wait = policy.backoff.delay(it.attempts, it.prev_wait, u);
        let ctx = RetryContext {
            outcome,
            idempotent: self.s.operations[spec.operation].idempotent,
            key_sent: spec.idempotency_key,
            attempts_made: it.attempts,
            now,
            deadline_at: it.deadline_at,
            retry_after,
            backoff_wait,
            breaker_closed: true,
            budget_grants,
        };
        match decide(policy, &ctx) {
            Decision::Retry { wait } => {
                let (client, instance) = (it.client as usize, it.instance as usize);
                let cost = self.clients[client]
                    .budgets
                    .get_mut(instance)
                    .map_or(0.0, |b| b.spend_retry(outcome));
                self.trace(id, outcome, TraceDecision::Retry);
                let it = self.intents.get_mut(id).expect("live");
                it.retry_cost = cost;
                it.prev_wait = wait;
                it.last_outcome = Some(outcome);
                if wait == 0 {
                    self.send(id);
                } else {
                    self.q.schedule_in(wait, Event::Retry { intent: id });
                }
            }
            Decision::Deny(reason) => {
                if it.in_window {
                    *self.m.denials.entry(reason).or_insert(0) += 1;
                }
                self.trace(id, outcome, TraceDecision::Deny(reason));
                let label = if reason == DenyReason::NotRetryable {
                    format!("{outcome}")
                } else {
                    format!("{outcome} ({reason})")
                };
                self.finish(id, false, label);
            }
        }
    }

    /// Records the current attempt of a traced intent.
    fn trace(&mut self, id: Id, outcome: Outcome, decision: TraceDecision) {
        let it = self.intents.get(id).expect("live intent");
        if !it.traced {
            return;
        }
        let edge = self.s.clients[it.client as usize].edge as u32;
        let remaining_deadline =
            (it.deadline_at != NEVER).then(|| it.deadline_at.saturating_sub(it.sent_at));
        let budget = self.clients[it.client as usize]
            .budgets
            .get(it.instance as usize)
            .and_then(Budget::level);
        let record = TraceRecord {
            client: it.client,
            intent: it.seq,
            edge,
            attempt: it.attempts,
            sent: it.sent_at,
            wait: if it.attempts > 1 { it.prev_wait } else { 0 },
            trigger: it.last_outcome,
            remaining_deadline,
            outcome,
            decision,
            budget,
        };
        self.m.trace.push(record);
    }

    /// The intent has ended, as the client reports it.
    fn finish(&mut self, id: Id, ok: bool, failure: String) {
        let now = self.q.now();
        let it = self.intents.get_mut(id).expect("live intent");
        it.done = true;
        it.ok = ok;
        let latency = now - it.arrived;
        let (in_window, settled) = (it.in_window, it.outstanding == 0);
        if ok {
            self.m.series.record_success(now, latency);
        }
        if in_window {
            if ok {
                self.m.ok += 1;
                self.m.latency.record(latency);
            } else {
                *self.m.failures.entry(failure).or_insert(0) += 1;
            }
        }
        if settled {
            let it = self.intents.remove(id).expect("live");
            self.settle_effects(&it);
        }
    }

    /// Counts an intent's side effects once all of its requests have left.
    fn settle_effects(&mut self, it: &Intent) {
        if !it.in_window || it.commits == 0 {
            return;
        }
        let op = self.s.clients[it.client as usize].operation;
        if it.commits > 1 && !self.s.operations[op].idempotent {
            self.m.duplicates += 1;
        }
        if !it.ok {
            self.m.orphan_commits += it.commits as u64;
        }
    }
}
