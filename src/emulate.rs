//! `retrysim emulate`: an experiment run for real on 127.0.0.1 — one
//! HTTP/1.1 server per service host with its workers, queue and overload
//! answer, service times slept, downstream calls under their edge
//! policies, the fault timeline, and clients whose intents run under their
//! policy through `retrysim-policy`'s call machine over real connections.
//!
//! What it measures goes into the simulator's own counters
//! ([`crate::metrics::RunCollector`]) under the same definitions, so a run
//! ends in the same [`RunResult`] a simulated run does and every output of
//! `run` (summary.json, the table, timeseries.csv) can be written from it.
//!
//! Time: everything inside runs in *model time*: `--time-scale F` makes
//! every wait F times longer in real time and divides every measured real
//! time by F, so rates are divided by F and the results read in the
//! experiment's own units.

mod broker;
pub mod calibrate;
mod caller;
mod clock;
pub mod envoy;
mod load;
mod record;
mod server;
mod support;
mod timer;

pub mod compare;

pub use support::unsupported;

use crate::config::Scenario;
use crate::metrics::RunResult;
use clock::Clock;
use record::Recorder;
use std::sync::Arc;
use std::time::Duration;

/// How an emulation runs.
#[derive(Debug, Clone)]
pub struct EmulateOptions {
    /// Real seconds per model second (`--time-scale`).
    pub time_scale: f64,
    /// With `--proxy envoy`, the Envoy binary: the clients' requests go
    /// through it and their retries happen there.
    pub envoy: Option<std::path::PathBuf>,
}

impl Default for EmulateOptions {
    fn default() -> Self {
        EmulateOptions { time_scale: 1.0, envoy: None }
    }
}

/// One emulated run and how well its load generator kept to its schedule.
#[derive(Debug, Clone)]
pub struct Emulated {
    pub result: RunResult,
    /// The 99th percentile of how late the generator sent an intent after
    /// its scheduled time (real seconds).
    pub late_p99_s: f64,
    /// Intents that arrived and requests served, for the progress line.
    pub intents: u64,
    /// The 99th percentile of how late the runtime ran a task whose sleep
    /// had ended (real seconds): when the machine cannot keep up, servers
    /// and clients act late, and the run says less about the model.
    pub runtime_late_p99_s: f64,
}

/// The generator counts as overloaded when its p99 lateness exceeds this
/// (real seconds): its results are marked, never silently compared.
pub const LATE_LIMIT_S: f64 = 0.001;

impl Emulated {
    /// Whether the load generator fell behind its schedule.
    pub fn generator_overloaded(&self) -> bool {
        self.late_p99_s > LATE_LIMIT_S
    }

    /// Whether the runtime fell behind (tasks ran late after their sleeps).
    pub fn runtime_overloaded(&self) -> bool {
        self.runtime_late_p99_s > RUNTIME_LATE_LIMIT_S
    }
}

/// The runtime counts as overloaded when a task woken from a sleep runs
/// later than this at p99 (real seconds).
pub const RUNTIME_LATE_LIMIT_S: f64 = 0.002;

/// How late (real seconds) a task sleeping 1 ms at a time runs after each
/// wake-up, until aborted: the lag every server and client task sees.
async fn probe(rec: Arc<Recorder>, lags: Arc<std::sync::Mutex<Vec<f64>>>) {
    loop {
        let at = std::time::Instant::now() + Duration::from_millis(1);
        rec.timer.sleep_until(at).await;
        let lag = std::time::Instant::now().saturating_duration_since(at).as_secs_f64();
        lags.lock().unwrap_or_else(|e| e.into_inner()).push(lag);
    }
}

