//! Building a world from a scenario: client, service, host and edge
//! states, the first arrivals and the scheduled fault events.

use super::*;

impl<'s> World<'s> {
    /// A world at time 0 with the first arrivals scheduled.
    pub fn new(s: &'s Scenario, replication: u32, options: RunOptions) -> Self {
        crate::progress::run_started(progress_units(s, s.duration));
        let rng = KeyedRandom::for_replication(s.seed, replication as u64);
        let clients = s
            .clients
            .iter()
            .enumerate()
            .map(|(c, spec)| {
                let closed = matches!(spec.mode, crate::config::ClientMode::Closed { .. });
                ClientState {
                    arrivals: rng.stream(&[purpose::ARRIVAL, c as u64]),
                    next_seq: 0,
                    guards: Instances::new(spec),
                    rounds: if closed { vec![0; spec.count as usize] } else { Vec::new() },
                }
            })
            .collect();
        let mut hosts = Vec::new();
        let mut next_slot = s.services.len() as u32;
        let services = s
            .services
            .iter()
            .enumerate()
            .map(|(si, spec)| {
                let phase =
                    |w: When| spec.calls.iter().enumerate().filter(|(_, c)| c.when == w).map(|(i, _)| i).collect();
                let replicas = spec.hosts.replicas;
                // A memory ledger lives in each host's process; a durable one is shared.
                let per_host_ledger = spec.ledger.is_some_and(|l| !l.durable) && replicas > 1;
                let ledgers = match spec.ledger {
                    None => Vec::new(),
                    Some(l) => (0..if per_host_ledger { replicas } else { 1 })
                        .map(|_| LedgerState { ledger: Ledger::new(l), waiters: HashMap::new() })
                        .collect(),
                };
                let first_host = hosts.len() as u32;
                let default_rtt = spec.service_time.mean_secs() * 1e9;
                for replica in 0..replicas {
                    let slot = (replicas > 1).then(|| {
                        next_slot += 1;
                        next_slot - 1
                    });
                    hosts.push(HostState {
                        service: si as u32,
                        replica,
                        slot,
                        busy: 0,
                        queue: VecDeque::new(),
                        last_empty: 0,
                        bucket: spec.rate_limit.map(|r| TokenBucket::new(&r)).unwrap_or_default(),
                        last_change: 0,
                        ledger: if per_host_ledger { replica } else { 0 },
                        down_until: 0,
                        epoch: 0,
                        limiter: spec.hosts.concurrency_limit.map(Limiter::new),
                        admitted: 0,
                        speed: 1.0,
                        filling: false,
                    });
                }
                let caches = spec
                    .calls
                    .iter()
                    .enumerate()
                    .map(|(ci, c)| c.cache.map(|spec| Cache::warm(spec, &rng, &[si as u64, ci as u64])))
                    .collect();
                ServiceState {
                    versions: vec![0; spec.occ_rows.unwrap_or(0) as usize],
                    plan: Plan {
                        before: phase(When::BeforeCommit),
                        after: phase(When::AfterCommit),
                        outbox: phase(When::Outbox),
                    },
                    ledgers,
                    first_host,
                    picker: HostPicker::new(replicas, default_rtt),
                    sheds: spec.hosts.sheds(),
                    caches,
                    unresolved: Default::default(),
                    repairing: HashMap::new(),
                }
            })
            .collect();
        let mut next_slot = 0u8;
        let edges = s
            .edges
            .iter()
            .enumerate()
            .map(|(i, e)| (i, e, s.edge_policy(i).hedging.as_ref().map(Hedger::new)))
            .map(|(_, e, hedger)| match e.caller {
                Caller::Client(_) => {
                    EdgeState { budget: None, breaker: None, throttle: None, hedger, dedup_slot: None, via: None }
                }
                Caller::Service { service, index } => {
                    let call = &s.services[service].calls[index];
                    let deduplicates = (call.when == When::Outbox || call.via.is_some()) && call.dedup;
                    let dedup_slot = (deduplicates && next_slot < 32).then(|| {
                        next_slot += 1;
                        next_slot - 1
                    });
                    EdgeState {
                        budget: call.policy.budget.map(|b| Budget::new(b.kind)),
                        breaker: call.policy.breaker.map(Breaker::new),
                        throttle: call.policy.throttle.as_ref().map(Throttle::new),
                        hedger,
                        dedup_slot,
                        via: call.via.map(|q| q as u32),
                    }
                }
            })
            .collect();
        let mut w = World {
            s,
            rng,
            q: EventQueue::new(),
            intents: Slab::default(),
            calls: Slab::default(),
            actions: Vec::new(),
            requests: Slab::default(),
            writes: Slab::default(),
            next_unresolved: 0,
            messages: Slab::default(),
            queues: s.queues.iter().map(|_| messaging::QueueState::default()).collect(),
            consumers: (0..s.services.len())
                .map(|svc| (0..s.queues.len()).filter(|&q| s.queues[q].consumer == svc).collect())
                .collect(),
            services,
            hosts,
            clients,
            edges,
            m: RunCollector::new(s),
            options,
            slowdowns: s.faults.iter().any(|f| matches!(f.kind, FaultKind::Slowdown { .. })),
            brownouts: s.faults.iter().any(|f| matches!(f.kind, FaultKind::Brownout { .. })),
            progress_reported: 0,
            immediate: VecDeque::with_capacity(16),
        };
        for c in 0..s.clients.len() {
            w.schedule_first_arrivals(c);
        }
        for (i, f) in s.faults.iter().enumerate() {
            match f.kind {
                FaultKind::Crash => w.q.schedule_at(f.start, Event::Crash { fault: i as u32 }),
                FaultKind::Brownout { .. } if f.end != NEVER => {
                    w.q.schedule_at(f.end, Event::Capacity { service: f.target as u32 })
                }
                FaultKind::Slowdown { .. } => {
                    w.q.schedule_at(f.start, Event::Speed { fault: i as u32 });
                    if f.end != NEVER {
                        w.q.schedule_at(f.end, Event::Speed { fault: i as u32 });
                    }
                }
                FaultKind::CacheFlush => w.q.schedule_at(f.start, Event::Flush { fault: i as u32 }),
                _ => {}
            }
        }
        for (si, spec) in s.services.iter().enumerate() {
            if let Some(o) = spec.hosts.outlier {
                w.q.schedule_at(o.interval, Event::Sweep { service: si as u32 });
            }
            for (ri, r) in spec.reconcilers.iter().enumerate() {
                w.q.schedule_at(r.every, Event::Reconcile { service: si as u32, reconciler: ri as u32 });
            }
        }
        w
    }
}
