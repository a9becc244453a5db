//! What an emulated run measures, into the simulator's own counters: each
//! intent's tally (its side of the measurement window), its attempts and
//! end on the client side, and on the server side arrivals, queue and busy
//! workers over time, work and wasted work, and commits.
//!
//! The registry of intents and attempts plays the part of trace context: a
//! server learns an attempt's intent from its `x-retrysim-intent` header
//! and, when its work ends, whether its caller had already stopped waiting
//! (the work was wasted), as a tracing backend would tell afterwards.

use super::clock::Clock;
use crate::config::Scenario;
use crate::config::validate::MAX_EFFECT_KINDS;
use crate::engine::{NEVER, Nanos};
use crate::metrics::{RunCollector, RunResult, Settled, Tally};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// One intent as the run knows it.
struct IntentRec {
    tally: Tally,
    client: u32,
    seq: u64,
    arrived: Nanos,
    ended: bool,
    ok: bool,
    effects: [u16; MAX_EFFECT_KINDS],
    lost: u64,
    /// When its client had the result.
    ended_at: Nanos,
    /// Its effects left unknown that a reconciler has yet to repair.
    unresolved: u32,
    /// Outbox events its commits wrote.
    events_sent: u64,
}

/// A downstream effect left unknown (an `after_commit` call that failed),
/// for the calling service's reconcilers.
#[derive(Debug, Clone, Copy)]
pub struct Unresolved {
    pub intent: u64,
    pub edge: usize,
    pub operation: usize,
    pub body: super::caller::Body,
}

/// The counters and the registry, behind one lock.
pub struct Inner {
    pub m: RunCollector,
    intents: HashMap<u64, IntentRec>,
    /// Attempt id → whether its caller stopped waiting for it.
    abandoned: HashMap<u64, bool>,
    next_intent: u64,
    next_attempt: u64,
    next_arrival: u64,
    open: u64,
    kinds: usize,
    /// Per service, effects left unknown waiting for a reconciler, oldest
    /// first by (when it failed, number); and how many are being repaired.
    unresolved: std::collections::BTreeMap<(usize, Nanos, u64), Unresolved>,
    next_unresolved: u64,
    repairing: u64,
    /// (service, intent) of every request that passed its commit there: the
    /// business records (carrying the intent's key) a status query looks up.
    committed: std::collections::HashSet<(usize, u64)>,
    /// (intent, edge) of every event a deduplicating consumer has applied.
    applied: std::collections::HashSet<(u64, usize)>,
    /// Outbox relays still running.
    relays: u64,
}

/// The run's measurements.
pub struct Recorder {
    inner: Mutex<Inner>,
    ended: tokio::sync::Notify,
    pub clock: Clock,
    /// Sleeps that end on time.
    pub timer: super::timer::Timer,
}

impl Recorder {
    /// Empty measurements for `s`.
    pub fn new(s: &Scenario, clock: Clock) -> Recorder {
        Recorder {
            inner: Mutex::new(Inner {
                m: RunCollector::new(s),
                intents: HashMap::new(),
                abandoned: HashMap::new(),
                next_intent: 0,
                next_attempt: 0,
                next_arrival: 0,
                open: 0,
                kinds: s.effect_kinds.len(),
                committed: std::collections::HashSet::new(),
                applied: std::collections::HashSet::new(),
                relays: 0,
                unresolved: std::collections::BTreeMap::new(),
                next_unresolved: 0,
                repairing: 0,
            }),
            ended: tokio::sync::Notify::new(),
            clock,
            timer: super::timer::Timer::start(),
        }
    }

    /// The counters and the registry.
    pub fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleeps `n` model nanoseconds.
    pub async fn sleep(&self, n: Nanos) {
        self.timer.sleep(self.clock.real(n)).await;
    }

    /// Sleeps until model time `t`; returns how late it woke (real seconds).
    pub async fn sleep_until(&self, t: Nanos) -> f64 {
        let at = self.clock.real_at(t).into_std();
        self.timer.sleep_until(at).await;
        std::time::Instant::now().saturating_duration_since(at).as_secs_f64()
    }

