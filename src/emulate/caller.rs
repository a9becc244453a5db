//! Callers: one call on one edge run by `retrysim-policy`'s sans-IO call
//! machine ([`retrysim_policy::Call`]) over real HTTP/1.1 connections.
//! The machine decides (attempts, backoff, Retry-After, budgets, breakers,
//! throttles, hedged copies, per-try timeouts, the deadline); this file
//! only carries out what it says: send copy k with its timeout, wake at t,
//! abandon copy k (closing its connection when it cancels), finish.
//!
//! An attempt opens its own connection (no pool), so a host that is down
//! refuses it (a connect error) and a reset or a lost answer reaches only
//! that attempt. The edge's one-way latency is slept before the request
//! goes out and after the answer comes back.

use super::record::Recorder;
use super::server::Addrs;
use crate::config::{Caller, FaultKind, Scenario};
use crate::engine::{KeyedRandom, Nanos};
use crate::model::balance::HostPicker;
use crate::policy::{DenyReason, Outcome};
use bytes::Bytes;
use http_body_util::Empty;
use hyper_util::rt::TokioIo;
use retrysim_policy::{Call, CallAction, CallInput, Shared, SplitMix};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// The headers an attempt carries (its trace context).
pub const INTENT: &str = "x-retrysim-intent";
pub const ATTEMPT: &str = "x-retrysim-attempt";
pub const OPERATION: &str = "x-retrysim-operation";
pub const EDGE: &str = "x-retrysim-edge";
pub const KEY: &str = "idempotency-key";
pub const FINGERPRINT: &str = "x-retrysim-fingerprint";
/// When the attempt's caller gives up on it (model nanoseconds), if it does.
pub const EXPIRES: &str = "x-retrysim-expires";
/// Present on a status query (`on_unknown = "query"`).
pub const QUERY: &str = "x-retrysim-query";
/// Present on a compensation (a reconciler's `compensate`): undo what the
/// intent committed at the target.
pub const UNDO: &str = "x-retrysim-undo";

/// What a call's attempts ask of its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asking {
    /// The operation, under its policy.
    Operation,
    /// The operation, after a first attempt that is a status query (a
    /// reconciler's repair).
    StatusFirst,
    /// Every attempt asks to undo what the intent committed (a
    /// reconciler's compensation).
    Undo,
}

/// What an attempt says about its body: its idempotency key, if it sends
/// one, and a fingerprint of the body (a ledger rejects a key reused with
/// another body).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Body {
    pub key: Option<u64>,
    pub fingerprint: u64,
}

/// Random draws of the callers: the first word of every key.
const LATENCY_OUT: u64 = 0xC1;
const LATENCY_BACK: u64 = 0xC2;
const FAULT: u64 = 0xC3;
const PICK: u64 = 0xC4;
const JITTER: u64 = 0xC5;

/// Everything a caller needs: the scenario, where each host listens, the
/// measurements, and the state its policies share.
pub struct Net {
    pub s: Arc<Scenario>,
    pub rec: Arc<Recorder>,
    addrs: Addrs,
    pub rng: KeyedRandom,
    /// Per service, how callers pick its host (one view shared by all
    /// callers, as the model's balancer).
    pickers: Vec<Mutex<HostPicker>>,
    /// Per client class, the state of each instance (one when the class
    /// keeps no state per instance).
    pub clients: Vec<Vec<Shared>>,
    /// Per edge, the state a service's downstream calls on it share.
    edges: Vec<Shared>,
    calls: AtomicU64,
    /// With `--proxy envoy`, per client class the Envoy its requests go
    /// through (empty otherwise).
    pub via: Vec<SocketAddr>,
    /// The message queues.
    pub broker: super::broker::Broker,
}

impl Net {
    /// The network of `s` whose hosts listen at `addrs`.
    pub fn new(s: Arc<Scenario>, rec: Arc<Recorder>, addrs: Addrs, replication: u32, via: Vec<SocketAddr>) -> Net {
        let origin = rec.clock.origin();
        let clients = s
            .clients
            .iter()
            .map(|c| {
                let n = c.stateful_instances().max(1);
                (0..n).map(|_| Shared::with_origin(c.policy.clone(), origin)).collect()
            })
            .collect();
        let edges = (0..s.edges.len()).map(|e| Shared::with_origin(s.edge_policy(e).clone(), origin)).collect();
        Net {
            broker: super::broker::Broker::new(s.queues.len()),
            rng: KeyedRandom::for_replication(s.seed, replication as u64),
            pickers: s
                .services
                .iter()
                .map(|sv| Mutex::new(HostPicker::new(sv.hosts.replicas, sv.service_time.mean_secs() * 1e9)))
                .collect(),
            clients,
            edges,
            addrs,
            s,
            rec,
            calls: AtomicU64::new(0),
            via,
        }
    }

