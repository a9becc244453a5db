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
//! A caller whose policy cancels (`cancel_on_timeout`, `hedging.cancel`)
//! cancels by closing its connection: the server sees it close and the
//! request leaves the queue, or stops its work and frees its worker.
//! During an outage the host's listener is closed (connections are
//! refused) and opened again on the same port when it ends. A crash also
//! closes every open connection of the host, resets the requests in it,
//! frees its workers and empties a memory ledger.

mod door;
mod ledger;
mod outbox;
mod reconcile;
mod work;

pub use outbox::Gauge;

use super::caller::{self, Body, Net};
use super::record::{Recorder, Unresolved};
use crate::config::{Caller, FaultKind, KeyMode, ReconcileAction, Scenario};
use crate::engine::random::hash_words;
use crate::engine::{KeyedRandom, Nanos};
use crate::model::ledger::Ledger;
use crate::model::token_bucket::TokenBucket;
use crate::policy::Outcome;
use bytes::Bytes;
use door::{Admitted, Door, Go};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use ledger::{Consulted, wake};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

/// Random draws of the servers: the first word of every key.
const SERVICE: u64 = 0xE1;
const FAULT: u64 = 0xE2;
const SCOPE: u64 = 0xE3;
const KEY: u64 = 0xE4;
const ROW: u64 = 0xE6;
const CACHE_KEY: u64 = 0xE7;

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
        let rec = net.rec.clone();
        let _ = self.net.set(net.clone());
        self.reconcile(&rec, &net);
        for host in &self.all {
            for (fi, f) in host.s.faults.iter().enumerate() {
                // A flush is an instant: the service's caches are shared,
                // and its first host empties them at the fault's start.
                if f.kind == FaultKind::CacheFlush && f.target == host.svc && host.replica == 0 {
                    let (host, start) = (host.clone(), f.start);
                    self.tasks.push(tokio::spawn(async move {
                        host.rec.sleep_until(start).await;
                        for c in host.caches.iter().flatten() {
                            c.lock().unwrap_or_else(|e| e.into_inner()).flush();
                        }
                    }));
                }
                if !f.hits(host.svc, host.replica, f.start) {
                    continue;
                }
                match f.kind {
                    FaultKind::Brownout { .. } => self.tasks.push(tokio::spawn(capacity_back(host.clone(), fi))),
                    FaultKind::Crash => self.tasks.push(tokio::spawn(crash(host.clone(), fi))),
                    _ => {}
                }
            }
        }
    }

    /// Every ledger once, with its service.
    fn ledgers(&self) -> Vec<(usize, &Arc<Mutex<Ledger>>)> {
        let mut seen: Vec<(usize, &Arc<Mutex<Ledger>>)> = Vec::new();
        for h in &self.all {
            if let Some(l) = h.ledger.as_ref()
                && !seen.iter().any(|(_, k)| Arc::ptr_eq(k, l))
            {
                seen.push((h.svc, l));
            }
        }
        seen
    }

    /// Ledger placeholders still in progress that no request will recover
    /// (lease "never"), over every ledger once.
    pub fn stuck(&self) -> u64 {
        self.ledgers().iter().map(|(_, l)| l.lock().unwrap_or_else(|e| e.into_inner()).stuck()).sum()
    }

    /// Placeholders a reconciler should have resolved by `end`: in progress
    /// longer than its pass interval plus `older_than` (the smallest over
    /// the service's reconcilers).
    pub fn late(&self, s: &Scenario, end: Nanos) -> u64 {
        let mut late = 0;
        for (svc, l) in self.ledgers() {
            let due = s.services[svc].reconcilers.iter().map(|r| r.every.saturating_add(r.older_than)).min();
            if let Some(before) = due.and_then(|d| end.checked_sub(d)) {
                late += l.lock().unwrap_or_else(|e| e.into_inner()).stale(before, usize::MAX).len() as u64;
            }
        }
        late
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
    /// The crash epoch, for whoever must stop at a crash.
    crashes: watch::Sender<u64>,
    /// Optimistic concurrency (`occ_rows`): the version of each row, shared
    /// by the service's hosts (one database).
    versions: Option<Arc<Mutex<Vec<u64>>>>,
    /// Duplicates held until the record they wait for completes or goes
    /// (`in_progress = "wait"`), by record, shared by the service's hosts.
    waiters: Arc<Mutex<HashMap<u64, Vec<oneshot::Sender<()>>>>>,
    /// Per call of the service, its look-aside cache (shared by the
    /// service's hosts), if it has one.
    caches: Arc<Vec<Option<Mutex<crate::model::world::Cache>>>>,
}

