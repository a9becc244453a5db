//! The service hosts: one HTTP/1.1 server per host on 127.0.0.1, each
//! with its own workers and waiting room. A request takes a worker or
//! waits (FIFO or LIFO) or, with the room full, gets the overload answer
//! with its Retry-After; with a worker it sleeps its drawn service time
//! (slept, not spun: the emulated capacity does not depend on the CPU),
//! makes its downstream calls under their edge policies, commits, and
//! answers — unless a fault loses or resets the answer.
//!
//! The work runs in a task of its own, so a caller that stops waiting
//! does not stop it: abandoned work goes on and is wasted, as in the model.
//! During an outage the host's listener is closed (connections are
//! refused) and opened again on the same port when it ends.

use super::caller::{self, Body, Net};
use super::record::Recorder;
use crate::config::{Caller, KeyMode};
use crate::config::{Discipline, FaultKind, Scenario};
use crate::engine::random::hash_words;
use crate::engine::{KeyedRandom, Nanos};
use crate::model::ledger::{Ledger, Lookup};
use crate::policy::Outcome;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Random draws of the servers: the first word of every key.
const SERVICE: u64 = 0xE1;
const FAULT: u64 = 0xE2;
const SCOPE: u64 = 0xE3;
const KEY: u64 = 0xE4;

/// The running hosts.
pub struct Hosts {
    /// Per service, the address of each host.
    pub addrs: Vec<Vec<SocketAddr>>,
    tasks: Vec<JoinHandle<()>>,
    /// The network the hosts' downstream calls go through, set once it exists.
    net: Arc<OnceLock<Arc<Net>>>,
    all: Vec<Arc<Host>>,
}

impl Hosts {
    /// The network for downstream calls; the load begins: the brownouts'
    /// ends are timed from now.
    pub fn connect(&mut self, net: Arc<Net>) {
        let _ = self.net.set(net);
        for host in &self.all {
            for (fi, f) in host.s.faults.iter().enumerate() {
                if matches!(f.kind, FaultKind::Brownout { .. }) && f.hits(host.svc, host.replica, f.start) {
                    self.tasks.push(tokio::spawn(capacity_back(host.clone(), fi)));
                }
            }
        }
    }

    /// Stops accepting; work in progress ends with the runtime.
    pub fn stop(&self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// One host.
struct Host {
    svc: usize,
    replica: u32,
    /// Its own metrics slot when its service has replicas.
    slot: Option<usize>,
    door: Mutex<Door>,
    s: Arc<Scenario>,
    rec: Arc<Recorder>,
    rng: KeyedRandom,
    net: Arc<OnceLock<Arc<Net>>>,
    /// Its idempotency ledger: the service's (durable, shared by its
    /// hosts) or its own (memory).
    ledger: Option<Arc<Mutex<Ledger>>>,
}

/// What an attempt says about itself (its headers).
#[derive(Debug, Clone, Copy)]
struct Arrival {
    intent: u64,
    attempt: u64,
    operation: usize,
    edge: usize,
    body: Body,
    /// This arrival's own number at the servers: the key of its random
    /// draws (a proxy's retries carry their client request's headers, and
    /// each must draw anew).
    draw: u64,
}

/// Workers busy and the waiting room.
struct Door {
    busy: u32,
    queue: VecDeque<Waiter>,
    last_change: Nanos,
}

struct Waiter {
    go: oneshot::Sender<bool>,
    attempt: u64,
}

/// How the work of one request ends for the connection.
enum Reply {
    Answer(u16, Option<Nanos>),
    /// No answer is ever sent (a lost answer); the caller times out.
    Never,
    /// The connection is closed without an answer (a reset, or work dropped expired).
    Close,
}

/// Starts every host of `s`, each listening on a free port of 127.0.0.1.
pub async fn start_all(s: &Arc<Scenario>, rec: &Arc<Recorder>, replication: u32) -> anyhow::Result<Hosts> {
    let rng = KeyedRandom::for_replication(s.seed, replication as u64);
    let net = Arc::new(OnceLock::new());
    let mut addrs = Vec::new();
    let mut tasks = Vec::new();
    let mut next_slot = s.services.len();
    let mut all = Vec::new();
    for (svc, spec) in s.services.iter().enumerate() {
        let mut mine = Vec::new();
        let durable = spec.ledger.filter(|l| l.durable).map(|l| Arc::new(Mutex::new(Ledger::new(l))));
        for replica in 0..spec.hosts.replicas {
            let ledger = durable.clone().or_else(|| spec.ledger.map(|l| Arc::new(Mutex::new(Ledger::new(l)))));
            let slot = (spec.hosts.replicas > 1).then(|| {
                next_slot += 1;
                next_slot - 1
            });
            let host = Arc::new(Host {
                svc,
                replica,
                slot,
                door: Mutex::new(Door { busy: 0, queue: VecDeque::new(), last_change: 0 }),
                s: s.clone(),
                rec: rec.clone(),
                rng,
                net: net.clone(),
                ledger,
            });
            let listener = bind(None).await?;
            mine.push(listener.local_addr()?);
            tasks.push(tokio::spawn(accept(host.clone(), listener)));
            all.push(host);
        }
        addrs.push(mine);
    }
    Ok(Hosts { addrs, tasks, net, all })
}

/// A listener on 127.0.0.1 (`port` or a free one), reusable at once after close.
async fn bind(addr: Option<SocketAddr>) -> std::io::Result<tokio::net::TcpListener> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(addr.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0))))?;
    socket.listen(1024)
}