    /// Whether client requests go through Envoy (which then makes the attempts).
    pub fn proxied(&self) -> bool {
        !self.via.is_empty()
    }

    /// A client call through its class's Envoy: one request, whose retries
    /// Envoy makes under the exported policy; the client waits for Envoy's
    /// answer (Envoy's route timeout ends it) at most its deadline or a minute.
    async fn through_envoy(
        &self,
        c: usize,
        intent: u64,
        operation: usize,
        body: Body,
    ) -> (Option<Outcome>, Result<(), DenyReason>) {
        let attempt = self.rec.attempt();
        let p = &self.s.clients[c].policy;
        let limit =
            if p.deadline != crate::engine::NEVER { p.deadline.saturating_add(1_000_000_000) } else { 60_000_000_000 };
        let ids =
            Ids { intent, attempt, operation, edge: self.s.clients[c].edge, expires: None, query: false, undo: false };
        let answer = tokio::select! {
            a = exchange(self.via[c], ids, body) => a.outcome,
            _ = self.rec.sleep(limit) => Outcome::Timeout,
        };
        (Some(answer), if answer == Outcome::Ok { Ok(()) } else { Err(DenyReason::NotRetryable) })
    }

    /// A downstream call of intent `intent` on edge `edge` for operation
    /// `operation`, under the edge's policy, ending by `upstream` (model
    /// time) at the latest: its last outcome, `Ok` when it succeeded.
    pub async fn downstream(
        self: &Arc<Self>,
        edge: usize,
        intent: u64,
        operation: usize,
        body: Body,
        upstream: Option<Nanos>,
    ) -> Outcome {
        let shared = self.edges[edge].clone();
        let (last, end) = self.call(edge, shared, intent, operation, body, upstream, Asking::Operation).await;
        // An open breaker fails the call fast, as an overload answer.
        if end.is_ok() { Outcome::Ok } else { last.unwrap_or(Outcome::Status(503)) }
    }

    /// A reconciler's repair of the effect of intent `intent` on `edge`
    /// left unknown: a call under the edge's policy that asks the callee
    /// first, and sends the effect again (in a second call when the policy
    /// had no attempt left) after a `not found`. Whether it is resolved.
    pub async fn repair(self: &Arc<Self>, edge: usize, intent: u64, operation: usize, body: Body) -> bool {
        let shared = self.edges[edge].clone();
        let (last, end) = self.call(edge, shared.clone(), intent, operation, body, None, Asking::StatusFirst).await;
        if end.is_ok() {
            return true;
        }
        if last == Some(crate::policy::decision::NOT_FOUND) {
            return self.call(edge, shared, intent, operation, body, None, Asking::Operation).await.1.is_ok();
        }
        false
    }

    /// A reconciler's compensation of the effect of intent `intent` on
    /// `edge` left unknown: a call under the edge's policy whose attempts
    /// ask the callee to undo whatever the intent committed there. Whether
    /// it succeeded.
    pub async fn compensate(self: &Arc<Self>, edge: usize, intent: u64, operation: usize, body: Body) -> bool {
        let shared = self.edges[edge].clone();
        self.call(edge, shared, intent, operation, body, None, Asking::Undo).await.1.is_ok()
    }