/// What an attempt says about itself (its headers).
#[derive(Debug, Clone, Copy)]
struct Arrival {
    intent: u64,
    attempt: u64,
    operation: usize,
    edge: usize,
    body: Body,
    /// When its caller gives up on it (model time), if it does.
    expires: Option<Nanos>,
    /// Whether it is a status query asking whether its intent committed here.
    query: bool,
    /// Whether it is a compensation undoing what its intent committed here.
    undo: bool,
    /// This arrival's own number at the servers: the key of its random
    /// draws (a proxy's retries carry their client request's headers, and
    /// each must draw anew).
    draw: u64,
}

/// How the work of one request ends for the connection.
enum Reply {
    Answer(u16, Option<Nanos>),
    /// No answer is ever sent (a lost answer); the caller times out.
    Never,
    /// The connection is closed without an answer (a reset, work dropped
    /// expired or reset by a crash, or a caller gone).
    Close,
}

/// Why a request stopped before its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stopped {
    /// Its host crashed.
    Crash,
    /// Its caller closed the connection (cancelled it).
    Gone,
}

/// What stops a request: its host's crash, and, when its caller's policy
/// cancels, its caller closing the connection.
struct Interrupts {
    crashes: watch::Receiver<u64>,
    gone: Option<oneshot::Receiver<()>>,
    /// The crash epoch the request was admitted in: only a later crash stops it.
    epoch: u64,
}

impl Interrupts {
    /// Resolves when the request must stop (a crash first).
    async fn stopped(&mut self) -> Stopped {
        let epoch = self.epoch;
        let crashes = &mut self.crashes;
        let crashed = async {
            loop {
                if crashes.changed().await.is_err() {
                    return std::future::pending().await;
                }
                if *crashes.borrow_and_update() > epoch {
                    return;
                }
            }
        };
        let gone = async {
            match &mut self.gone {
                Some(g) => {
                    let _ = g.await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            _ = crashed => Stopped::Crash,
            _ = gone => Stopped::Gone,
        }
    }

    /// Runs `f` unless the request must stop first.
    async fn run<F: std::future::Future>(&mut self, f: F) -> Result<F::Output, Stopped> {
        tokio::select! {
            biased;
            s = self.stopped() => Err(s),
            out = f => Ok(out),
        }
    }
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
        let versions = spec.occ_rows.map(|rows| Arc::new(Mutex::new(vec![0u64; rows as usize])));
        let waiters = Arc::new(Mutex::new(HashMap::new()));
        let caches: Arc<Vec<_>> = Arc::new(
            spec.calls
                .iter()
                .enumerate()
                .map(|(ci, c)| {
                    c.cache.map(|cs| Mutex::new(crate::model::world::Cache::warm(cs, &rng, &[svc as u64, ci as u64])))
                })
                .collect(),
        );
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
                door: Mutex::new(Door::new(spec.rate_limit.map(|r| TokenBucket::new(&r)))),
                s: s.clone(),
                rec: rec.clone(),
                rng,
                net: net.clone(),
                ledger,
                crashes: watch::channel(0).0,
                versions: versions.clone(),
                waiters: waiters.clone(),
                caches: caches.clone(),
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

/// Accepts connections, and closes the listener while an outage of this
/// host lasts or it is down after a crash.
async fn accept(host: Arc<Host>, mut listener: tokio::net::TcpListener) {
    let addr = listener.local_addr().expect("bound");
    let clock = host.rec.clock.clone();
    let mut crashes = host.crashes.subscribe();
    loop {
        let now = clock.now();
        let down = host
            .s
            .faults
            .iter()
            .filter(|f| {
                matches!(f.kind, FaultKind::Outage | FaultKind::HostDown) && f.hits(host.svc, host.replica, now)
            })
            .map(|f| f.end)
            .chain(Some(host.door().down_until).filter(|&t| t > now))
            .max();
        if let Some(end) = down {
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
                let mut crashes = host.crashes.subscribe();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| handle(h.clone(), req));
                    let conn = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
                    // A crash closes every connection of the host.
                    tokio::select! {
                        _ = conn => {}
                        Ok(()) = crashes.changed() => {}
                    }
                });
            }
            _ = async { tokio::time::sleep_until(wake.expect("guarded")).await }, if wake.is_some() => {}
            // A crash: the listener closes until the host is back.
            Ok(()) = crashes.changed() => {}
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
    let expires = header(caller::EXPIRES);
    if !host.s.queues.is_empty()
        && let Some(net) = host.net.get()
    {
        // A delivery is no longer on its way to its consumer.
        net.broker.arrived(attempt);
    }
    let query = req.headers().contains_key(caller::QUERY);
    let undo = req.headers().contains_key(caller::UNDO);
    let arrival = Arrival { intent, attempt, operation, edge, body, expires, query, undo, draw: host.rec.arrival() };
    let rec = host.rec.clone();
    let (tx, rx) = oneshot::channel();
    // Dropped with this future, when the caller closes the connection.
    let (_here, gone) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let reply = serve(&host, arrival, gone).await;
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
        // The answer is lost: nothing is sent. Once its caller has given up
        // (a millisecond after), the connection is closed so that lost
        // answers do not hold sockets open to the end of the run.
        Ok(Reply::Never) => match expires {
            Some(t) => {
                rec.sleep_until(t.saturating_add(1_000_000)).await;
                Err(std::io::Error::other("answer lost"))
            }
            None => std::future::pending().await,
        },
        Ok(Reply::Close) | Err(_) => Err(std::io::Error::other("reset")),
    }
}