/// Accepts connections, and closes the listener while an outage of this host lasts.
async fn accept(host: Arc<Host>, mut listener: tokio::net::TcpListener) {
    let addr = listener.local_addr().expect("bound");
    let clock = host.rec.clock.clone();
    loop {
        let now = clock.now();
        let down =
            host.s.faults.iter().find(|f| {
                matches!(f.kind, FaultKind::Outage | FaultKind::HostDown) && f.hits(host.svc, host.replica, now)
            });
        if let Some(f) = down {
            let end = f.end;
            drop(listener);
            tokio::time::sleep_until(clock.real_at(end)).await;
            listener = match bind(Some(addr)).await {
                Ok(l) => l,
                Err(_) => return,
            };
            continue;
        }
        let next_down = host
            .s
            .faults
            .iter()
            .filter(|f| {
                matches!(f.kind, FaultKind::Outage | FaultKind::HostDown)
                    && f.start > now
                    && f.host.is_none_or(|r| r == host.replica)
                    && f.target == host.svc
            })
            .map(|f| f.start)
            .min();
        let wake = next_down.map(|t| clock.real_at(t));
        tokio::select! {
            conn = listener.accept() => {
                let Ok((stream, _)) = conn else { continue };
                let _ = stream.set_nodelay(true);
                let h = host.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| handle(h.clone(), req));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
            _ = async { tokio::time::sleep_until(wake.expect("guarded")).await }, if wake.is_some() => {}
        }
    }
}

/// The connection's side of a request: the work runs in its own task.
async fn handle(host: Arc<Host>, req: Request<Incoming>) -> Result<Response<Full<Bytes>>, std::io::Error> {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    let operation = header(caller::OPERATION).map(|o| o as usize).filter(|&o| o < host.s.operations.len());
    let edge = header(caller::EDGE).map(|e| e as usize).filter(|&e| e < host.s.edges.len());
    let (Some(intent), Some(attempt), Some(operation), Some(edge), Some(fingerprint)) =
        (header(caller::INTENT), header(caller::ATTEMPT), operation, edge, header(caller::FINGERPRINT))
    else {
        return Ok(Response::builder()
            .status(400)
            .body(Full::new(Bytes::from_static(b"missing headers")))
            .expect("valid"));
    };
    let body = Body { key: header(caller::KEY), fingerprint };
    let arrival = Arrival { intent, attempt, operation, edge, body, draw: host.rec.arrival() };
    let (tx, rx) = oneshot::channel();
    tokio::spawn(async move {
        let reply = serve(&host, arrival).await;
        let _ = tx.send(reply);
    });
    match rx.await {
        Ok(Reply::Answer(status, retry_after)) => {
            let mut b = Response::builder().status(status);
            if let Some(ra) = retry_after {
                b = b.header("retry-after", format!("{}", crate::engine::to_secs_f64(ra)));
            }
            Ok(b.body(Full::new(Bytes::new())).expect("valid"))
        }
        Ok(Reply::Never) => std::future::pending().await,
        Ok(Reply::Close) | Err(_) => Err(std::io::Error::other("reset")),
    }
}