    /// One call on `edge` under `shared`'s policy, ending by `upstream`
    /// (model time, a propagated deadline) at the latest: its last outcome
    /// (none when nothing was sent) and how it ended. `ask`: what its
    /// attempts ask of the target.
    #[allow(clippy::too_many_arguments)]
    pub async fn call(
        self: &Arc<Self>,
        edge: usize,
        shared: Shared,
        intent: u64,
        operation: usize,
        body: Body,
        upstream: Option<Nanos>,
        ask: Asking,
    ) -> (Option<Outcome>, Result<(), DenyReason>) {
        if let Caller::Client(c) = self.s.edges[edge].caller
            && self.proxied()
        {
            return self.through_envoy(c, intent, operation, body).await;
        }
        let clock = self.rec.clock.clone();
        let seed = self.rng.unit(&[JITTER, self.calls.fetch_add(1, Ordering::Relaxed)]).to_bits();
        // Undoing by the intent's key can be repeated safely.
        let idempotent = ask == Asking::Undo || self.s.operations[operation].idempotent;
        let hedged = shared.policy().hedging.is_some();
        let mut call = Call::new(shared, SplitMix::new(seed)).operation(idempotent, body.key.is_some());
        if ask == Asking::StatusFirst {
            call = call.ask_first();
        }
        if let Some(t) = upstream {
            call = call.deadline_at(clock.virtual_at(t));
        }
        let (tx, mut rx) = mpsc::unbounded_channel::<(u32, Option<Answer>)>();
        let mut copies: HashMap<u32, Copy> = HashMap::new();
        let svc = self.s.edges[edge].to;
        let mut tried = 0u32;
        let mut timer: Option<std::time::Instant> = None;
        let mut last = None;
        let mut steps = call.handle(CallInput::Start, clock.virtual_now());
        let mut throttled = 0;
        loop {
            if call.throttled() > throttled {
                self.count_throttled(intent, call.throttled() - throttled);
                throttled = call.throttled();
            }
            for step in steps.drain(..) {
                match step {
                    CallAction::Send { copy, timeout } | CallAction::Query { copy, timeout } => {
                        let query = matches!(step, CallAction::Query { .. });
                        let attempt = self.rec.attempt();
                        self.count_attempt(edge, intent, hedged && copy > 0);
                        if query {
                            let mut g = self.rec.lock();
                            let tally = g.tally(intent);
                            g.m.class(tally).status_queries += 1;
                        }
                        let host = self.pick(svc, attempt, tried);
                        tried |= 1u32.checked_shl(host as u32).unwrap_or(0);
                        let net = self.clone();
                        let tx = tx.clone();
                        let limit = timeout.map(|t| t.as_nanos() as Nanos);
                        let expires = limit.map(|l| clock.now().saturating_add(l));
                        let task = tokio::spawn(async move {
                            let rec = net.rec.clone();
                            let undo = ask == Asking::Undo;
                            let ids = Ids { intent, attempt, operation, edge, expires, query, undo };
                            let go = net.attempt(host, ids, body);
                            tokio::pin!(go);
                            let answer = match limit {
                                Some(limit) => tokio::select! {
                                    a = &mut go => Some(a),
                                    _ = rec.sleep(limit) => None,
                                },
                                None => Some(go.as_mut().await),
                            };
                            let timed_out = answer.is_none();
                            let _ = tx.send((copy, answer));
                            if timed_out {
                                // Given up but not cancelled: the connection stays
                                // open and the answer, if any, arrives unheard.
                                // Cancelling aborts this task, which closes it.
                                go.await;
                            }
                        });
                        copies.insert(copy, Copy { task, attempt, host, sent: clock.now() });
                    }
                    CallAction::WakeAt(at) => timer = Some(clock.real_of_virtual(at).into_std()),
                    CallAction::Abandon { copy, cancel } => {
                        if let Some(c) = copies.remove(&copy) {
                            self.rec.abandon(c.attempt);
                            self.released(svc, c.host);
                            if cancel {
                                c.task.abort();
                            }
                        }
                    }
                    CallAction::Finish(end) => {
                        // Copies still out are left to finish unheard.
                        for (_, c) in copies.drain() {
                            self.rec.abandon(c.attempt);
                            self.released(svc, c.host);
                        }
                        if let Err(reason) = end
                            && reason != DenyReason::NotRetryable
                        {
                            let mut g = self.rec.lock();
                            let tally = g.tally(intent);
                            *g.m.counts(tally).denials.entry(reason).or_insert(0) += 1;
                        }
                        return (last, end);
                    }
                    _ => {}
                }
            }
            let input = tokio::select! {
                Some((copy, answer)) = rx.recv() => match answer {
                    Some(a) => {
                        if let Some(c) = copies.remove(&copy) {
                            // The caller still waited: the balancer learns the answer.
                            self.observed(intent, svc, c.host, c.sent, a.outcome);
                            self.released(svc, c.host);
                        }
                        last = Some(a.outcome);
                        CallInput::Answer { copy, outcome: a.outcome, retry_after: a.retry_after }
                    }
                    None => {
                        if let Some(c) = copies.get(&copy) {
                            self.rec.abandon(c.attempt);
                            // As in the model, a hedged copy's timeout teaches the balancer nothing.
                            if !hedged {
                                self.observed(intent, svc, c.host, c.sent, Outcome::Timeout);
                            }
                        }
                        last = Some(Outcome::Timeout);
                        CallInput::Timeout { copy }
                    }
                },
                _ = self.rec.timer.sleep_until(timer.unwrap_or_else(std::time::Instant::now)), if timer.is_some() => {
                    timer = None;
                    CallInput::Timer
                }
            };
            steps = call.handle(input, clock.virtual_now());
        }
    }