    /// An intent of class `client` (its number `seq`) arrives now: its id
    /// and when it arrived.
    pub fn intent_arrives(&self, client: usize, seq: u64) -> (u64, Nanos) {
        let now = self.clock.now();
        let mut g = self.lock();
        let tally = g.m.tally(now, client as u32);
        g.m.class(tally).intents += 1;
        g.m.series.record_arrival(now, client);
        let id = g.next_intent;
        g.next_intent += 1;
        g.open += 1;
        let rec = IntentRec {
            tally,
            client: client as u32,
            seq,
            arrived: now,
            ended: false,
            ok: false,
            effects: [0; MAX_EFFECT_KINDS],
            lost: 0,
            ended_at: NEVER,
            unresolved: 0,
            events_sent: 0,
        };
        g.intents.insert(id, rec);
        (id, now)
    }

    /// The intent has ended as its client sees it: `ok`, or failed with `failure`.
    pub fn intent_ends(&self, id: u64, ok: bool, failure: String, deadline: Nanos) {
        let now = self.clock.now();
        let mut g = self.lock();
        let Some(it) = g.intents.get_mut(&id) else { return };
        it.ended = true;
        it.ok = ok;
        it.ended_at = now;
        let (tally, arrived, owner) = (it.tally, it.arrived, (it.client, it.seq));
        g.m.intent_ended(tally, owner, now, now.saturating_sub(arrived), ok, failure, deadline);
        g.open -= 1;
        if g.open == 0 {
            self.ended.notify_waiters();
        }
    }

    /// Intents that arrived so far.
    pub fn intents(&self) -> u64 {
        self.lock().next_intent
    }

    /// Waits until every intent that arrived has ended.
    pub async fn all_ended(&self) {
        loop {
            let wait = self.ended.notified();
            if self.lock().open == 0 {
                return;
            }
            wait.await;
        }
    }

    /// A new attempt id.
    pub fn attempt(&self) -> u64 {
        let mut g = self.lock();
        let id = g.next_attempt;
        g.next_attempt += 1;
        g.abandoned.insert(id, false);
        id
    }

    /// A new number for a request arriving at a server.
    pub fn arrival(&self) -> u64 {
        let mut g = self.lock();
        g.next_arrival += 1;
        g.next_arrival
    }

    /// Its caller stopped waiting for attempt `id`.
    pub fn abandon(&self, id: u64) {
        if let Some(a) = self.lock().abandoned.get_mut(&id) {
            *a = true;
        }
    }

    /// Ends the run at model time `end`: intents still open end as
    /// unfinished, every intent's effects are counted, and the counters
    /// become the run's result.
    pub fn finish(&self, s: &Scenario, end: Nanos) -> RunResult {
        let mut g = self.lock();
        g.m.series.extend_to(end);
        let open: Vec<u64> = g.intents.iter().filter(|(_, it)| !it.ended).map(|(&id, _)| id).collect();
        drop(g);
        for id in open {
            self.intent_ends(id, false, "unfinished (drain limit)".into(), crate::engine::NEVER);
        }
        let mut g = self.lock();
        let kinds = g.kinds;
        let mut ids: Vec<u64> = g.intents.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let it = g.intents.remove(&id).expect("listed");
            let settled = Settled {
                effects: &it.effects[..kinds],
                ok: it.ok,
                lost: it.lost,
                events_sent: it.events_sent,
                owner: (it.client, it.seq),
            };
            g.m.counts(it.tally).settle(it.tally.client(), settled);
        }
        let m = std::mem::replace(&mut g.m, RunCollector::new(s));
        m.finish(s, end, 0)
    }
}

impl Inner {
    /// Where intent `id`'s counts go ([`Tally::NOWHERE`] if unknown).
    pub fn tally(&self, id: u64) -> Tally {
        self.intents.get(&id).map_or(Tally::NOWHERE, |it| it.tally)
    }

    /// Intent `id` as (client class, number), for a ledger record's owner.
    pub fn owner(&self, id: u64) -> (u32, u64) {
        self.intents.get(&id).map_or((0, 0), |it| (it.client, it.seq))
    }

    /// Whether the caller of attempt `id` stopped waiting for it.
    pub fn abandoned(&self, id: u64) -> bool {
        self.abandoned.get(&id).copied().unwrap_or(false)
    }