/// A request at its host, from arrival to its answer.
async fn serve(host: &Host, a: Arrival) -> Reply {
    let (intent, attempt) = (a.intent, a.attempt);
    let (s, rec) = (&*host.s, &*host.rec);
    let now = rec.clock.now();
    {
        let mut g = rec.lock();
        g.m.reached(host.svc, now);
        let tally = g.tally(intent);
        let counts = g.m.counts(tally);
        counts.classes[tally.client()].service_arrivals[host.svc] += 1;
        if let Some(slot) = host.slot {
            counts.host_arrivals[slot - s.services.len()] += 1;
        }
        // Behind Envoy the attempts of a client's request are Envoy's: they are counted here.
        if host.net.get().is_some_and(|n| n.proxied()) && matches!(s.edges[a.edge].caller, Caller::Client(_)) {
            counts.edge_attempts[a.edge] += 1;
            g.m.series.at(now).attempts += 1;
        }
    }
    for (fi, f) in s.faults.iter().enumerate() {
        if let FaultKind::Error { status, probability, retry_after } = f.kind
            && f.hits(host.svc, host.replica, now)
            && host.rng.unit(&[FAULT, a.draw, fi as u64]) < probability
        {
            return Reply::Answer(status, retry_after);
        }
    }
    let spec = &s.services[host.svc];
    match host.admit(attempt) {
        Admitted::Now => {}
        Admitted::Full => return Reply::Answer(spec.overload.status, spec.overload.retry_after),
        Admitted::Wait(rx) => {
            if rx.await != Ok(true) {
                // Dropped expired: its caller is gone; nobody reads an answer.
                return Reply::Close;
            }
        }
    }
    let scope = match host.consult(&a) {
        Consulted::Execute(scope) => scope,
        Consulted::Answer(code) => {
            host.release();
            return Reply::Answer(code, None);
        }
    };
    let outcome = host.work(&a, scope).await;
    host.release();
    match outcome {
        Outcome::Ok => {}
        Outcome::Status(code) => return Reply::Answer(code, None),
        _ => return Reply::Answer(502, None),
    }
    let now = rec.clock.now();
    for (fi, f) in s.faults.iter().enumerate() {
        if !f.hits(host.svc, host.replica, now) {
            continue;
        }
        match f.kind {
            FaultKind::ResponseLoss { probability } if host.rng.unit(&[FAULT, a.draw, fi as u64]) < probability => {
                return Reply::Never;
            }
            FaultKind::Reset { probability } if host.rng.unit(&[FAULT, a.draw, fi as u64]) < probability => {
                return Reply::Close;
            }
            _ => {}
        }
    }
    Reply::Answer(200, None)
}

/// What the ledger says of a request.
enum Consulted {
    /// Do the work (holding this record, if any).
    Execute(Option<u64>),
    /// Answer this status at once.
    Answer(u16),
}

/// Whether a request got a worker.
enum Admitted {
    Now,
    /// The waiting room is full.
    Full,
    /// It waits: `true` when it gets a worker, `false` when dropped expired.
    Wait(oneshot::Receiver<bool>),
}

impl Host {
    /// Workers left now by the brownouts in force.
    fn workers_now(&self, now: Nanos) -> u32 {
        let workers = self.s.services[self.svc].workers;
        let mut capacity = 1.0;
        for f in &self.s.faults {
            if let FaultKind::Brownout { capacity: c } = f.kind
                && f.hits(self.svc, self.replica, now)
            {
                capacity *= c;
            }
        }
        if capacity == 1.0 { workers } else { (workers as f64 * capacity) as u32 }
    }

    /// Accounts the queue and busy workers up to `now`.
    fn touch(&self, door: &mut Door, now: Nanos) {
        let (from, qlen, busy) = (door.last_change, door.queue.len(), door.busy);
        door.last_change = now;
        if from >= now || (qlen == 0 && busy == 0) {
            return;
        }
        let mut g = self.rec.lock();
        g.m.service_state(self.svc, from, now, qlen, busy);
        if let Some(slot) = self.slot {
            g.m.service_state(slot, from, now, qlen, busy);
        }
    }