    /// Counts an attempt sent on `edge` for intent `intent`.
    pub(super) fn count_attempt(&self, edge: usize, intent: u64, hedge: bool) {
        let now = self.rec.clock.now();
        let client_edge = matches!(self.s.edges[edge].caller, Caller::Client(_));
        let mut g = self.rec.lock();
        let tally = g.tally(intent);
        g.m.counts(tally).edge_attempts[edge] += 1;
        if hedge {
            g.m.class(tally).hedges += 1;
            g.m.series.at(now).hedges += 1;
        }
        if client_edge {
            g.m.series.at(now).attempts += 1;
        }
    }

    /// The client-side throttle held back or refused `n` attempts of intent `intent`.
    fn count_throttled(&self, intent: u64, n: u32) {
        let now = self.rec.clock.now();
        let mut g = self.rec.lock();
        let tally = g.tally(intent);
        g.m.class(tally).throttled += n as u64;
        g.m.series.at(now).throttled += n as u64;
    }

    /// The host of service `svc` attempt `attempt` goes to, its call
    /// having tried the hosts in `tried`; it is out there from now.
    pub(super) fn pick(&self, svc: usize, attempt: u64, tried: u32) -> usize {
        if self.addrs[svc].len() == 1 {
            return 0;
        }
        let now = self.rec.clock.now();
        let mut p = self.pickers[svc].lock().unwrap_or_else(|e| e.into_inner());
        let host = p.pick(&self.s.services[svc].hosts, tried, now, |i| self.rng.unit(&[PICK, attempt, i]));
        p.sent(host);
        host
    }

    /// The caller of intent `intent` got `outcome` from host `host` of
    /// service `svc` (sent at `sent`, model time): peak EWMA and outlier
    /// detection learn it.
    fn observed(&self, intent: u64, svc: usize, host: usize, sent: Nanos, outcome: Outcome) {
        if self.addrs[svc].len() == 1 {
            return;
        }
        let now = self.rec.clock.now();
        let spec = &self.s.services[svc].hosts;
        let ejected =
            self.pickers[svc].lock().unwrap_or_else(|e| e.into_inner()).observed(spec, host, now - sent, outcome, now);
        if ejected {
            let mut g = self.rec.lock();
            let tally = g.tally(intent);
            g.m.counts(tally).ejections[svc] += 1;
        }
    }

    /// The caller no longer waits for an attempt at host `host` of service `svc`.
    pub(super) fn released(&self, svc: usize, host: usize) {
        if self.addrs[svc].len() > 1 {
            self.pickers[svc].lock().unwrap_or_else(|e| e.into_inner()).released(host);
        }
    }

    /// Outlier detection's sweeps of every service that ejects, every
    /// `interval` until the run ends (with the runtime).
    pub async fn sweep(self: Arc<Self>) {
        let mut tasks = tokio::task::JoinSet::new();
        for (svc, spec) in self.s.services.iter().enumerate() {
            if let Some(o) = spec.hosts.outlier
                && spec.hosts.replicas > 1
            {
                let net = self.clone();
                tasks.spawn(async move {
                    let mut at = o.interval;
                    loop {
                        net.rec.sleep_until(at).await;
                        let now = net.rec.clock.now();
                        net.pickers[svc].lock().unwrap_or_else(|e| e.into_inner()).sweep(&o, now);
                        at = at.saturating_add(o.interval);
                    }
                });
            }
        }
        tasks.join_all().await;
    }

