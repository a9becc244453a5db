//! Where an event's counts go: the measurement window is resolved once,
//! when an intent arrives, into a [`Tally`]; every count for that intent
//! (its requests, its work, its effects, its end) goes to the [`Counters`]
//! of its side of the window and its client class. The summary reads the
//! inside; the outside (warm-up, and intents that arrive after the end of
//! the arrivals) is counted the same way and dropped, so the simulation
//! never asks whether something counts.

use super::class::ClassCounters;
use crate::config::Scenario;
use crate::policy::DenyReason;
use std::collections::BTreeMap;

/// Which counters an intent's events go to: its side of the measurement
/// window and its client class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    side: u8,
    client: u32,
}

impl Tally {
    /// Counts that reach no summary (for an intent already gone).
    pub const NOWHERE: Tally = Tally { side: 0, client: 0 };

    /// The tally of an intent of client class `client`, inside the
    /// measurement window or not.
    pub const fn new(inside: bool, client: u32) -> Tally {
        Tally { side: inside as u8, client }
    }

    /// Whether its counts reach the summary.
    pub const fn inside(self) -> bool {
        self.side == INSIDE as u8
    }

    /// Its client class.
    pub const fn client(self) -> usize {
        self.client as usize
    }

    /// Its side of the window (an index of [`super::RunCollector`]'s sides).
    pub(super) const fn side(self) -> usize {
        self.side as usize
    }
}

/// What an intent left behind, counted when it settles ([`Counters::settle`]).
#[derive(Debug, Clone, Copy)]
pub struct Settled<'a> {
    /// Commits per side-effect kind.
    pub effects: &'a [u16],
    /// Whether its client got `ok`.
    pub ok: bool,
    /// After-commit calls and relays that failed.
    pub lost: u64,
    /// Outbox events written.
    pub events_sent: u64,
    /// (client class, intent number), for a witness.
    pub owner: (u32, u64),
}

/// The index of the counters the summary reads.
pub(super) const INSIDE: usize = 1;

/// The counts of one side of the measurement window.
#[derive(Debug, Clone)]
pub struct Counters {
    /// Per client class.
    pub classes: Vec<ClassCounters>,
    pub edge_attempts: Vec<u64>,
    /// Per metrics slot (services, then the hosts of services with
    /// replicas, see [`super::run::host_slots`]): own service time, and of
    /// it the work for attempts already abandoned (ns).
    pub service_work_ns: Vec<f64>,
    pub service_wasted_ns: Vec<f64>,
    /// Idempotency ledgers: answers replayed, 409s, 422s, placeholders
    /// recovered.
    pub ledger_replays: u64,
    pub ledger_conflicts: u64,
    pub ledger_rejects: u64,
    pub ledger_recoveries: u64,
    /// One intent (client class, number) per kind of violation, for counterexamples.
    pub witnesses: BTreeMap<String, (u32, u64)>,
    /// Per side-effect kind: commits, intents with more than one, and the extra ones.
    pub effects: Vec<u64>,
    pub effect_duplicates: Vec<u64>,
    pub effect_extra: Vec<u64>,
    /// How failed intents ended: `<last outcome> (<reason>)` → count.
    pub failures: BTreeMap<String, u64>,
    /// Retries refused, per reason.
    pub denials: BTreeMap<DenyReason, u64>,
    /// Per host of a service with replicas (in host slot order): requests
    /// that reached it, attempts sent to it, and `ok` answers its callers got.
    pub host_arrivals: Vec<u64>,
    pub host_sent: Vec<u64>,
    pub host_ok: Vec<u64>,
    /// Per service: cache lookups and hits of its calls' caches.
    pub cache_lookups: Vec<u64>,
    pub cache_hits: Vec<u64>,
    /// Per service: hosts ejected by outlier detection.
    pub ejections: Vec<u64>,
    /// Per service: hosts that crashed when their queue passed `memory_limit`.
    pub memory_crashes: Vec<u64>,
    /// Reconcilers: unknown effects resolved (of them, rolled back by a
    /// compensation), the time from an intent's end to the repair of its
    /// last unknown effect, and unknown effects never resolved before the
    /// run ended.
    pub reconciled: u64,
    pub compensated: u64,
    pub time_to_consistency: super::LatencyHistogram,
    pub unresolved_at_end: u64,
    /// Per message queue: messages published, deliveries, messages
    /// acknowledged, sent to the dead-letter queue and dropped by
    /// retention, those of them delivered more than once, and the age of
    /// the acknowledged ones (publish to acknowledgement).
    pub queue_published: Vec<u64>,
    pub queue_deliveries: Vec<u64>,
    pub queue_acked: Vec<u64>,
    pub queue_dead_letters: Vec<u64>,
    pub queue_dropped: Vec<u64>,
    pub queue_redelivered: Vec<u64>,
    pub queue_age: Vec<super::LatencyHistogram>,
}