    fn door(&self) -> std::sync::MutexGuard<'_, Door> {
        self.door.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A worker, a place in the waiting room, or the overload answer.
    fn admit(&self, attempt: u64) -> Admitted {
        let now = self.rec.clock.now();
        let spec = &self.s.services[self.svc];
        let mut door = self.door();
        self.touch(&mut door, now);
        if door.busy < self.workers_now(now) && door.queue.is_empty() {
            door.busy += 1;
            return Admitted::Now;
        }
        if spec.queue_limit.is_some_and(|l| door.queue.len() >= l as usize) {
            return Admitted::Full;
        }
        let (go, rx) = oneshot::channel();
        door.queue.push_back(Waiter { go, attempt });
        Admitted::Wait(rx)
    }

    /// A worker is free: the next waiting requests get workers.
    fn release(&self) {
        let now = self.rec.clock.now();
        let mut door = self.door();
        self.touch(&mut door, now);
        door.busy -= 1;
        self.dispatch(&mut door, now);
    }

    /// Hands free workers to waiting requests in the queue's discipline;
    /// with `drop_expired`, requests whose caller is gone leave unserved.
    fn dispatch(&self, door: &mut Door, now: Nanos) {
        let spec = &self.s.services[self.svc];
        while door.busy < self.workers_now(now) {
            let next = match spec.discipline {
                Discipline::Lifo => door.queue.pop_back(),
                _ => door.queue.pop_front(),
            };
            let Some(w) = next else { return };
            if spec.drop_expired && self.rec.lock().abandoned(w.attempt) {
                let _ = w.go.send(false);
                continue;
            }
            if w.go.send(true).is_ok() {
                door.busy += 1;
            }
        }
    }

    /// With a worker: the ledger, when the service has one and the request
    /// a key. A record's answer is replayed; a key reused with another body
    /// gets 422; a duplicate of a request in progress 409.
    fn consult(&self, a: &Arrival) -> Consulted {
        let (Some(ledger), Some(key)) = (&self.ledger, a.body.key) else {
            return Consulted::Execute(None);
        };
        let caller = match self.s.edges[a.edge].caller {
            Caller::Client(c) => c as u64,
            Caller::Service { service, .. } => (1 << 32) | service as u64,
        };
        let scope = hash_words(0, &[SCOPE, caller, a.operation as u64, key]);
        let now = self.rec.clock.now();
        let owner = self.rec.lock().owner(a.intent);
        let lookup = ledger.lock().unwrap_or_else(|e| e.into_inner()).lookup(now, scope, a.body.fingerprint, owner);
        let mut g = self.rec.lock();
        let tally = g.tally(a.intent);
        let counts = g.m.counts(tally);
        match lookup {
            Lookup::Execute => Consulted::Execute(Some(scope)),
            Lookup::Recover => {
                counts.ledger_recoveries += 1;
                Consulted::Execute(Some(scope))
            }
            Lookup::Replay(answer) => {
                counts.ledger_replays += 1;
                Consulted::Answer(match answer {
                    Outcome::Status(code) => code,
                    _ => 200,
                })
            }
            Lookup::Reject => {
                counts.ledger_rejects += 1;
                Consulted::Answer(422)
            }
            // A duplicate that would wait for its original is refused by
            // `unsupported`; as a 409 it is a conflict all the same.
            Lookup::Conflict | Lookup::Wait => {
                counts.ledger_conflicts += 1;
                Consulted::Answer(409)
            }
        }
    }

    /// The business write of the request holding ledger record `scope`
    /// happened: the record completes now (atomic) or `record_delay` later.
    fn record(&self, scope: u64) {
        let Some(ledger) = self.ledger.clone() else { return };
        let spec = *ledger.lock().unwrap_or_else(|e| e.into_inner()).spec();
        if spec.atomic {
            ledger.lock().unwrap_or_else(|e| e.into_inner()).complete(scope, Outcome::Ok);
            return;
        }
        let rec = self.rec.clone();
        tokio::spawn(async move {
            rec.sleep(spec.record_delay).await;
            ledger.lock().unwrap_or_else(|e| e.into_inner()).complete(scope, Outcome::Ok);
        });
    }