    /// One attempt to host `host`: out over the edge, the exchange, back
    /// over the edge. `expires`: when its caller gives up on it (model
    /// time), if it does.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn attempt(self: Arc<Self>, host: usize, ids: Ids, body: Body) -> Answer {
        let (edge, intent, attempt) = (ids.edge, ids.intent, ids.attempt);
        let clock = self.rec.clock.clone();
        let e = &self.s.edges[edge];
        let svc = e.to;
        let replica = host as u32;
        let slot = (self.addrs[svc].len() > 1).then(|| self.host_slot(svc, host));
        if let Some(k) = slot {
            let mut g = self.rec.lock();
            let tally = g.tally(intent);
            g.m.counts(tally).host_sent[k] += 1;
        }
        let now = clock.now();
        let mut out = e.latency.sample(&self.rng, &[LATENCY_OUT, attempt]);
        for (fi, f) in self.s.faults.iter().enumerate() {
            match &f.kind {
                FaultKind::Latency { extra } if f.hits(svc, replica, now) => {
                    out = out.saturating_add(extra.sample(&self.rng, &[FAULT, attempt, fi as u64]));
                }
                // The request vanishes on the partitioned edge: nothing is
                // sent, and its caller waits until its timeout.
                FaultKind::Partition { edge: cut } if *cut == edge && now >= f.start && now < f.end => {
                    return std::future::pending().await;
                }
                // Lost on its way in: the server never sees it.
                FaultKind::RequestLoss { probability }
                    if f.hits(svc, replica, now) && self.rng.unit(&[FAULT, attempt, fi as u64]) < *probability =>
                {
                    return std::future::pending().await;
                }
                _ => {}
            }
        }
        self.rec.sleep(out).await;
        let answer = exchange(self.addrs[svc][host], ids, body).await;
        let back = e.latency.sample(&self.rng, &[LATENCY_BACK, attempt]);
        self.rec.sleep(back).await;
        if let Some(k) = slot
            && answer.outcome == Outcome::Ok
        {
            let mut g = self.rec.lock();
            let tally = g.tally(intent);
            g.m.counts(tally).host_ok[k] += 1;
        }
        answer
    }

    /// The index among host slots of host `host` of service `svc`.
    fn host_slot(&self, svc: usize, host: usize) -> usize {
        self.addrs[..svc].iter().filter(|a| a.len() > 1).map(|a| a.len()).sum::<usize>() + host
    }
}

/// A copy out: its task, attempt id, host and when it was sent (model time).
struct Copy {
    task: tokio::task::JoinHandle<()>,
    attempt: u64,
    host: usize,
    sent: Nanos,
}

/// An attempt's answer as its caller reads it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Answer {
    pub(super) outcome: Outcome,
    retry_after: Option<Duration>,
}

/// Who an attempt is: its intent, its own id, its operation and its edge.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ids {
    intent: u64,
    attempt: u64,
    operation: usize,
    edge: usize,
    expires: Option<Nanos>,
    /// A status query rather than the operation.
    query: bool,
    /// A compensation rather than the operation.
    undo: bool,
}

impl Ids {
    /// An attempt of the operation itself, given up at `expires`.
    pub(super) fn operation(intent: u64, attempt: u64, operation: usize, edge: usize, expires: Nanos) -> Ids {
        Ids { intent, attempt, operation, edge, expires: Some(expires), query: false, undo: false }
    }
}

/// The HTTP exchange of one attempt on a connection of its own.
async fn exchange(addr: SocketAddr, ids: Ids, body: Body) -> Answer {
    let failed = |outcome| Answer { outcome, retry_after: None };
    let Ok(stream) = tokio::net::TcpStream::connect(addr).await else {
        return failed(Outcome::ConnectError);
    };
    let _ = stream.set_nodelay(true);
    let Ok((mut sender, conn)) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await else {
        return failed(Outcome::ConnectError);
    };
    // The connection lives as long as the attempt: an attempt cancelled
    // (its task aborted) closes it, which the server sees.
    let conn = AbortOnDrop(tokio::spawn(conn));
    let mut req = hyper::Request::post("/")
        .header(hyper::header::HOST, "retrysim")
        .header(INTENT, ids.intent.to_string())
        .header(ATTEMPT, ids.attempt.to_string())
        .header(OPERATION, ids.operation.to_string())
        .header(EDGE, ids.edge.to_string())
        .header(FINGERPRINT, body.fingerprint.to_string());
    if let Some(key) = body.key {
        req = req.header(KEY, key.to_string());
    }
    if let Some(t) = ids.expires {
        req = req.header(EXPIRES, t.to_string());
    }
    if ids.query {
        req = req.header(QUERY, "1");
    }
    if ids.undo {
        req = req.header(UNDO, "1");
    }
    let req = req.body(Empty::<Bytes>::new()).expect("valid request");
    let answer = match sender.send_request(req).await {
        Ok(res) => {
            let status = res.status().as_u16();
            let retry_after = res
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(Duration::from_secs_f64);
            let outcome = if status == 200 { Outcome::Ok } else { Outcome::Status(status) };
            Answer { outcome, retry_after }
        }
        Err(_) => failed(Outcome::Reset),
    };
    drop(conn);
    answer
}

/// A task that ends when its handle is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<Result<(), hyper::Error>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