/// A request at its host, from arrival to its answer. `gone` resolves
/// when its caller closes the connection.
async fn serve(host: &Host, a: Arrival, gone: oneshot::Receiver<()>) -> Reply {
    let (intent, attempt) = (a.intent, a.attempt);
    let (s, rec) = (&*host.s, &*host.rec);
    let now = rec.clock.now();
    if host.door().down_until > now {
        // Reached a crashed host on a connection it had not yet closed.
        return Reply::Close;
    }
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
    let policy = s.edge_policy(a.edge);
    let cancels = policy.cancel_on_timeout || policy.hedging.as_ref().is_some_and(|h| h.cancel);
    let mut stop = Interrupts { crashes: host.crashes.subscribe(), gone: cancels.then_some(gone), epoch: 0 };
    let client = rec.lock().owner(intent).0 as usize;
    let priority = s.clients.get(client).map_or(0, |c| c.priority as usize);
    let (admitted, epoch, oom) = host.admit(attempt, priority);
    stop.epoch = epoch;
    if let Some(until) = oom {
        // Out of memory: the host crashes as a `crash` fault makes it (this request with it).
        rec.lock().m.counts_at(now).memory_crashes[host.svc] += 1;
        host.crash(until);
    }
    match admitted {
        Admitted::Now => {}
        Admitted::Full => return Reply::Answer(spec.overload.status, spec.overload.retry_after),
        Admitted::Limited => {
            let limit = spec.rate_limit.expect("a rate limit refused it");
            return Reply::Answer(limit.status, limit.retry_after);
        }
        Admitted::Wait(mut rx) => match stop.run(&mut rx).await {
            Ok(Ok(Go::Worker)) => {}
            Ok(Ok(Go::Shed)) => return Reply::Answer(spec.overload.status, spec.overload.retry_after),
            // Dropped expired (its caller is gone), or reset by a crash.
            Ok(_) | Err(Stopped::Crash) => return Reply::Close,
            Err(Stopped::Gone) => {
                host.leave_queue(attempt, epoch, &mut rx);
                return Reply::Close;
            }
        },
    }
    // A status query or a compensation does not go through the ledger.
    let scope = loop {
        match if a.query || a.undo { Consulted::Execute(None) } else { host.consult(&a) } {
            Consulted::Execute(scope) => break scope,
            Consulted::Answer(code) => {
                host.release(epoch);
                return Reply::Answer(code, None);
            }
            // A duplicate held, with its worker, until its original's
            // record completes or goes: then the ledger is asked again.
            Consulted::Wait(rx) => match stop.run(rx).await {
                Ok(_) => continue,
                Err(Stopped::Crash) => return Reply::Close,
                Err(Stopped::Gone) => {
                    host.release(epoch);
                    return Reply::Close;
                }
            },
        }
    };
    let work =
        if a.query || a.undo { host.look_up(&a, &mut stop).await } else { host.work(&a, scope, &mut stop).await };
    let outcome = match work {
        Ok(outcome) => outcome,
        Err(Stopped::Crash) => return Reply::Close,
        Err(Stopped::Gone) => {
            host.release(epoch);
            return Reply::Close;
        }
    };
    host.release(epoch);
    let status = match outcome {
        Outcome::Ok => 200,
        Outcome::Status(code) if a.query => code,
        Outcome::Status(code) => return Reply::Answer(code, None),
        _ => return Reply::Answer(502, None),
    };
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
    Reply::Answer(status, None)
}

/// At the end of brownout `fault`, the workers it took are back: waiting
/// requests get them.
async fn capacity_back(host: Arc<Host>, fault: usize) {
    let end = host.s.faults[fault].end;
    if end == crate::engine::NEVER {
        return;
    }
    host.rec.sleep_until(end).await;
    host.capacity_back();
}

/// At the start of crash `fault` the host crashes: the requests in it are
/// reset (their connections closed), its workers freed, its queue
/// emptied, a memory ledger emptied and pending record writes lost; its
/// listener stays closed until the fault's end ([`accept`]).
async fn crash(host: Arc<Host>, fault: usize) {
    let f = &host.s.faults[fault];
    host.rec.sleep_until(f.start).await;
    host.crash(f.end);
}

impl Host {
    /// The host crashes now and is down until `until`.
    fn crash(&self, until: Nanos) {
        let epoch = self.crash_door(until);
        self.crash_ledger();
        self.crashes.send_replace(epoch);
    }
}

/// The scenario's services as [`caller`] addresses them.
pub type Addrs = Vec<Vec<SocketAddr>>;