    /// The request holding record `scope` ends without its business write:
    /// the placeholder goes.
    fn forget(&self, scope: Option<u64>) {
        if let (Some(ledger), Some(scope)) = (&self.ledger, scope) {
            ledger.lock().unwrap_or_else(|e| e.into_inner()).abandon(scope);
        }
    }

    /// The idempotency key a downstream call sends.
    fn downstream_key(&self, mode: KeyMode, a: &Arrival, edge: usize) -> Option<u64> {
        match mode {
            KeyMode::Forward => a.body.key,
            KeyMode::Derive => Some(hash_words(a.intent, &[KEY, edge as u64])),
            KeyMode::None => None,
        }
    }

    /// The request's own work, then its plan: calls before the commit, the
    /// commit, calls after it. Returns the answer's outcome.
    async fn work(&self, a: &Arrival, scope: Option<u64>) -> Outcome {
        let (intent, attempt, operation) = (a.intent, a.attempt, a.operation);
        let (s, rec) = (&*self.s, &*self.rec);
        let spec = &s.services[self.svc];
        let start = rec.clock.now();
        let mut demand = spec.service_time.sample(&self.rng, &[SERVICE, a.draw]);
        if spec.per_inflight > 0 {
            let others = self.door().busy.saturating_sub(1) as u64;
            demand = demand.saturating_add(spec.per_inflight.saturating_mul(others));
        }
        let mut factor = 1.0;
        for f in &s.faults {
            if let FaultKind::Slowdown { factor: x } = f.kind
                && f.hits(self.svc, self.replica, start)
            {
                factor *= x;
            }
        }
        if factor != 1.0 {
            demand = (demand as f64 * factor) as Nanos;
        }
        rec.sleep(demand).await;
        let worked = rec.clock.now().saturating_sub(start);
        {
            let mut g = rec.lock();
            let (abandoned, tally) = (g.abandoned(attempt), g.tally(intent));
            g.m.work_done(tally, self.svc, self.slot, crate::engine::nanos_f64(worked), abandoned, start + worked);
        }
        let net = self.net.get().expect("connected before the first arrival").clone();
        let calls = &spec.calls;
        let body = |call: &crate::config::CallSpec| Body {
            key: self.downstream_key(call.key, a, call.edge),
            fingerprint: hash_words(a.body.fingerprint, &[call.edge as u64]),
        };
        for call in calls.iter().filter(|c| c.when == crate::config::When::BeforeCommit) {
            let op = call.operation.unwrap_or(operation);
            let outcome = net.downstream(call.edge, intent, op, body(call)).await;
            if outcome != Outcome::Ok {
                self.forget(scope);
                // No commit; the failure travels up as the model maps it.
                return match outcome {
                    Outcome::Timeout => Outcome::Status(504),
                    Outcome::Status(503) | Outcome::Status(429) => Outcome::Status(503),
                    _ => Outcome::Status(502),
                };
            }
        }
        if let Some(kind) = spec.commits
            && !s.operations[operation].idempotent
        {
            rec.lock().commit(intent, kind);
        }
        if let Some(scope) = scope {
            self.record(scope);
        }
        for call in calls.iter().filter(|c| c.when == crate::config::When::AfterCommit) {
            let op = call.operation.unwrap_or(operation);
            if net.downstream(call.edge, intent, op, body(call)).await != Outcome::Ok {
                rec.lock().lose(intent);
            }
        }
        Outcome::Ok
    }
}

/// At the end of brownout `fault`, the workers it took are back: waiting
/// requests get them.
async fn capacity_back(host: Arc<Host>, fault: usize) {
    let end = host.s.faults[fault].end;
    if end == crate::engine::NEVER {
        return;
    }
    host.rec.sleep_until(end).await;
    let now = host.rec.clock.now();
    let mut door = host.door();
    host.touch(&mut door, now);
    host.dispatch(&mut door, now);
}

/// The scenario's services as [`caller`] addresses them.
pub type Addrs = Vec<Vec<SocketAddr>>;