impl Counters {
    /// Empty counts for `s`, with `hosts` host slots.
    pub(super) fn new(s: &Scenario, hosts: usize) -> Counters {
        let services = s.services.len();
        let slots = services + hosts;
        let kinds = s.effect_kinds.len();
        Counters {
            classes: vec![ClassCounters::new(services); s.clients.len()],
            edge_attempts: vec![0; s.edges.len()],
            service_work_ns: vec![0.0; slots],
            service_wasted_ns: vec![0.0; slots],
            ledger_replays: 0,
            ledger_conflicts: 0,
            ledger_rejects: 0,
            ledger_recoveries: 0,
            witnesses: BTreeMap::new(),
            effects: vec![0; kinds],
            effect_duplicates: vec![0; kinds],
            effect_extra: vec![0; kinds],
            failures: BTreeMap::new(),
            denials: BTreeMap::new(),
            host_arrivals: vec![0; hosts],
            host_sent: vec![0; hosts],
            host_ok: vec![0; hosts],
            cache_lookups: vec![0; services],
            cache_hits: vec![0; services],
            ejections: vec![0; services],
            memory_crashes: vec![0; services],
            reconciled: 0,
            compensated: 0,
            time_to_consistency: Default::default(),
            unresolved_at_end: 0,
            queue_published: vec![0; s.queues.len()],
            queue_deliveries: vec![0; s.queues.len()],
            queue_acked: vec![0; s.queues.len()],
            queue_dead_letters: vec![0; s.queues.len()],
            queue_dropped: vec![0; s.queues.len()],
            queue_redelivered: vec![0; s.queues.len()],
            queue_age: vec![Default::default(); s.queues.len()],
        }
    }

    /// Remembers `intent` as the first example of a violation `kind`.
    pub fn witness(&mut self, kind: &str, intent: (u32, u64)) {
        if !self.witnesses.contains_key(kind) {
            self.witnesses.insert(kind.to_string(), intent);
        }
    }

    /// Counts an intent of class `client` once all of its requests have
    /// left: its side effects, duplicates, orphans and lost effects.
    pub fn settle(&mut self, client: usize, it: Settled) {
        let class = &mut self.classes[client];
        class.lost_effects += it.lost;
        class.events_sent += it.events_sent;
        let mut duplicated = false;
        let mut commits = 0u64;
        for (k, &n) in it.effects.iter().enumerate() {
            self.effects[k] += n as u64;
            commits += n as u64;
            if n > 1 {
                duplicated = true;
                self.effect_duplicates[k] += 1;
                self.effect_extra[k] += n as u64 - 1;
            }
        }
        let class = &mut self.classes[client];
        if !it.ok {
            class.orphan_commits += commits;
        }
        if duplicated {
            class.duplicates += 1;
            self.witness("duplicate_intent", it.owner);
        }
    }

    /// Own work of `demand` ns finished at metrics slot `k`, for an attempt
    /// its caller had `abandoned` or not.
    #[inline]
    pub fn work(&mut self, k: usize, demand: f64, abandoned: bool) {
        self.service_work_ns[k] += demand;
        if abandoned {
            self.service_wasted_ns[k] += demand;
        }
    }
}