    /// Intent `id` committed a side effect of kind `kind`.
    pub fn commit(&mut self, id: u64, kind: usize) {
        if let Some(it) = self.intents.get_mut(&id) {
            it.effects[kind] = it.effects[kind].saturating_add(1);
        }
    }

    /// An effect of service `svc` failed at `now` and is left to its
    /// reconcilers.
    pub fn unresolved(&mut self, svc: usize, now: Nanos, what: Unresolved) {
        if let Some(it) = self.intents.get_mut(&what.intent) {
            it.unresolved += 1;
        }
        let n = self.next_unresolved;
        self.next_unresolved += 1;
        self.unresolved.insert((svc, now, n), what);
    }

    /// Up to `max` effects of service `svc` that failed at `before` or
    /// earlier, oldest first, taken for repair (with their stamps).
    pub fn take_unresolved(&mut self, svc: usize, before: Nanos, max: usize) -> Vec<((usize, Nanos, u64), Unresolved)> {
        let keys: Vec<(usize, Nanos, u64)> =
            self.unresolved.range((svc, 0, 0)..=(svc, before, u64::MAX)).map(|(k, _)| *k).take(max).collect();
        self.repairing += keys.len() as u64;
        keys.into_iter().map(|k| (k, self.unresolved.remove(&k).expect("present"))).collect()
    }

    /// A repair (a `compensation`) ended: resolved at `now` (no longer a
    /// lost effect; the intent's time to consistency when it was its last),
    /// or back in the pool under its stamp.
    pub fn repaired(
        &mut self,
        stamp: (usize, Nanos, u64),
        what: Unresolved,
        resolved: bool,
        compensation: bool,
        now: Nanos,
    ) {
        self.repairing -= 1;
        if !resolved {
            self.unresolved.insert(stamp, what);
            return;
        }
        let Some(it) = self.intents.get_mut(&what.intent) else { return };
        it.lost = it.lost.saturating_sub(1);
        it.unresolved -= 1;
        let (tally, last, ended_at) = (it.tally, it.unresolved == 0, it.ended.then_some(it.ended_at));
        let counts = self.m.counts(tally);
        counts.reconciled += 1;
        counts.compensated += compensation as u64;
        if last && let Some(ended) = ended_at {
            counts.time_to_consistency.record(now.saturating_sub(ended));
        }
    }

    /// Effects still waiting for or under repair.
    pub fn unresolved_left(&self) -> u64 {
        self.unresolved.len() as u64 + self.repairing
    }

    /// A request of intent `intent` passed its commit at service `svc`.
    pub fn committed_at(&mut self, svc: usize, intent: u64) {
        self.committed.insert((svc, intent));
    }

    /// Undoes what intent `intent` committed at service `svc`: its business
    /// records there go, and its effects of `kind` (the service's) with them.
    pub fn undo(&mut self, svc: usize, intent: u64, kind: Option<usize>) {
        self.committed.remove(&(svc, intent));
        if let (Some(k), Some(it)) = (kind, self.intents.get_mut(&intent)) {
            it.effects[k] = 0;
        }
    }

    /// Whether a request of intent `intent` passed its commit at service
    /// `svc` (what a status query finds).
    pub fn has_committed(&self, svc: usize, intent: u64) -> bool {
        self.committed.contains(&(svc, intent))
    }

    /// A deduplicating consumer applies the event of intent `intent` on
    /// `edge`: whether it is the first time.
    pub fn apply(&mut self, intent: u64, edge: usize) -> bool {
        self.applied.insert((intent, edge))
    }

    /// A commit of intent `id` wrote an outbox event; its relay starts.
    pub fn relay_started(&mut self, id: u64) {
        if let Some(it) = self.intents.get_mut(&id) {
            it.events_sent += 1;
        }
        self.relays += 1;
    }

    /// An outbox relay ended.
    pub fn relay_done(&mut self) {
        self.relays -= 1;
    }

    /// Outbox relays still running.
    pub fn relays_left(&self) -> u64 {
        self.relays
    }

    /// An after-commit call of intent `id` failed: its effect is lost.
    pub fn lose(&mut self, id: u64) {
        if let Some(it) = self.intents.get_mut(&id) {
            it.lost += 1;
        }
    }
}