/// Resolves when Ctrl-C or SIGTERM asks the run to stop.
async fn interrupted() {
    while !crate::interrupt::requested() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs replication `replication` of `s` for real. The scenario must have
/// passed [`unsupported`].
pub fn emulate(s: &Scenario, replication: u32, options: &EmulateOptions) -> anyhow::Result<Emulated> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let s = Arc::new(s.clone());
    let envoy = options.envoy.clone();
    let out = runtime.block_on(async move {
        let clock = Clock::start(options.time_scale);
        let rec = Arc::new(Recorder::new(&s, clock.clone()));
        let mut hosts = server::start_all(&s, &rec, replication).await?;
        // With --proxy envoy, one Envoy per client class in front of its target's hosts.
        let mut proxies = Vec::new();
        if let Some(bin) = envoy {
            for (c, spec) in s.clients.iter().enumerate() {
                let (bin, s2, up) = (bin.clone(), s.clone(), hosts.addrs[spec.target].clone());
                let base_id = 7000 + (std::process::id() % 500) * 8 + c as u32;
                let started = tokio::task::spawn_blocking(move || envoy::start(&bin, &s2, c, &up, base_id)).await??;
                proxies.push(started);
            }
        }
        let via = proxies.iter().map(|p| p.addr).collect();
        // Model time 0 is when the load begins, not when the servers and proxies started.
        clock.restart();
        let world = Arc::new(caller::Net::new(s.clone(), rec.clone(), hosts.addrs.clone(), replication, via));
        hosts.connect(world.clone());
        let sweeps = tokio::spawn(world.clone().sweep());
        let deliveries: Vec<_> = (0..s.queues.len())
            .map(|q| tokio::spawn(world.clone().deliver(q, hosts.gauge(s.queues[q].consumer))))
            .collect();
        let lags = Arc::new(std::sync::Mutex::new(Vec::new()));
        let prober = tokio::spawn(probe(rec.clone(), lags.clone()));
        let late = tokio::select! {
            late = load::generate(world.clone()) => late,
            _ = interrupted() => return Err(crate::interrupt::Interrupted.into()),
        };
        // Arrivals are over: wait for every intent to end, at most the drain limit.
        let limit = clock.real(s.drain_limit.min(crate::engine::NEVER / 4));
        tokio::select! {
            _ = tokio::time::timeout(limit.max(Duration::from_millis(1)), rec.all_ended()) => {}
            _ = interrupted() => return Err(crate::interrupt::Interrupted.into()),
        }
        // Intents whose effects a reconciler still has to repair, an outbox
        // relay still has to send or a queue still holds stay open (as in
        // the model) until then or the drain limit.
        let stop_at = s.duration.saturating_add(s.drain_limit.min(crate::engine::NEVER / 4));
        let settling = || {
            let g = rec.lock();
            g.unresolved_left() + g.relays_left() > 0
        };
        // And, as in the model, the requests still in the servers (work
        // their callers abandoned, and the downstream calls it makes) run
        // to their end.
        while (settling() || world.broker.held() > 0 || !hosts.idle()) && clock.now() < stop_at {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(10)) => {}
                _ = interrupted() => return Err(crate::interrupt::Interrupted.into()),
            }
        }
        let end = clock.now().max(s.duration);
        hosts.stop();
        sweeps.abort();
        for d in deliveries {
            d.abort();
        }
        world.queues_until(end);
        prober.abort();
        let mut lags = std::mem::take(&mut *lags.lock().unwrap_or_else(|e| e.into_inner()));
        lags.sort_by(f64::total_cmp);
        let lag = lags.get(((lags.len() as f64 * 0.99).ceil() as usize).saturating_sub(1)).copied().unwrap_or(0.0);
        rec.lock().m.stuck_placeholders = hosts.stuck();
        let left = rec.lock().unresolved_left();
        rec.lock().m.inside().unresolved_at_end += hosts.late(&s, end) + left;
        let intents = rec.intents();
        drop(proxies);
        anyhow::Ok((rec.finish(&s, end), late, intents, lag))
    })?;
    // Tasks still running (answers lost on purpose, abandoned work) end with the runtime.
    runtime.shutdown_timeout(Duration::from_millis(200));
    let (result, late, intents, lag) = out;
    Ok(Emulated { result, late_p99_s: late, intents, runtime_late_p99_s: lag })
}
